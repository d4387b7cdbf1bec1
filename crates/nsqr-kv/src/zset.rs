//! A sorted set's value: members, each with a score, ordered by (score, member).
//!
//! Two structures, as Redis keeps a dict beside its skiplist:
//! - `scores`, an insertion-ordered map from member to score: ZSCORE in constant time, and,
//!   as for hashes and sets, random picks (ZRANDMEMBER) and ZSCAN's cursor by position;
//! - `order`, an order-statistic B-tree of (score, member) (the `indexset` crate: sorted nodes
//!   of up to [`ORDER_NODE`] elements indexed by a Fenwick tree), so ZRANK, ranges by rank and
//!   the position of a score or a lexicographic bound all cost O(log n), not a walk.
//!
//! The map keeps a short member in place ([`Member`]: up to [`INLINE_MEMBER`] bytes inside its
//! slot, no heap block); the order keeps every member boxed, so its elements stay 24 bytes
//! and an insertion moves no more of a node than it must
//! (docs/decisions/0026-sorted-set-members-in-place.md).
//!
//! A score is never NaN (the commands refuse one) and `-0` is stored as `0`, so the order is
//! the IEEE total order and two equal scores always fall back to the members' bytes.
//!
//! `OBJECT ENCODING` names what Redis 7.0 would use: a `listpack` up to 128 members of at most
//! 64 bytes, then a `skiplist`, never back.

use std::cmp::Ordering;
use std::ops::Range;

use indexmap::IndexMap;
use indexset::BTreeSet;
use smallvec::SmallVec;

use crate::collection::{Collection, KeyType, Typed};
use crate::entry::cost_of;

type Build = foldhash::fast::RandomState;

/// Redis's `zset-max-listpack-entries` and `zset-max-listpack-value`.
const ZSET_SMALL_ENTRIES: usize = 128;
const ZSET_SMALL_VALUE: usize = 64;
/// Members of up to this many bytes are kept in place, longer ones in a heap block.
pub const INLINE_MEMBER: usize = 16;
/// A member as the map keeps it: in place up to [`INLINE_MEMBER`] bytes (24 bytes in all,
/// where a boxed slice's 16 plus its heap block's header and rounding would be more).
type Member = SmallVec<[u8; INLINE_MEMBER]>;
/// A member's fixed cost: its slot in the map (hash, member, score; index and control byte)
/// and in the tree (score and boxed member).
const ZSET_SLOT: usize = 8 + 24 + 8 + 10 + 24;
/// Elements per node of the order. An insertion or a removal moves the elements after it in
/// its node (a ZPOPMIN the whole node), so smaller nodes move less; a split rebuilds the
/// index over every node, so smaller nodes split more often. The crate's default is 1,024;
/// docs/decisions/0023-keyspace-collection-writes.md has what each size gave.
const ORDER_NODE: usize = 128;

/// A member taken out of a sorted set, with its score.
pub type Popped = (Box<[u8]>, f64);

/// One element of the order.
#[derive(Debug, Clone)]
struct Ranked {
    score: f64,
    member: Box<[u8]>,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Ranked) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| self.member.cmp(&other.member))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Ranked) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Ranked) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ranked {}

/// A sorted set.
#[derive(Debug, Clone)]
pub struct ZSet {
    /// Member to score (the score's little-endian bytes, which the log records as they are).
    scores: IndexMap<Member, [u8; 8], Build>,
    order: BTreeSet<Ranked>,
    bytes: usize,
    big: bool,
}

impl Default for ZSet {
    fn default() -> ZSet {
        ZSet {
            scores: IndexMap::default(),
            order: BTreeSet::with_maximum_node_size(ORDER_NODE),
            bytes: 0,
            big: false,
        }
    }
}

impl PartialEq for ZSet {
    fn eq(&self, other: &ZSet) -> bool {
        self.scores == other.scores
    }
}

impl Eq for ZSet {}

