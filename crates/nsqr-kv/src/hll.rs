//! HyperLogLog in Redis 7.0's own format, so that an HLL is a plain string value: GET, SET,
//! DUMP, APPEND and TYPE treat it as Redis does, and PFCOUNT gives redis-server's numbers for
//! the same elements. The format is documented in Redis's `hyperloglog.c`:
//!
//! - a 16-byte header: `HYLL`, the encoding (0 dense, 1 sparse), three zero bytes, and the
//!   cached cardinality (8 bytes, little endian; the top bit of the last byte set when stale);
//! - 16384 registers of 6 bits, each the longest run of zeros (plus one) seen in the hashes
//!   (MurmurHash64A, seed `0xadc83b19`) of the elements that address it;
//! - dense: the registers packed from the least significant bit (12288 bytes); sparse: a run
//!   length encoding (ZERO `00xxxxxx`, XZERO `01xxxxxx yyyyyyyy`, VAL `1vvvvvxx`), which a
//!   value above 32 or a length above `hll-sparse-max-bytes` turns dense.
//!
//! Every edit follows Redis's step by step (the same split and merge of opcodes), so the
//! bytes are the same as redis-server's too. Corrupted values (a client may SET any bytes)
//! give [`Corrupt`], never a read out of bounds. Sans-IO; the commands are in `pf.rs`.

/// Header bytes before the registers.
pub const HEADER: usize = 16;
const P: u32 = 14;
/// Hash bits left after the register index.
const Q: usize = 64 - P as usize;
pub const REGISTERS: usize = 1 << P;
const BITS: usize = 6;
const REGISTER_MAX: u32 = (1 << BITS) - 1;
/// A dense HLL's length.
pub const DENSE_SIZE: usize = HEADER + (REGISTERS * BITS).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
/// Redis's `hll-sparse-max-bytes` default: a sparse HLL that would grow past it turns dense.
pub const SPARSE_MAX_BYTES: usize = 3000;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
/// 0.5 / ln(2).
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
const SEED: u64 = 0xadc8_3b19;

/// A value that claims to be an HLL but whose registers cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrupt;

/// MurmurHash2, 64-bit version (MurmurHash64A), reading words little endian as Redis does on
/// every architecture.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut k = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element addresses and the length of the run of zeros (plus one) in the
/// rest of its hash.
fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// A new, empty HLL: sparse, one XZERO opcode covering every register, cached count 0.
pub fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER + 2);
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.extend_from_slice(&[0; 11]);
    push_xzero(&mut v, REGISTERS);
    v
}

/// Whether a string value is an HLL as Redis checks it (magic, encoding, a dense one's length).
pub fn is_hll(v: &[u8]) -> bool {
    v.len() >= HEADER
        && &v[..4] == b"HYLL"
        && v[4] <= SPARSE
        && (v[4] != DENSE || v.len() == DENSE_SIZE)
}

pub fn is_sparse(v: &[u8]) -> bool {
    v[4] == SPARSE
}

/// The cached cardinality, if it is valid.
pub fn cached(v: &[u8]) -> Option<u64> {
    let mut card = [0; 8];
    card.copy_from_slice(&v[8..HEADER]);
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

pub fn set_cached(v: &mut [u8], card: u64) {
    v[8..HEADER].copy_from_slice(&card.to_le_bytes());
}

pub fn invalidate(v: &mut [u8]) {
    v[HEADER - 1] |= 0x80;
}

/// One sparse opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opcode {
    Zero(usize),
    Xzero(usize),
    Val(u8, usize),
}

impl Opcode {
    /// The opcode at `v[p]` (`p < v.len()`). A truncated XZERO reads a zero second byte, as
    /// Redis reads the string's terminator.
    fn at(v: &[u8], p: usize) -> Opcode {
        let b = v[p];
        if b & 0xc0 == 0 {
            Opcode::Zero(usize::from(b & 0x3f) + 1)
        } else if b & 0x80 == 0 {
            let low = v.get(p + 1).copied().unwrap_or(0);
            Opcode::Xzero(((usize::from(b & 0x3f) << 8) | usize::from(low)) + 1)
        } else {
            Opcode::Val(((b >> 2) & 0x1f) + 1, usize::from(b & 0x3) + 1)
        }
    }

    fn span(self) -> usize {
        match self {
            Opcode::Zero(n) | Opcode::Xzero(n) | Opcode::Val(_, n) => n,
        }
    }

    fn size(self) -> usize {
        if matches!(self, Opcode::Xzero(_)) {
            2
        } else {
            1
        }
    }
}

fn val_byte(value: u8, len: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (len - 1) as u8
}

