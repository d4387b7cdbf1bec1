//! nsqd's own reading of query values (the query itself is parsed by
//! `nsq_common::http::query`, with the Go rules nsqlookupd shares).

/// nsqd's `boolParams` for `include_clients` / `include_mem` / `binary`: `true`/`1` and
/// `false`/`0`; anything else (including absent) is `None`.
pub fn nsq_bool(v: Option<&str>) -> Option<bool> {
    match v? {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
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