impl From<ZSet> for Collection {
    fn from(z: ZSet) -> Collection {
        Collection::Zset(Box::new(z))
    }
}

impl Typed for ZSet {
    const KIND: KeyType = KeyType::Zset;
    fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }
    fn state(&self, member: &[u8]) -> Option<&[u8]> {
        self.scores.get(member).map(|s| &s[..])
    }
    fn of(c: &Collection) -> Option<&ZSet> {
        match c {
            Collection::Zset(z) => Some(z),
            _ => None,
        }
    }
    fn of_mut(c: &mut Collection) -> Option<&mut ZSet> {
        match c {
            Collection::Zset(z) => Some(z),
            _ => None,
        }
    }
}

/// `-0` as `0` (Redis replies `0` for both).
fn norm(score: f64) -> f64 {
    score + 0.0
}

fn member_cost(m: &[u8]) -> usize {
    if m.len() <= INLINE_MEMBER {
        ZSET_SLOT + cost_of(m.len())
    } else {
        ZSET_SLOT + 2 * cost_of(m.len())
    }
}

/// One end of a range by score (`(1.5` is exclusive).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreBound {
    pub value: f64,
    pub exclusive: bool,
}

/// One end of a range by member (`-`, `+`, `[m`, `(m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexBound<'a> {
    Min,
    Max,
    Incl(&'a [u8]),
    Excl(&'a [u8]),
}

impl ZSet {
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// Whether Redis would still keep this sorted set as a listpack.
    pub fn is_compact(&self) -> bool {
        !self.big
    }

    /// Bytes the sorted set costs (estimated).
    pub fn cost(&self) -> usize {
        self.bytes
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).map(|s| f64::from_le_bytes(*s))
    }

    /// Sets a member's score (never NaN); the score it had, if it was there.
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        let score = norm(score);
        self.big |= member.len() > ZSET_SMALL_VALUE;
        if let Some(slot) = self.scores.get_mut(member) {
            let old = f64::from_le_bytes(*slot);
            if old != score {
                *slot = score.to_le_bytes();
                let probe = Ranked {
                    score: old,
                    member: member.into(),
                };
                if let Some(mut r) = self.order.take(&probe) {
                    r.score = score;
                    self.order.insert(r);
                }
            }
            return Some(old);
        }
        self.scores
            .insert(Member::from_slice(member), score.to_le_bytes());
        self.order.insert(Ranked {
            score,
            member: member.into(),
        });
        self.bytes += member_cost(member);
        self.big |= self.scores.len() > ZSET_SMALL_ENTRIES;
        None
    }

    /// Removes a member; its score, if it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let s = self.scores.swap_remove(member)?;
        let score = f64::from_le_bytes(s);
        self.order.remove(&Ranked {
            score,
            member: member.into(),
        });
        self.bytes -= member_cost(member);
        Some(score)
    }

    /// The member's rank, lowest score first.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        Some(self.order.rank(&Ranked {
            score,
            member: member.into(),
        }))
    }

    /// The member and score at rank `i`, lowest score first.
    pub fn at_rank(&self, i: usize) -> Option<(&[u8], f64)> {
        self.order.get_index(i).map(|r| (&*r.member, r.score))
    }

    /// The members of ranks `ranks`, lowest score first (reverse the iterator for the others).
    pub fn by_rank(
        &self,
        ranks: Range<usize>,
    ) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        let ranks = ranks.start.min(self.len())..ranks.end.min(self.len());
        self.order.range_idx(ranks).map(|r| (&*r.member, r.score))
    }

    /// Every member, lowest score first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        self.by_rank(0..self.len())
    }

    /// The member and score at position `i` of the map (0 ≤ i < len): for random picks and
    /// scans.
    pub fn at(&self, i: usize) -> Option<(&[u8], f64)> {
        self.scores
            .get_index(i)
            .map(|(m, s)| (&**m, f64::from_le_bytes(*s)))
    }

    /// Removes the member of lowest score (or highest, `max`).
    pub fn pop(&mut self, max: bool) -> Option<Popped> {
        let r = if max {
            self.order.pop_last()
        } else {
            self.order.pop_first()
        }?;
        self.scores.swap_remove(&r.member[..]);
        self.bytes -= member_cost(&r.member);
        Some((r.member, r.score))
    }

    /// The first rank whose element is not `before` (a predicate true for a prefix of the
    /// order): a binary search over ranks.
    fn first_rank(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.order.get_index(mid) {
                Some(r) if before(r.score, &r.member) => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    }

    /// The ranks of the members whose score is within `min` and `max`.
    pub fn score_ranks(&self, min: ScoreBound, max: ScoreBound) -> Range<usize> {
        let start = self.first_rank(|s, _| {
            if min.exclusive {
                s <= min.value
            } else {
                s < min.value
            }
        });
        let end = self.first_rank(|s, _| {
            if max.exclusive {
                s < max.value
            } else {
                s <= max.value
            }
        });
        start..end.max(start)
    }

    /// The ranks of the members between `min` and `max` by their bytes (meaningful when every
    /// score is the same, as Redis documents).
    pub fn lex_ranks(&self, min: LexBound<'_>, max: LexBound<'_>) -> Range<usize> {
        let past = |bound: LexBound<'_>, upper: bool, m: &[u8]| match bound {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Incl(b) if upper => m <= b,
            LexBound::Incl(b) => m < b,
            LexBound::Excl(b) if upper => m < b,
            LexBound::Excl(b) => m <= b,
        };
        let start = self.first_rank(|_, m| past(min, false, m));
        let end = self.first_rank(|_, m| past(max, true, m));
        start..end.max(start)
    }
}