fn push_xzero(out: &mut Vec<u8>, len: usize) {
    let l = len - 1;
    out.push(0x40 | (l >> 8) as u8);
    out.push((l & 0xff) as u8);
}

/// A run of `len` zero registers as ZERO or XZERO.
fn push_zeros(out: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        push_xzero(out, len);
    } else {
        out.push((len - 1) as u8);
    }
}

/// The opcodes of a sparse HLL with their positions.
fn opcodes(v: &[u8]) -> impl Iterator<Item = (usize, Opcode)> + '_ {
    let mut p = HEADER;
    std::iter::from_fn(move || {
        (p < v.len()).then(|| {
            let op = Opcode::at(v, p);
            let at = p;
            p += op.size();
            (at, op)
        })
    })
}

/// Dense register `i` of `regs` (the bytes after the header).
fn get_dense(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = u32::from(regs[byte]);
    let b1 = u32::from(regs.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & REGISTER_MAX) as u8
}

fn set_dense(regs: &mut [u8], i: usize, value: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = u32::from(value);
    regs[byte] &= !((REGISTER_MAX << fb) as u8);
    regs[byte] |= (v << fb) as u8;
    if let Some(next) = regs.get_mut(byte + 1) {
        *next &= !((REGISTER_MAX >> (8 - fb)) as u8);
        *next |= (v >> (8 - fb)) as u8;
    }
}

/// Raises dense register `i` to `count`; whether it changed.
fn raise_dense(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > get_dense(regs, i) {
        set_dense(regs, i, count);
        true
    } else {
        false
    }
}

/// Adds an element; whether a register changed (the cache is then stale: the caller
/// invalidates it once per command, as Redis does).
pub fn add(v: &mut Vec<u8>, element: &[u8]) -> Result<bool, Corrupt> {
    let (index, count) = pattern(element);
    raise(v, index, count)
}

/// Raises every register to `max`'s (PFMERGE's destination) one at a time, as Redis does, so
/// a sparse value turns dense only when it must.
pub fn set_registers(v: &mut Vec<u8>, max: &[u8; REGISTERS]) -> Result<(), Corrupt> {
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            raise(v, i, m)?;
        }
    }
    Ok(())
}

/// Raises register `index` to `count` in either encoding.
fn raise(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    if is_sparse(v) {
        raise_sparse(v, index, count)
    } else {
        Ok(raise_dense(&mut v[HEADER..], index, count))
    }
}

/// Redis's `hllSparseSet`: finds the opcode covering `index`, rewrites it in place (splitting
/// a run when needed), merges equal neighbouring values; turns the HLL dense when the value
/// does not fit a VAL opcode or the string would outgrow [`SPARSE_MAX_BYTES`].
fn raise_sparse(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    if count > VAL_MAX_VALUE {
        return promote(v, index, count);
    }
    let (mut first, mut prev, mut found) = (0, None, None);
    for (p, op) in opcodes(v) {
        if index < first + op.span() {
            found = Some((p, op));
            break;
        }
        prev = Some(p);
        first += op.span();
    }
    let (p, op) = found.ok_or(Corrupt)?;
    match op {
        Opcode::Val(old, _) if old >= count => return Ok(false),
        Opcode::Val(_, 1) | Opcode::Zero(1) => v[p] = val_byte(count, 1),
        _ => {
            let seq = split(op, index - first, count);
            if seq.len() > op.size() && v.len() + seq.len() - op.size() > SPARSE_MAX_BYTES {
                return promote(v, index, count);
            }
            let end = p + op.size();
            if end <= v.len() {
                v.splice(p..end, seq);
            } else {
                // An XZERO cut short by the value's end: Redis writes the new opcodes over
                // it but grows the value by one byte less than they take.
                v.truncate(p);
                v.extend_from_slice(&seq[..seq.len() - 1]);
            }
        }
    }
    merge_values(v, prev.unwrap_or(HEADER));
    invalidate(v);
    Ok(true)
}

/// The opcodes replacing `op` when the register `at` of its run becomes `count`.
fn split(op: Opcode, at: usize, count: u8) -> Vec<u8> {
    let mut seq = Vec::with_capacity(5);
    let after = op.span() - 1 - at;
    match op {
        Opcode::Val(value, _) => {
            if at > 0 {
                seq.push(val_byte(value, at));
            }
            seq.push(val_byte(count, 1));
            if after > 0 {
                seq.push(val_byte(value, after));
            }
        }
        Opcode::Zero(_) | Opcode::Xzero(_) => {
            if at > 0 {
                push_zeros(&mut seq, at);
            }
            seq.push(val_byte(count, 1));
            if after > 0 {
                push_zeros(&mut seq, after);
            }
        }
    }
    seq
}

