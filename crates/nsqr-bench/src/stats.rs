//! The statistics every mode reports, in one place so the same word means the same formula
//! everywhere: the median of repeated runs, the value at a rank, nearest-rank percentiles.
//! Inputs are sorted with `f64::total_cmp`, so a NaN (an event that never came) sorts after
//! every number instead of poisoning the sort.

/// `v` sorted ascending.
pub fn sorted(v: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = v.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The median of `sorted`: the middle value, or the mean of the two middle ones for an even
/// count; 0 when empty.
pub fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The value at index `n / 2` of `sorted`: the median for an odd count, the upper of the two
/// middle values for an even one. Always a value some run measured (a NaN stays a NaN
/// instead of averaging into its neighbour); `None` when empty.
pub fn middle(sorted: &[f64]) -> Option<f64> {
    sorted.get(sorted.len() / 2).copied()
}

/// The nearest-rank index of quantile `q` (0..=1) among `n` values: the smallest index whose
/// value has at least `q * n` values at or below it. `n` must be at least 1.
pub fn rank_index(q: f64, n: usize) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n) - 1
}

/// The nearest-rank quantile `q` of `sorted`, counted as if it held `expected` values (those
/// past its end never came): `None` when the rank falls past the end.
pub fn nearest_rank<T: Copy>(sorted: &[T], q: f64, expected: usize) -> Option<T> {
    if expected == 0 {
        return None;
    }
    sorted.get(rank_index(q, expected)).copied()
}

/// Mean of `v`; 0 when empty.
pub fn mean(v: impl ExactSizeIterator<Item = f64>) -> f64 {
    let n = v.len();
    if n == 0 {
        return 0.0;
    }
    v.sum::<f64>() / n as f64
}

/// `n` per second over `secs`; 0 for no time.
pub fn rate(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even() {
        assert_eq!(median(&sorted([3.0, 1.0, 2.0])), 2.0);
        assert_eq!(median(&sorted([4.0, 1.0, 2.0, 3.0])), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(middle(&sorted([4.0, 1.0, 2.0, 3.0])), Some(3.0));
        assert_eq!(middle(&sorted([3.0, 1.0, 2.0])), Some(2.0));
        assert_eq!(middle(&[]), None);
        let m = middle(&sorted([f64::NAN, 1.0, 2.0])).unwrap_or(0.0);
        assert_eq!(m, 2.0);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(nearest_rank(&v, 0.5, v.len()), Some(500));
        assert_eq!(nearest_rank(&v, 0.99, v.len()), Some(990));
        assert_eq!(nearest_rank(&v, 0.999, v.len()), Some(999));
        assert_eq!(nearest_rank(&v, 1.0, v.len()), Some(1000));
        assert_eq!(nearest_rank(&v, 0.0, v.len()), Some(1));
        // Counted against 2000 expected: the median rank is past what came.
        assert_eq!(nearest_rank(&v, 0.5, 2000), Some(1000));
        assert_eq!(nearest_rank(&v, 0.99, 2000), None);
        assert_eq!(nearest_rank::<u64>(&[], 0.5, 0), None);
    }

    #[test]
    fn means_and_rates() {
        assert_eq!(mean([1.0, 2.0, 6.0].into_iter()), 3.0);
        assert_eq!(mean(std::iter::empty()), 0.0);
        assert_eq!(rate(10, 2.0), 5.0);
        assert_eq!(rate(10, 0.0), 0.0);
    }
}