/// The ranks `start..=stop` of a sorted set of `len` members, negative ones counting from the
/// end, clamped as ZRANGE clamps them; `None` when the range is empty.
pub fn index_ranks(len: usize, start: i64, stop: i64) -> Option<Range<usize>> {
    let len = len as i64;
    let start = if start < 0 {
        len.saturating_add(start).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        len.saturating_add(stop)
    } else {
        stop.min(len - 1)
    };
    (start <= stop && start < len).then(|| start as usize..stop as usize + 1)
}

/// A score as Redis 7.0 writes it (`%.17g`, `inf`, `-inf`; a zero is `0`).
pub fn format_score(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    resp_wire::format_double(v)
}

/// A score as ZADD, ZINCRBY and WEIGHTS read it (Redis's `getDoubleFromObject`): the whole
/// argument as C's `strtod` reads it, with no leading space, never NaN, and neither an
/// overflow (`1e400`) nor an underflow to zero (`1e-400`).
pub fn parse_score(s: &[u8]) -> Option<f64> {
    if s.first().is_none_or(u8::is_ascii_whitespace) {
        return None;
    }
    match strtod(s)? {
        (_, true) => None,
        (v, false) => Some(v),
    }
}

/// A bound of a score range as Redis reads it (`zslParseRange`: `strtod` alone): leading
/// spaces are skipped, an empty argument is 0, an overflow is infinite; never NaN.
pub fn parse_score_bound(s: &[u8]) -> Option<f64> {
    if s.is_empty() {
        return Some(0.0);
    }
    strtod(s).map(|(v, _)| v)
}

