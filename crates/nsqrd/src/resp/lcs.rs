//! LCS: the longest common subsequence of two strings (Redis 7.0's dynamic programming
//! table, walked back from the end), as the string itself, its length (`LEN`), or the
//! matching ranges (`IDX`, with `MINMATCHLEN` and `WITHMATCHLEN`). The table is refused,
//! as in Redis, when it would take more than `proto-max-bulk-len` bytes.

use resp_wire::Args;

use super::args::{self, is, SYNTAX};
use super::session::Ctx;

/// What the command answers.
#[derive(Debug, Default)]
struct Options {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match_len: u64,
}

fn options(ctx: &mut Ctx<'_>, a: &Args<'_>) -> Option<Options> {
    let mut o = Options::default();
    let mut j = 3;
    while j < a.len() {
        let opt = a.get(j);
        if is(opt, "idx") {
            o.idx = true;
        } else if is(opt, "len") {
            o.len = true;
        } else if is(opt, "withmatchlen") {
            o.with_match_len = true;
        } else if is(opt, "minmatchlen") && j + 1 < a.len() {
            o.min_match_len = args::int(ctx, a.get(j + 1))?.max(0) as u64;
            j += 1;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
        j += 1;
    }
    if o.idx && o.len {
        ctx.out
            .error("ERR If you want both the length and indexes, please just use IDX.");
        return None;
    }
    Some(o)
}

/// One matching range: (start, end) in each string, inclusive.
type Range = ((usize, usize), (usize, usize));

/// The subsequence, and the matching ranges from the end of the strings to their start.
fn lcs(a: &[u8], b: &[u8], table: &[u32]) -> (Vec<u8>, Vec<Range>) {
    let w = b.len() + 1;
    let at = |i: usize, j: usize| table[i * w + j];
    let mut result = Vec::with_capacity(at(a.len(), b.len()) as usize);
    let mut ranges = Vec::new();
    let mut current: Option<Range> = None;
    let (mut i, mut j) = (a.len(), b.len());
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result.push(a[i - 1]);
            match &mut current {
                None => current = Some(((i - 1, i - 1), (j - 1, j - 1))),
                Some(r) if r.0 .0 == i && r.1 .0 == j => {
                    r.0 .0 -= 1;
                    r.1 .0 -= 1;
                }
                Some(_) => emit = true,
            }
            if current.is_some_and(|r| r.0 .0 == 0 || r.1 .0 == 0) {
                emit = true;
            }
            i -= 1;
            j -= 1;
        } else {
            if at(i - 1, j) > at(i, j - 1) {
                i -= 1;
            } else {
                j -= 1;
            }
            emit = current.is_some();
        }
        if emit {
            ranges.extend(current.take());
        }
    }
    result.reverse();
    (result, ranges)
}

/// The table of LCS lengths of every pair of prefixes, row by row.
fn table(a: &[u8], b: &[u8]) -> Vec<u32> {
    let w = b.len() + 1;
    let mut t = vec![0u32; (a.len() + 1) * w];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            t[i * w + j] = if a[i - 1] == b[j - 1] {
                t[(i - 1) * w + j - 1] + 1
            } else {
                t[(i - 1) * w + j].max(t[i * w + j - 1])
            };
        }
    }
    t
}

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN].
pub fn lcs_command(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let mut values: Vec<Option<Vec<u8>>> = Vec::with_capacity(2);
    let mut wrong = false;
    ctx.shared
        .ks
        .mget_typed(&[a.get(1), a.get(2)], |v| match v {
            Ok(v) => values.push(v.map(<[u8]>::to_vec)),
            Err(_) => wrong = true,
        });
    if wrong {
        return ctx
            .out
            .error("ERR The specified keys must contain string values");
    }
    let Some(o) = options(ctx, a) else {
        return;
    };
    let mut values = values.into_iter().map(Option::unwrap_or_default);
    let (x, y) = (
        values.next().unwrap_or_default(),
        values.next().unwrap_or_default(),
    );
    let cells = (x.len() as u64 + 1) * (y.len() as u64 + 1);
    if cells.saturating_mul(4) > ctx.shared.max_bulk {
        return ctx
            .out
            .error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    }
    let t = table(&x, &y);
    let (common, ranges) = lcs(&x, &y, &t);
    if o.len {
        return ctx.out.integer(common.len() as i64);
    }
    if !o.idx {
        return ctx.out.bulk(&common);
    }
    let kept: Vec<&Range> = ranges
        .iter()
        .filter(|r| o.min_match_len == 0 || (r.0 .1 - r.0 .0 + 1) as u64 >= o.min_match_len)
        .collect();
    ctx.out.map(2);
    ctx.out.bulk(b"matches");
    ctx.out.array(kept.len());
    for ((a0, a1), (b0, b1)) in kept {
        ctx.out.array(2 + usize::from(o.with_match_len));
        ctx.out.array(2);
        ctx.out.integer(*a0 as i64);
        ctx.out.integer(*a1 as i64);
        ctx.out.array(2);
        ctx.out.integer(*b0 as i64);
        ctx.out.integer(*b1 as i64);
        if o.with_match_len {
            ctx.out.integer((a1 - a0 + 1) as i64);
        }
    }
    ctx.out.bulk(b"len");
    ctx.out.integer(common.len() as i64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsequence_and_ranges_as_redis() {
        let (a, b) = (b"ohmytext", b"mynewtext");
        let (common, ranges) = lcs(a, b, &table(a, b));
        assert_eq!(common, b"mytext");
        assert_eq!(ranges, vec![((4, 7), (5, 8)), ((2, 3), (0, 1))]);
        let (common, ranges) = lcs(a, a, &table(a, a));
        assert_eq!(common, a.to_vec());
        assert_eq!(ranges, vec![((0, 7), (0, 7))]);
        let (common, ranges) = lcs(b"", a, &table(b"", a));
        assert!(common.is_empty() && ranges.is_empty());
    }
}
