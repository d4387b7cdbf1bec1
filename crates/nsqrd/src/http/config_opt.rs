//! `/config/:opt`: read any option by its cfg name and change the two nsqd allows at runtime.
//! The options themselves live in the daemon; this module only needs the [`ConfigStore`] seam,
//! so the HTTP layer does not depend on how flags are parsed or what a change triggers.

use hyper::body::Incoming;
use hyper::{Request, StatusCode};
use nsq_common::http::response::{ApiError, Reply};

use super::body::read_body;
use super::HttpState;
use super::RequestCtx;

pub use crate::options::{ConfigPutError, ConfigValue};

/// The daemon's options, as the HTTP layer reads and changes them.
pub trait ConfigStore: Send + Sync {
    /// The value of option `key` (cfg name, e.g. `msg_timeout`), or `None` if there is no such
    /// option.
    fn get(&self, key: &str) -> Option<ConfigValue>;
    /// Set option `key` from the request body (`log_level` as text,
    /// `nsqlookupd_tcp_addresses` as a JSON array) and apply the change.
    fn put(&self, key: &str, body: &[u8]) -> Result<(), ConfigPutError>;
}

/// `GET /config/:opt`.
pub fn get(state: &HttpState, opt: &str) -> Result<Reply, ApiError> {
    match state.config.get(opt) {
        None => Err(ApiError::bad_request("INVALID_OPTION")),
        Some(ConfigValue::Text(s)) => Ok(Reply::Text(s.into())),
        Some(ConfigValue::Json(mut v)) => {
            go_numbers(&mut v);
            Reply::json(&v)
        }
    }
}

/// `PUT /config/:opt`: the body is checked (empty or over max-msg-size is 413) before the
/// option name, as in nsqd; then the current value is returned.
pub async fn put(
    state: &HttpState,
    opt: &str,
    req: Request<Incoming>,
    cx: RequestCtx,
) -> Result<Reply, ApiError> {
    let read_max = state.settings.max_msg_size_usize().saturating_add(1);
    let body = read_body(req.into_body(), cx.deadline, read_max).await?;
    if body.len() == read_max || body.is_empty() {
        return Err(ApiError::too_large("INVALID_VALUE"));
    }
    state.config.put(opt, &body).map_err(|e| {
        let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST);
        ApiError::new(status, e.to_string())
    })?;
    get(state, opt)
}

/// Go marshals integral floats without a fraction (`1`, not `1.0`).
fn go_numbers(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Number(n) => {
            let whole = n
                .as_f64()
                .filter(|_| n.is_f64())
                .and_then(|f| nsq_common::float::integral(f, nsq_common::float::JSON_LIMIT));
            if let Some(i) = whole {
                *n = serde_json::Number::from(i);
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(go_numbers),
        serde_json::Value::Object(o) => o.values_mut().for_each(go_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_floats_lose_their_fraction() {
        let mut v = serde_json::json!([1.0, 0.99, 3, "x", {"a": [2.0]}]);
        go_numbers(&mut v);
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"[1,0.99,3,"x",{"a":[2]}]"#
        );
    }
}
