//! SORT and SORT_RO, as Redis 7.0 runs them: the elements of a list or a set (whatever type
//! `nsqr_kv::Keyspace::sort_source` accepts), weighted by themselves or by other keys (`BY`
//! with a `*` pattern, `->field` for a hash field; a pattern without `*` does not sort),
//! numerically or by bytes (`ALPHA`), cut by `LIMIT`, each replaced by `GET` lookups (`#`: the
//! element itself), answered or stored as a list (`STORE`).
//!
//! A SORT that reads other keys or stores runs alone (`Ctx::run_alone`): no other command
//! changes a key between the lookups. Byte order stands for Redis's `strcoll`, which is the
//! same in the C locale (see `docs/compatibility.md`).

use std::cmp::Ordering;

use resp_wire::Args;

use super::args::{self, checked, is, SYNTAX};
use super::session::{Busy, Ctx, BUSY};

const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";

/// SORT's options, as read from its arguments.
#[derive(Debug, Default)]
struct Options<'a> {
    desc: bool,
    alpha: bool,
    limit: Option<(i64, i64)>,
    store: Option<&'a [u8]>,
    by: Option<&'a [u8]>,
    gets: Vec<&'a [u8]>,
}

impl Options<'_> {
    /// `BY` a pattern without `*`: the elements keep their order.
    fn dont_sort(&self) -> bool {
        self.by.is_some_and(|p| !p.contains(&b'*'))
    }

    /// Whether other keys are read or written (then the command runs alone).
    fn touches_other_keys(&self) -> bool {
        self.store.is_some() || (self.by.is_some() && !self.dont_sort()) || !self.gets.is_empty()
    }
}

/// Reads the options after the key; `None` once the error is the reply.
fn options<'a>(ctx: &mut Ctx<'_>, a: &'a Args<'_>, readonly: bool) -> Option<Options<'a>> {
    let mut o = Options::default();
    let mut j = 2;
    while j < a.len() {
        let arg = a.get(j);
        let left = a.len() - j - 1;
        if is(arg, "asc") {
            o.desc = false;
        } else if is(arg, "desc") {
            o.desc = true;
        } else if is(arg, "alpha") {
            o.alpha = true;
        } else if is(arg, "limit") && left >= 2 {
            let start = args::int(ctx, a.get(j + 1))?;
            let count = args::int(ctx, a.get(j + 2))?;
            o.limit = Some((start, count));
            j += 2;
        } else if !readonly && is(arg, "store") && left >= 1 {
            o.store = Some(a.get(j + 1));
            j += 1;
        } else if is(arg, "by") && left >= 1 {
            o.by = Some(a.get(j + 1));
            j += 1;
        } else if is(arg, "get") && left >= 1 {
            o.gets.push(a.get(j + 1));
            j += 1;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
        j += 1;
    }
    Some(o)
}

pub fn sort(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    run(ctx, a, false);
}

pub fn sort_ro(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    run(ctx, a, true);
}

fn run(ctx: &mut Ctx<'_>, a: &Args<'_>, readonly: bool) {
    let Some(o) = options(ctx, a, readonly) else {
        return;
    };
    if !o.touches_other_keys() {
        return sort_key(ctx, a.get(1), &o);
    }
    if let Err(Busy) = ctx.run_alone(|ctx| sort_key(ctx, a.get(1), &o)) {
        ctx.out.error(BUSY);
    }
}

/// The first and last index LIMIT leaves of `len` elements (Redis's clamping); empty when
/// the first is past the last.
fn window(limit: Option<(i64, i64)>, len: usize) -> std::ops::Range<usize> {
    let len = len as i64;
    let (start, count) = limit.unwrap_or((0, -1));
    let mut start = start.clamp(0, len);
    let count = count.clamp(-1, len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    end = end.min(len - 1);
    if end < start {
        return 0..0;
    }
    start as usize..end as usize + 1
}

/// The value a pattern names for `element`: `#` is the element; otherwise the first `*` is
/// replaced by it, and a `->field` after the `*` reads that hash field. A missing key, a key
/// of another type, or a pattern without `*`: `None`.
fn lookup(ctx: &Ctx<'_>, pattern: &[u8], element: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(element.to_vec());
    }
    let star = pattern.iter().position(|&b| b == b'*')?;
    let rest = &pattern[star + 1..];
    let arrow = rest
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&i| i + 2 < rest.len());
    let postfix = arrow.map_or(rest, |i| &rest[..i]);
    let mut key = Vec::with_capacity(star + element.len() + postfix.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(element);
    key.extend_from_slice(postfix);
    // The pattern's keys are not in the request's key specs: named for the database here.
    let key = nsqr_kv::db::internal(ctx.s.db, &key);
    let ks = &ctx.shared.ks;
    match arrow {
        Some(i) => {
            let field = &rest[i + 2..];
            ks.read_hash(&key, |h| h.and_then(|h| h.get(field)).map(<[u8]>::to_vec))
                .ok()
                .flatten()
        }
        None => ks.get(&key, |v| v.map(<[u8]>::to_vec)).ok().flatten(),
    }
}

