//! The entry point for the `hll_value` fuzz target (`fuzz/`): arbitrary bytes as the value of
//! an HLL key (a client can SET any bytes, then run PF commands on them), and what must hold
//! whatever they are: no panic and no read out of bounds; a value whose registers count also
//! turns dense, with the same count; adding elements keeps a value an HLL, within the size a
//! sparse or dense one may have; merging twice gives the same registers.
//!
//! ```text
//! fuzz_target!(|data: &[u8]| nsqr_kv::hll_fuzz::check(data));
//! ```

use crate::hll::{self, DENSE_SIZE, REGISTERS};

/// The value built from the input: a header of the encoding the first byte picks (its top bit
/// set: the cached count is stale), then the rest of the input as registers; a dense one
/// padded or cut to its exact length.
fn value_of(data: &[u8]) -> Vec<u8> {
    let mode = data.first().copied().unwrap_or(0);
    let body = data.get(1..).unwrap_or_default();
    let mut v = b"HYLL".to_vec();
    v.push(mode & 1);
    v.extend_from_slice(&[0; 11]);
    if mode & 0x80 != 0 {
        hll::invalidate(&mut v);
    }
    v.extend_from_slice(body);
    if mode & 1 == 0 {
        v.resize(DENSE_SIZE, 0);
    }
    v
}

/// The fuzz target's body.
pub fn check(data: &[u8]) {
    let v = value_of(data);
    assert!(hll::is_hll(&v));
    let counted = hll::count(&v);
    let mut max = Box::new([0; REGISTERS]);
    let merged = hll::merge_into(&mut max, &v);
    if let Ok(card) = counted {
        assert!(merged.is_ok());
        let mut dense = v.clone();
        assert_eq!(hll::to_dense(&mut dense), Ok(()));
        assert_eq!(hll::count(&dense), Ok(card));
        let mut again = Box::new([0; REGISTERS]);
        assert_eq!(hll::merge_into(&mut again, &dense), Ok(()));
        assert_eq!(max, again);
    }
    let mut added = v.clone();
    let mut ok = true;
    for e in data.chunks(3).take(64) {
        ok &= hll::add(&mut added, e).is_ok();
    }
    assert!(hll::is_hll(&added));
    assert!(added.len() <= (v.len() + 3 * 64).max(DENSE_SIZE));
    if ok && counted.is_ok() {
        assert!(hll::count(&added).is_ok());
    }
    if merged.is_ok() {
        let mut target = hll::new_sparse();
        assert_eq!(hll::set_registers(&mut target, &max), Ok(()));
        let mut back = Box::new([0; REGISTERS]);
        assert_eq!(hll::merge_into(&mut back, &target), Ok(()));
        assert_eq!(max, back);
        assert!(target.len() <= DENSE_SIZE.max(hll::SPARSE_MAX_BYTES));
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_bytes_are_safe(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            super::check(&data);
        }

        #[test]
        fn sparse_runs_are_safe(ops in proptest::collection::vec(any::<u8>(), 0..40), mode in 0u8..2) {
            let mut data = vec![0x81 | mode];
            data.extend(ops);
            super::check(&data);
        }
    }
}
