//! nsqd's own reading of query values (the query itself is parsed by
//! `nsq_common::http::query`, with the Go rules nsqlookupd shares), and the one shape of a
//! refused argument of nsqr's own routes.

use nsq_common::http::response::ApiError;

/// nsqd's `boolParams` for `include_clients` / `include_mem` / `binary`: `true`/`1` and
/// `false`/`0`; anything else (including absent) is `None`.
pub fn nsq_bool(v: Option<&str>) -> Option<bool> {
    match v? {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// A 400 for a bad argument of one of nsqr's own routes: the code in nsqd's style, then what the
/// argument must be, its limits included (`INVALID_WAIT: wait must be a duration of at most
/// 30s`), so that a client learns the limit it broke.
pub fn invalid_arg(code: &str, rule: impl std::fmt::Display) -> ApiError {
    ApiError::new(hyper::StatusCode::BAD_REQUEST, format!("{code}: {rule}"))
}

/// The rule text of a duration argument bounded by `max` (Go's duration format).
pub fn duration_rule(name: &str, min: &str, max: std::time::Duration) -> String {
    format!(
        "{name} must be a duration (250ms, 2s) or integer milliseconds, {min} to {}",
        nsq_common::duration::format(max)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bool_params() {
        assert_eq!(nsq_bool(Some("true")), Some(true));
        assert_eq!(nsq_bool(Some("1")), Some(true));
        assert_eq!(nsq_bool(Some("false")), Some(false));
        assert_eq!(nsq_bool(Some("0")), Some(false));
        for v in ["TRUE", "f", "", "yes"] {
            assert_eq!(nsq_bool(Some(v)), None, "{v}");
        }
        assert_eq!(nsq_bool(None), None);
    }
}