/// A number as Redis's `strtod` reads a sort weight: leading spaces skipped, nothing after,
/// no NaN, no overflow; an empty string is 0.
fn weight(v: &[u8]) -> Option<f64> {
    if v.is_empty() {
        return Some(0.0);
    }
    let text = std::str::from_utf8(v).ok()?;
    let text = text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let n: f64 = text.parse().ok()?;
    let lower = text.to_ascii_lowercase();
    let overflow = n.is_infinite() && !lower.contains("inf");
    let mantissa = lower.split('e').next().unwrap_or_default();
    let underflow = n == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    (!n.is_nan() && !overflow && !underflow).then_some(n)
}

/// How the elements are ordered.
#[derive(Debug, Clone, Copy)]
struct Order<'a> {
    by: Option<&'a [u8]>,
    alpha: bool,
    desc: bool,
}

/// One element and what it sorts by.
struct Item {
    element: Vec<u8>,
    score: f64,
    by: Option<Vec<u8>>,
}

fn compare(x: &Item, y: &Item, o: Order<'_>) -> Ordering {
    let cmp = if !o.alpha {
        x.score
            .partial_cmp(&y.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| x.element.cmp(&y.element))
    } else if o.by.is_some() {
        // A missing weight sorts first.
        x.by.cmp(&y.by)
    } else {
        x.element.cmp(&y.element)
    };
    if o.desc {
        cmp.reverse()
    } else {
        cmp
    }
}

/// Weighs and orders `elements`; `None` if a weight is not a number (numeric sort).
fn order(ctx: &Ctx<'_>, elements: Vec<Vec<u8>>, o: Order<'_>) -> Option<Vec<Vec<u8>>> {
    let mut items = Vec::with_capacity(elements.len());
    let mut bad = false;
    for element in elements {
        let by = o.by.and_then(|p| lookup(ctx, p, &element));
        let mut score = 0.0;
        if !o.alpha {
            let source = if o.by.is_some() {
                by.as_deref()
            } else {
                Some(element.as_slice())
            };
            if let Some(v) = source {
                match weight(v) {
                    Some(s) => score = s,
                    None => bad = true,
                }
            }
        }
        items.push(Item { element, score, by });
    }
    if bad {
        return None;
    }
    items.sort_by(|x, y| compare(x, y, o));
    Some(items.into_iter().map(|i| i.element).collect())
}

/// Sorts the key and answers (or stores).
fn sort_key(ctx: &mut Ctx<'_>, key: &[u8], o: &Options<'_>) {
    let source = ctx.shared.ks.sort_source(key);
    let Some(source) = checked(ctx.out, source) else {
        return;
    };
    let (elements, unordered) = source.map_or((Vec::new(), false), |s| (s.elements, s.unordered));
    let mut how = Order {
        by: o.by,
        alpha: o.alpha,
        desc: o.desc,
    };
    let mut keep_order = o.dont_sort();
    if keep_order && unordered && o.store.is_some() {
        // A set stored with BY nosort is sorted by its elements' bytes (a stable result).
        keep_order = false;
        how.alpha = true;
        how.by = None;
    }
    let range = window(o.limit, elements.len());
    let elements = if keep_order {
        let mut elements = elements;
        if o.desc && !unordered {
            // A list's own order, from its tail.
            elements.reverse();
        }
        elements
    } else {
        match order(ctx, elements, how) {
            Some(e) => e,
            None => return ctx.out.error(NOT_DOUBLE),
        }
    };
    let mut rows: Vec<Option<Vec<u8>>> = Vec::new();
    for element in &elements[range] {
        if o.gets.is_empty() {
            rows.push(Some(element.clone()));
        }
        for pattern in &o.gets {
            rows.push(lookup(ctx, pattern, element));
        }
    }
    match o.store {
        None => {
            ctx.out.array(rows.len());
            for row in &rows {
                match row {
                    Some(v) => ctx.out.bulk(v),
                    None => ctx.out.null(),
                }
            }
        }
        Some(dest) => {
            let items = rows.into_iter().map(Option::unwrap_or_default).collect();
            // STORE's key is not in the key specs either (Redis marks it unknown).
            let dest = nsqr_kv::db::internal(ctx.s.db, dest);
            let n = ctx.shared.ks.store_list(&dest, items, &mut ctx.s.pending);
            ctx.out.integer(n as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_clamps_as_redis() {
        assert_eq!(window(None, 5), 0..5);
        assert_eq!(window(Some((1, 2)), 5), 1..3);
        assert_eq!(window(Some((-3, 2)), 5), 0..2);
        assert_eq!(window(Some((3, -1)), 5), 3..5);
        assert_eq!(window(Some((4, 100)), 5), 4..5);
        assert_eq!(window(Some((5, 1)), 5), 0..0);
        assert_eq!(window(Some((i64::MAX, i64::MAX)), 5), 0..0);
        assert_eq!(window(Some((0, 0)), 5), 0..0);
        assert_eq!(window(None, 0), 0..0);
    }

    #[test]
    fn weights_as_strtod() {
        assert_eq!(weight(b"1.5"), Some(1.5));
        assert_eq!(weight(b"  -2"), Some(-2.0));
        assert_eq!(weight(b""), Some(0.0));
        assert_eq!(weight(b"inf"), Some(f64::INFINITY));
        assert_eq!(weight(b"1e999"), None);
        assert_eq!(weight(b"1e-400"), None);
        assert_eq!(weight(b"0e5"), Some(0.0));
        assert_eq!(weight(b"nan"), None);
        assert_eq!(weight(b"1 "), None);
        assert_eq!(weight(b"a"), None);
    }
}