/// The value of the whole of `s` as C's `strtod` reads it (leading spaces skipped, decimal or
/// hexadecimal, `inf` / `infinity` in any case), and whether it over- or underflowed to 0;
/// `None` for NaN, nothing to read, or anything left over.
fn strtod(s: &[u8]) -> Option<(f64, bool)> {
    let s = std::str::from_utf8(s).ok()?;
    let s = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let hex = matches!(body.get(..2), Some("0x" | "0X"));
    let numeric = hex || body.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    let v = if hex {
        hex_float(&body[2..])?
    } else if numeric {
        body.parse().ok()?
    } else if ["inf", "infinity"]
        .iter()
        .any(|w| body.eq_ignore_ascii_case(w))
    {
        f64::INFINITY
    } else {
        return None;
    };
    let mantissa = if hex {
        body[2..].split(['p', 'P']).next()
    } else {
        body.split(['e', 'E']).next()
    };
    let nonzero = mantissa.is_some_and(|m| m.bytes().any(|c| c.is_ascii_hexdigit() && c != b'0'));
    let range = (v.is_infinite() && numeric) || (v == 0.0 && nonzero);
    Some((if negative { -v } else { v }, range))
}

/// `1f.8p3` (after `0x`): hexadecimal digits, an optional fraction, an optional binary
/// exponent.
fn hex_float(s: &str) -> Option<f64> {
    let (mantissa, exp) = match s.find(['p', 'P']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    Some(v * 2f64.powi(exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zset(items: &[(&str, f64)]) -> ZSet {
        let mut z = ZSet::default();
        for (m, s) in items {
            z.insert(m.as_bytes(), *s);
        }
        z
    }

    fn members<'a>(it: impl Iterator<Item = (&'a [u8], f64)>) -> Vec<String> {
        it.map(|(m, _)| String::from_utf8_lossy(m).into_owned())
            .collect()
    }

    #[test]
    fn scores_format_as_redis() {
        // `%.17g` (resp-wire's format_double, tested there), but a zero is never `-0`.
        assert_eq!(format_score(0.1), "0.10000000000000001");
        assert_eq!(format_score(-0.0), "0");
        assert_eq!(format_score(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn scores_read_as_redis() {
        for (text, want) in [
            ("1.5", Some(1.5)),
            ("+5", Some(5.0)),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            ("-inf", Some(f64::NEG_INFINITY)),
            ("+Infinity", Some(f64::INFINITY)),
            ("0x10", Some(16.0)),
            ("-0x1.8p1", Some(-3.0)),
            ("1e-310", Some(1e-310)),
            ("0e5", Some(0.0)),
            ("1e400", None),
            ("1e-400", None),
            ("nan", None),
            ("", None),
            (" 1", None),
            ("1 ", None),
            ("1_0", None),
            ("0x", None),
            ("-", None),
        ] {
            assert_eq!(parse_score(text.as_bytes()), want, "{text:?}");
        }
        // A range bound is read by strtod alone.
        assert_eq!(parse_score_bound(b""), Some(0.0));
        assert_eq!(parse_score_bound(b" 2"), Some(2.0));
        assert_eq!(parse_score_bound(b"1e400"), Some(f64::INFINITY));
        assert_eq!(parse_score_bound(b" "), None);
        assert_eq!(parse_score_bound(b"-nan"), None);
    }

    #[test]
    fn order_ranks_and_updates() {
        let mut z = zset(&[("b", 2.0), ("a", 2.0), ("c", 1.0), ("d", f64::INFINITY)]);
        assert_eq!(z.len(), 4);
        let all: Vec<String> = z
            .iter()
            .map(|(m, _)| String::from_utf8_lossy(m).into())
            .collect();
        assert_eq!(all, ["c", "a", "b", "d"]);
        assert_eq!(
            (z.rank(b"c"), z.rank(b"b"), z.rank(b"zz")),
            (Some(0), Some(2), None)
        );
        assert_eq!(z.insert(b"c", 3.0), Some(1.0));
        assert_eq!(z.rank(b"c"), Some(2));
        assert_eq!(z.at_rank(0), Some((&b"a"[..], 2.0)));
        assert_eq!(z.remove(b"a"), Some(2.0));
        assert_eq!(z.remove(b"a"), None);
        assert_eq!(z.pop(true), Some((Box::from(&b"d"[..]), f64::INFINITY)));
        assert_eq!(z.pop(false), Some((Box::from(&b"b"[..]), 2.0)));
        assert_eq!(z.pop(false).map(|p| p.1), Some(3.0));
        assert!(z.is_empty() && z.pop(false).is_none());
        assert_eq!(z.bytes, 0);
        z.insert(b"neg", -0.0);
        assert_eq!(z.score(b"neg").map(f64::to_bits), Some(0.0f64.to_bits()));
    }

    #[test]
    fn ranges_by_score_and_lex() {
        let z = zset(&[("a", 1.0), ("b", 2.0), ("c", 2.0), ("d", 3.0)]);
        let b = |value, exclusive| ScoreBound { value, exclusive };
        assert_eq!(z.score_ranks(b(2.0, false), b(2.0, false)), 1..3);
        assert_eq!(z.score_ranks(b(1.0, true), b(3.0, true)), 1..3);
        assert_eq!(
            z.score_ranks(b(f64::NEG_INFINITY, false), b(f64::INFINITY, false)),
            0..4
        );
        assert_eq!(z.score_ranks(b(3.0, false), b(1.0, false)), 3..3);
        let same = zset(&[("a", 0.0), ("b", 0.0), ("c", 0.0), ("d", 0.0)]);
        let got = |min, max| members(same.by_rank(same.lex_ranks(min, max)));
        assert_eq!(got(LexBound::Min, LexBound::Max), ["a", "b", "c", "d"]);
        assert_eq!(got(LexBound::Excl(b"a"), LexBound::Incl(b"c")), ["b", "c"]);
        assert_eq!(got(LexBound::Incl(b"b"), LexBound::Excl(b"d")), ["b", "c"]);
        assert!(got(LexBound::Max, LexBound::Min).is_empty());
        assert_eq!(members(same.by_rank(1..3).rev()), ["c", "b"]);
    }

    #[test]
    fn index_ranks_clamp() {
        assert_eq!(index_ranks(5, 0, -1), Some(0..5));
        assert_eq!(index_ranks(5, -2, 100), Some(3..5));
        assert_eq!(index_ranks(5, 3, 1), None);
        assert_eq!(index_ranks(5, i64::MIN, i64::MAX), Some(0..5));
        assert_eq!(index_ranks(0, 0, -1), None);
    }

    #[test]
    fn short_members_in_place_long_ones_on_the_heap() {
        assert_eq!(std::mem::size_of::<Member>(), 24);
        let short = [b's'; INLINE_MEMBER];
        let long = [b'l'; INLINE_MEMBER + 1];
        let mut z = zset(&[]);
        z.insert(&short, 2.0);
        z.insert(&long, 1.0);
        let heap = cost_of(short.len()) + 2 * cost_of(long.len());
        assert_eq!(z.bytes, 2 * ZSET_SLOT + heap);
        assert!(!z
            .scores
            .keys()
            .any(|m| m.len() == short.len() && m.spilled()));
        assert!(z
            .scores
            .keys()
            .any(|m| m.len() == long.len() && m.spilled()));
        assert_eq!(z.score(&short), Some(2.0));
        assert_eq!(z.rank(&long), Some(0));
        assert_eq!(z.pop(true), Some((Box::from(&short[..]), 2.0)));
        assert_eq!(z.remove(&long), Some(1.0));
        assert_eq!(z.bytes, 0);
    }

    #[test]
    fn encoding_grows_once() {
        let mut z = zset(&[("a", 1.0)]);
        assert_eq!(Collection::from(z.clone()).encoding(), "listpack");
        z.insert(&[b'x'; 65], 1.0);
        z.remove(&[b'x'; 65]);
        assert_eq!(Collection::from(z).encoding(), "skiplist");
        let mut n = ZSet::default();
        for i in 0..=ZSET_SMALL_ENTRIES {
            n.insert(i.to_string().as_bytes(), i as f64);
        }
        assert_eq!(Collection::from(n).encoding(), "skiplist");
    }
}
