//! Redis's partial quicksort (`pqsort.c`, Bentley & McIlroy's quicksort that only recurses
//! into partitions overlapping the wanted ranks). A geo search with COUNT sorts its points
//! with it, so points at equal distances come out in the order redis-server gives them; any
//! other sort orders ties differently (the algorithm is not stable, and its tie order is the
//! only thing that differs between correct sorts). Positions here are element indices.

use std::cmp::Ordering;

/// The median of three positions.
fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    let lt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Less;
    let gt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Greater;
    if lt(a, b) {
        if lt(b, c) {
            b
        } else if lt(a, c) {
            c
        } else {
            a
        }
    } else if gt(b, c) {
        b
    } else if lt(a, c) {
        a
    } else {
        c
    }
}

/// Swaps `n` elements at `a` with `n` at `b`.
fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// Sorts `v` enough that ranks `lrange..=rrange` hold what a full sort would put there.
pub fn pqsort<T>(v: &mut [T], cmp: impl Fn(&T, &T) -> Ordering, lrange: usize, rrange: usize) {
    sort_part(v, 0, v.len(), &cmp, lrange, rrange);
}

/// Whether ranks `l..=r` overlap positions `a..a + n`.
fn overlaps(l: usize, r: usize, a: usize, n: usize) -> bool {
    let last = a + n - 1;
    !((l < a && r < a) || (l > last && r > last))
}

fn sort_part<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &impl Fn(&T, &T) -> Ordering,
    lrange: usize,
    rrange: usize,
) {
    loop {
        if n < 7 {
            for m in a + 1..a + n {
                let mut l = m;
                while l > a && cmp(&v[l - 1], &v[l]) == Ordering::Greater {
                    v.swap(l, l - 1);
                    l -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let (mut pl, mut pn) = (a, a + n - 1);
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        // `pc` and `pd` may step below `a + 1`: kept one above, as signed positions would.
        let (mut pc, mut pd) = (a + n, a + n);
        loop {
            while pb < pc {
                match cmp(&v[pb], &v[a]) {
                    Ordering::Greater => break,
                    Ordering::Equal => {
                        v.swap(pa, pb);
                        pa += 1;
                    }
                    Ordering::Less => {}
                }
                pb += 1;
            }
            while pb < pc {
                match cmp(&v[pc - 1], &v[a]) {
                    Ordering::Less => break,
                    Ordering::Equal => {
                        v.swap(pc - 1, pd - 1);
                        pd -= 1;
                    }
                    Ordering::Greater => {}
                }
                pc -= 1;
            }
            if pb >= pc {
                break;
            }
            v.swap(pb, pc - 1);
            pb += 1;
            pc -= 1;
        }
        // Back to the C positions: pc and pd point at elements, one below ours.
        let (pc, pd) = (pc - 1, pd - 1);
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let left = pb - pa;
        if left > 1 && overlaps(lrange, rrange, a, left) {
            sort_part(v, a, left, cmp, lrange, rrange);
        }
        let right = pd - pc;
        if right <= 1 {
            return;
        }
        a = pn - right;
        n = right;
        if !overlaps(lrange, rrange, a, n) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_wanted_ranks_are_sorted(mut v in proptest::collection::vec(0u8..20, 0..200), k in 0usize..200) {
            let mut sorted = v.clone();
            sorted.sort_unstable();
            if !v.is_empty() {
                let k = k % v.len();
                pqsort(&mut v, |a, b| a.cmp(b), 0, k);
                prop_assert_eq!(&v[..=k], &sorted[..=k]);
                let last = v.len() - 1;
                pqsort(&mut v, |a, b| a.cmp(b), 0, last);
                prop_assert_eq!(v, sorted);
            }
        }
    }

    #[test]
    fn ties_come_out_as_from_redis_c_code() {
        // (key, tag) pairs compared by key: the whole arrangement after sorting, as a build of
        // Redis 7.0's pqsort.c leaves it for the same input and ranks.
        let sorted = |keys: &[u8], rrange: usize| {
            let mut v: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            pqsort(&mut v, |a, b| a.0.cmp(&b.0), 0, rrange);
            v.into_iter().map(|p| p.1).collect::<Vec<_>>()
        };
        assert_eq!(
            sorted(&[3, 1, 2, 1, 3, 1, 2, 1, 3, 1], 4),
            [9, 1, 3, 5, 7, 8, 6, 2, 0, 4]
        );
        let keys = [
            1, 1, 0, 3, 0, 0, 4, 0, 0, 4, 2, 2, 3, 2, 0, 3, 1, 0, 1, 4, 4, 0, 1, 1, 4, 4, 0, 4, 4,
            4, 3, 0, 4, 1, 4, 0, 1, 1, 1, 4, 2, 1, 3, 0, 0, 0, 3, 2, 1, 1, 2, 3, 0, 2, 0, 3, 3, 3,
            0, 3,
        ];
        assert_eq!(
            sorted(&keys, 9),
            [
                14, 2, 4, 5, 7, 8, 17, 21, 26, 31, 35, 43, 44, 45, 52, 54, 58, 49, 18, 19, 20, 50,
                22, 23, 24, 25, 51, 27, 28, 29, 30, 57, 32, 33, 34, 53, 36, 37, 38, 39, 40, 41, 42,
                59, 1, 55, 3, 56, 46, 6, 47, 48, 9, 10, 11, 12, 13, 0, 15, 16
            ]
        );
    }
}
