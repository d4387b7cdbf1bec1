//! Integral floats written as integers, as Go's encoders write them (`1`, not `1.0`), for the
//! JSON and text nsqd produces (`/stats` percentiles, `/config/:opt`, `/metrics`).
//!
//! The integer is only used below a bound, and two bounds are in use: [`JSON_LIMIT`] for
//! `/stats` and `/config` JSON values that may be large, [`EXACT_LIMIT`] for values rendered
//! through serde_json's or Rust's float text beyond it (`/config/:opt` floats, `/metrics`
//! samples). Each caller keeps its bound, so its output is unchanged.

/// Below this an integral float is written as an integer in `/stats` and `/config` JSON
/// (every such value fits an `i64`).
pub const JSON_LIMIT: f64 = 1e18;

/// Below this an integral float is written as an integer in option values and `/metrics`
/// samples (every such value is an exact float).
pub const EXACT_LIMIT: f64 = 1e15;

/// `v` as an integer when it is integral and its magnitude is below `limit`.
pub fn integral(v: f64, limit: f64) -> Option<i64> {
    (v.is_finite() && v.fract() == 0.0 && v.abs() < limit).then_some(v as i64)
}

/// `v` as text: an integer when [`integral`] below `limit`, else Rust's shortest float text.
pub fn to_text(v: f64, limit: f64) -> String {
    match integral(v, limit) {
        Some(n) => n.to_string(),
        None => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_below_the_limit_only() {
        assert_eq!(integral(1.0, JSON_LIMIT), Some(1));
        assert_eq!(integral(-3.0, EXACT_LIMIT), Some(-3));
        assert_eq!(integral(0.99, JSON_LIMIT), None);
        assert_eq!(integral(1e16, JSON_LIMIT), Some(10_000_000_000_000_000));
        assert_eq!(integral(1e16, EXACT_LIMIT), None);
        assert_eq!(integral(f64::NAN, JSON_LIMIT), None);
        assert_eq!(integral(f64::INFINITY, JSON_LIMIT), None);
        assert_eq!(to_text(2.0, EXACT_LIMIT), "2");
        assert_eq!(to_text(0.5, EXACT_LIMIT), "0.5");
        assert_eq!(to_text(1e16, EXACT_LIMIT), "10000000000000000");
        assert_eq!(to_text(f64::INFINITY, EXACT_LIMIT), "inf");
    }
}
