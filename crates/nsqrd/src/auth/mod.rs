//! Authorization through external auth servers, as nsqd's: the client's AUTH secret is sent to
//! one of `--auth-http-address`, whose reply (a TTL, an identity and a list of topic / channel
//! regexes with permissions) is cached on the connection and checked before every PUB, MPUB,
//! DPUB and SUB; once the TTL has passed the same secret is sent again.
//!
//! This module holds the reply's model and the matching rules; `query` talks HTTP.

mod query;

use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use tokio::time::Instant;

pub use query::{Authenticator, ClientFacts};

/// Why the auth servers gave no usable answer (only logged: the client sees `AUTH failed`).
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("{0}")]
    Url(String),
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("connect: timed out")]
    ConnectTimeout,
    #[error("tls: {0}")]
    Tls(std::io::Error),
    #[error("request: {0}")]
    Http(#[from] hyper::Error),
    #[error("request: {0}")]
    Request(#[from] hyper::http::Error),
    #[error("request timed out")]
    Timeout,
    #[error("got response {status} {body:?}")]
    Status { status: u16, body: String },
    #[error("response body too large or unreadable")]
    Body,
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("unknown permission {0}")]
    Permission(String),
    #[error("unable to compile {what} {pattern:?} {error}")]
    Regex {
        what: &'static str,
        pattern: String,
        error: regex::Error,
    },
    #[error("invalid TTL {0} (must be >0)")]
    Ttl(i64),
    #[error("no auth server configured")]
    NoServer,
    #[error("{0}")]
    All(String),
}

/// The auth server's JSON reply. Absent keys are zero values, as Go's decoder leaves them.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Reply {
    ttl: i64,
    authorizations: Vec<ReplyAuthorization>,
    identity: String,
    identity_url: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ReplyAuthorization {
    topic: String,
    channels: Vec<String>,
    permissions: Vec<String>,
}

/// One authorization, regexes compiled.
#[derive(Debug)]
struct Authorization {
    topic: Regex,
    channels: Vec<Regex>,
    publish: bool,
    subscribe: bool,
}

impl Authorization {
    /// nsqd's rule: publishing (channel "") needs `publish` and a channel regex matching "";
    /// subscribing needs `subscribe`. Regexes match anywhere unless anchored.
    fn is_allowed(&self, topic: &str, channel: &str) -> bool {
        let permitted = if channel.is_empty() {
            self.publish
        } else {
            self.subscribe
        };
        permitted && self.topic.is_match(topic) && self.channels.iter().any(|c| c.is_match(channel))
    }
}

/// A connection's cached authorizations.
#[derive(Debug)]
pub struct AuthState {
    pub identity: String,
    pub identity_url: String,
    authorizations: Vec<Authorization>,
    expires: Instant,
}

fn compile(what: &'static str, pattern: &str) -> Result<Regex, AuthError> {
    Regex::new(pattern).map_err(|error| AuthError::Regex {
        what,
        pattern: pattern.to_string(),
        error,
    })
}

impl AuthState {
    /// Validate a reply body as nsqd does: known permissions, compilable regexes, ttl > 0.
    pub fn from_reply(body: &[u8], now: Instant) -> Result<AuthState, AuthError> {
        let reply: Reply = serde_json::from_slice(body)?;
        let mut authorizations = Vec::with_capacity(reply.authorizations.len());
        for a in &reply.authorizations {
            let (mut publish, mut subscribe) = (false, false);
            for p in &a.permissions {
                match p.as_str() {
                    "publish" => publish = true,
                    "subscribe" => subscribe = true,
                    other => return Err(AuthError::Permission(other.to_string())),
                }
            }
            let topic = compile("topic", &a.topic)?;
            let channels = a
                .channels
                .iter()
                .map(|c| compile("channel", c))
                .collect::<Result<Vec<_>, _>>()?;
            authorizations.push(Authorization {
                topic,
                channels,
                publish,
                subscribe,
            });
        }
        if reply.ttl <= 0 {
            return Err(AuthError::Ttl(reply.ttl));
        }
        Ok(AuthState {
            identity: reply.identity,
            identity_url: reply.identity_url,
            authorizations,
            expires: now + Duration::from_secs(reply.ttl as u64),
        })
    }

    pub fn permission_count(&self) -> usize {
        self.authorizations.len()
    }

    pub fn has_authorizations(&self) -> bool {
        !self.authorizations.is_empty()
    }

    pub fn is_expired(&self, now: Instant) -> bool {
        self.expires < now
    }

    /// `channel` is "" for publishing.
    pub fn is_allowed(&self, topic: &str, channel: &str) -> bool {
        self.authorizations
            .iter()
            .any(|a| a.is_allowed(topic, channel))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn state(json: &str) -> Result<AuthState, String> {
        AuthState::from_reply(json.as_bytes(), Instant::now()).map_err(|e| e.to_string())
    }

    #[test]
    fn matching_follows_nsqd() {
        let s = state(
            r#"{"ttl":60,"identity":"id","authorizations":[
                {"topic":"^pub.*","channels":[".*"],"permissions":["publish"]},
                {"topic":"sub","channels":["^ch$"],"permissions":["subscribe"]},
                {"topic":"nochan","channels":[],"permissions":["publish","subscribe"]}]}"#,
        )
        .unwrap();
        assert_eq!(s.permission_count(), 3);
        assert!(s.is_allowed("pubtopic", ""));
        assert!(!s.is_allowed("xpub", ""));
        assert!(!s.is_allowed("pubtopic", "ch"));
        assert!(s.is_allowed("mysubx", "ch"));
        assert!(!s.is_allowed("sub", "ch2"));
        assert!(!s.is_allowed("sub", ""));
        assert!(!s.is_allowed("nochan", ""));
    }

    #[test]
    fn invalid_replies() {
        assert_eq!(
            state(r#"{"ttl":0,"authorizations":[]}"#).err().as_deref(),
            Some("invalid TTL 0 (must be >0)")
        );
        assert_eq!(
            state(
                r#"{"ttl":5,"authorizations":[{"topic":"t","channels":[],"permissions":["read"]}]}"#
            )
            .err()
            .as_deref(),
            Some("unknown permission read")
        );
        assert!(
            state(r#"{"ttl":5,"authorizations":[{"topic":"(","permissions":[]}]}"#)
                .unwrap_err()
                .starts_with("unable to compile topic \"(\"")
        );
        assert!(state("garbage").is_err());
        assert!(!state(r#"{"ttl":5}"#).unwrap().has_authorizations());
    }
}