/// Merges adjacent VAL opcodes of equal value, looking at up to five opcodes from `p`.
fn merge_values(v: &mut Vec<u8>, mut p: usize) {
    let mut scan = 5;
    while p < v.len() && scan > 0 {
        scan -= 1;
        match Opcode::at(v, p) {
            Opcode::Xzero(_) => p += 2,
            Opcode::Zero(_) => p += 1,
            Opcode::Val(v1, l1) => {
                if let Some(Opcode::Val(v2, l2)) = v.get(p + 1).map(|_| Opcode::at(v, p + 1)) {
                    if v1 == v2 && l1 + l2 <= VAL_MAX_LEN {
                        v[p + 1] = val_byte(v1, l1 + l2);
                        v.remove(p);
                        continue;
                    }
                }
                p += 1;
            }
        }
    }
}

/// Turns a sparse HLL dense, then raises the register there.
fn promote(v: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(v)?;
    raise_dense(&mut v[HEADER..], index, count);
    Ok(true)
}

/// Turns a sparse HLL dense (nothing to do for a dense one); the header is kept.
pub fn to_dense(v: &mut Vec<u8>) -> Result<(), Corrupt> {
    if !is_sparse(v) {
        return Ok(());
    }
    let mut dense = vec![0; DENSE_SIZE];
    dense[..HEADER].copy_from_slice(&v[..HEADER]);
    dense[4] = DENSE;
    let mut idx = 0;
    for (_, op) in opcodes(v) {
        if let Opcode::Val(value, n) = op {
            if idx + n > REGISTERS {
                break;
            }
            for i in idx..idx + n {
                set_dense(&mut dense[HEADER..], i, value);
            }
        }
        idx += op.span();
    }
    if idx != REGISTERS {
        return Err(Corrupt);
    }
    *v = dense;
    Ok(())
}

/// Raises each of `max`'s registers to the HLL's (PFCOUNT of several keys, PFMERGE).
pub fn merge_into(max: &mut [u8; REGISTERS], v: &[u8]) -> Result<(), Corrupt> {
    if !is_sparse(v) {
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(get_dense(&v[HEADER..], i));
        }
        return Ok(());
    }
    let mut idx = 0;
    for (_, op) in opcodes(v) {
        if let Opcode::Val(value, n) = op {
            if idx + n > REGISTERS {
                break;
            }
            for m in &mut max[idx..idx + n] {
                *m = (*m).max(value);
            }
        }
        idx += op.span();
    }
    if idx == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// How many registers hold each value.
type Histogram = [f64; 64];

/// The cardinality of an HLL value (its cache is not looked at).
pub fn count(v: &[u8]) -> Result<u64, Corrupt> {
    let mut h = [0.0; 64];
    if is_sparse(v) {
        let mut idx = 0;
        for (_, op) in opcodes(v) {
            let value = match op {
                Opcode::Val(value, _) => usize::from(value),
                _ => 0,
            };
            h[value] += op.span() as f64;
            idx += op.span();
        }
        if idx != REGISTERS {
            return Err(Corrupt);
        }
    } else {
        for i in 0..REGISTERS {
            h[usize::from(get_dense(&v[HEADER..], i))] += 1.0;
        }
    }
    Ok(estimate(&h))
}

/// The cardinality of registers held one per byte (a union being counted).
pub fn count_registers(regs: &[u8; REGISTERS]) -> u64 {
    let mut h = [0.0; 64];
    for &r in regs {
        h[usize::from(r & 63)] += 1.0;
    }
    estimate(&h)
}

/// Otmar Ertl's estimator ("New cardinality estimation algorithms for HyperLogLog
/// sketches"), as Redis computes it.
fn estimate(h: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - h[Q + 1]) / m);
    for j in (1..=Q).rev() {
        z += h[j];
        z *= 0.5;
    }
    z += m * sigma(h[0] / m);
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if z == before {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if z == before {
            return z / 3.0;
        }
    }
}

/// Every register of an HLL (PFDEBUG GETREG), the value turned dense first as Redis does.
pub fn registers(v: &mut Vec<u8>) -> Result<Vec<u8>, Corrupt> {
    to_dense(v)?;
    Ok((0..REGISTERS).map(|i| get_dense(&v[HEADER..], i)).collect())
}

/// A sparse HLL's opcodes as PFDEBUG DECODE writes them (`z:3 Z:1000 v:2,1`).
pub fn decode(v: &[u8]) -> String {
    let parts: Vec<String> = opcodes(v)
        .map(|(_, op)| match op {
            Opcode::Zero(n) => format!("z:{n}"),
            Opcode::Xzero(n) => format!("Z:{n}"),
            Opcode::Val(value, n) => format!("v:{value},{n}"),
        })
        .collect();
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(n: usize, prefix: &str) -> Vec<u8> {
        let mut v = new_sparse();
        for i in 0..n {
            add(&mut v, format!("{prefix}{i}").as_bytes()).unwrap();
        }
        v
    }

    #[test]
    fn murmur_matches_redis() {
        // Redis 7.0's MurmurHash64A with its seed, lengths 0 to 26 (every tail length).
        for (data, hash) in [
            (&b""[..], 0xd8df_ea65_85bc_9732),
            (b"a", 0x53d2_470a_9b43_b1a7),
            (b"ab", 0x0eae_d676_4371_42cf),
            (b"abc", 0x77ec_90ae_b374_e502),
            (b"abcdefg", 0x22fe_613b_b08c_9602),
            (b"abcdefgh", 0xf3a6_5df5_5991_4567),
            (b"abcdefghi", 0x834f_ba4d_9152_daf7),
            (b"hello world, this is redis", 0x13ea_3d21_686b_0718),
        ] {
            assert_eq!(murmur64a(data, SEED), hash, "{data:?}");
        }
    }

    #[test]
    fn empty_hll_is_sparse_and_counts_zero() {
        let v = new_sparse();
        assert_eq!(v.len(), HEADER + 2);
        assert!(is_hll(&v) && is_sparse(&v));
        assert_eq!(cached(&v), Some(0));
        assert_eq!(count(&v), Ok(0));
        assert_eq!(decode(&v), "Z:16384");
    }

    #[test]
    fn registers_round_trip_in_dense_bytes() {
        let mut regs = vec![0; DENSE_SIZE - HEADER];
        let values: Vec<u8> = (0..REGISTERS).map(|i| ((i * 7 + 3) % 64) as u8).collect();
        for (i, &r) in values.iter().enumerate() {
            set_dense(&mut regs, i, r);
        }
        for (i, &r) in values.iter().enumerate() {
            assert_eq!(get_dense(&regs, i), r, "register {i}");
        }
    }

    #[test]
    fn sparse_and_dense_agree() {
        for n in [1, 10, 100, 1000, 5000] {
            let sparse = filled(n, "e");
            let mut dense = sparse.clone();
            to_dense(&mut dense).unwrap();
            assert_eq!(dense.len(), DENSE_SIZE);
            assert_eq!(count(&sparse), count(&dense), "{n}");
            let mut max = [0; REGISTERS];
            merge_into(&mut max, &sparse).unwrap();
            assert_eq!(count_registers(&max), count(&dense).unwrap());
            let mut max2 = [0; REGISTERS];
            merge_into(&mut max2, &dense).unwrap();
            assert_eq!(max, max2);
        }
    }

    #[test]
    fn small_sets_stay_sparse_and_large_ones_turn_dense() {
        assert!(is_sparse(&filled(100, "x")));
        let big = filled(10_000, "x");
        assert!(!is_sparse(&big) && big.len() == DENSE_SIZE);
    }

    #[test]
    fn estimates_are_close() {
        for n in [10, 1000, 20_000] {
            let c = count(&filled(n, "k")).unwrap() as f64;
            assert!((c - n as f64).abs() <= n as f64 * 0.05 + 1.0, "{n}: {c}");
        }
    }

    #[test]
    fn adding_twice_changes_nothing() {
        let mut v = filled(50, "a");
        assert_eq!(add(&mut v, b"a7"), Ok(false));
    }

    #[test]
    fn corrupt_values_are_refused() {
        let mut v = new_sparse();
        v.truncate(HEADER + 1); // an XZERO without its second byte: too few registers
        assert_eq!(count(&v), Err(Corrupt));
        let mut w = new_sparse();
        w.push(0x00); // a ZERO past the last register
        assert_eq!(count(&w), Err(Corrupt));
        assert_eq!(merge_into(&mut [0; REGISTERS], &w), Err(Corrupt));
        assert_eq!(to_dense(&mut w.clone()), Err(Corrupt));
        // A VAL past the last register is ignored when merging, as in Redis, not counted.
        let mut x = new_sparse();
        x.push(0x80);
        assert_eq!(count(&x), Err(Corrupt));
        assert_eq!(merge_into(&mut [0; REGISTERS], &x), Ok(()));
        let mut short = new_sparse();
        short.truncate(HEADER);
        assert_eq!(add(&mut short, b"x"), Err(Corrupt));
        assert!(!is_hll(b"HYLL\x00") && !is_hll(&[b'H'; 20]));
        let mut dense = filled(10_000, "d");
        dense.push(0);
        assert!(!is_hll(&dense));
    }
}
