//! AUTH and the authorization check in front of PUB, MPUB, DPUB and SUB, as nsqd's
//! protocol_v2 does them (nsqrd's `tcp_auth` tests).
//!
//! Asking the auth server is the only thing a command can wait for, so the command that needs
//! it is parked in `Conn::suspended` and `process` returns `Flow::Await`; `resume` does the
//! HTTP round and then answers (AUTH) or runs the parked command (after a TTL re-check).

use bytes::Bytes;
use nsq_wire::frame::put_response;
use nsq_wire::quote::go_quote;
use nsq_wire::{Code, Command, ProtocolError};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::{Conn, Flow};
use crate::auth::{AuthError, AuthState};

/// A command waiting for something slow: the auth server, or a channel being opened.
pub enum Suspended {
    /// AUTH with this secret.
    Auth(Bytes),
    /// A checked command whose cached authorizations expired.
    Recheck(Command),
    /// SUB to a channel that may need creating (its disk queue is opened off this thread).
    Sub { topic: String, channel: String },
}

/// What a command asks permission for: (name, topic, channel); channel "" = publish.
fn target(cmd: &Command) -> Option<(&'static str, &[u8], &[u8])> {
    match cmd {
        Command::Pub { topic, .. } => Some(("PUB", topic, b"")),
        Command::Mpub { topic, .. } => Some(("MPUB", topic, b"")),
        Command::Dpub { topic, .. } => Some(("DPUB", topic, b"")),
        Command::Sub { topic, channel } => Some(("SUB", topic, channel)),
        _ => None,
    }
}

fn unauthorized(name: &str, topic: &[u8], channel: &[u8]) -> ProtocolError {
    ProtocolError::new(
        Code::Unauthorized,
        format!(
            "AUTH failed for {name} on {} {}",
            go_quote(topic),
            go_quote(channel)
        ),
    )
}

fn auth_failed() -> ProtocolError {
    ProtocolError::new(Code::AuthFailed, "AUTH failed")
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    /// None when `cmd` may run now; otherwise the flow to return (an error, or `Await` for a
    /// re-query). Anything batched is applied first so responses stay in order.
    pub(super) fn authorize(&mut self, cmd: &Command) -> Option<Flow> {
        let (name, topic, channel) = target(cmd)?;
        let verdict = match self.auth.as_ref().filter(|a| a.has_authorizations()) {
            None => Err(ProtocolError::new(
                Code::AuthFirst,
                format!("AUTH required before {name}"),
            )),
            Some(a) if a.is_expired(Instant::now()) => Ok(false),
            Some(a)
                if a.is_allowed(
                    &String::from_utf8_lossy(topic),
                    &String::from_utf8_lossy(channel),
                ) =>
            {
                return None
            }
            Some(_) => Err(unauthorized(name, topic, channel)),
        };
        if let Flow::Close = self.apply_pending() {
            return Some(Flow::Close);
        }
        Some(match verdict {
            Ok(_) => Flow::Await,
            Err(e) => self.error(&e),
        })
    }

    /// AUTH: checks in nsqd's order, then park it for the auth server.
    pub(super) fn auth_command(&mut self, secret: Bytes) -> Flow {
        if self.auth.as_ref().is_some_and(|a| a.has_authorizations()) {
            return self.error(&ProtocolError::invalid("AUTH already set"));
        }
        if self.shared.auth.is_none() {
            return self.error(&ProtocolError::new(Code::AuthDisabled, "AUTH disabled"));
        }
        self.suspended = Some(Suspended::Auth(secret));
        Flow::Await
    }

    async fn query_auth(&mut self) -> Result<AuthState, AuthError> {
        let Some(auth) = self.shared.auth.clone() else {
            return Err(AuthError::NoServer);
        };
        let state = auth.query_any(&self.auth_facts, &self.auth_secret).await;
        if let Err(e) = &state {
            tracing::warn!(
                "PROTOCOL(V2): [{}] AUTH failed {e}",
                self.client.remote_address()
            );
        }
        state
    }

    fn store_auth(&mut self, state: AuthState) {
        {
            let mut m = self.info.meta.lock();
            m.authed = state.has_authorizations();
            m.auth_identity = state.identity.clone();
            m.auth_identity_url = state.identity_url.clone();
        }
        self.auth = Some(state);
    }

    /// Finish what `process` parked (an auth round, or a SUB).
    pub(super) async fn resume(&mut self) -> Flow {
        match self.suspended.take() {
            None => Flow::Continue,
            Some(Suspended::Sub { topic, channel }) => self.join(&topic, &channel).await,
            Some(Suspended::Auth(secret)) => {
                self.auth_secret = String::from_utf8_lossy(&secret).into_owned();
                let state = match self.query_auth().await {
                    Ok(s) => s,
                    Err(_) => return self.error(&auth_failed()),
                };
                let has = state.has_authorizations();
                let reply = serde_json::json!({
                    "identity": state.identity,
                    "identity_url": state.identity_url,
                    "permission_count": state.permission_count(),
                });
                self.store_auth(state);
                if !has {
                    return self.error(&ProtocolError::new(
                        Code::Unauthorized,
                        "AUTH no authorizations found",
                    ));
                }
                match serde_json::to_vec(&reply) {
                    Ok(json) => {
                        put_response(&mut self.wbuf, &json);
                        Flow::Continue
                    }
                    Err(e) => self.error(&ProtocolError::new(
                        Code::AuthError,
                        format!("AUTH error {e}"),
                    )),
                }
            }
            Some(Suspended::Recheck(cmd)) => {
                let state = match self.query_auth().await {
                    Ok(s) => s,
                    Err(_) => return self.error(&auth_failed()),
                };
                let allowed = target(&cmd).is_none_or(|(_, t, c)| {
                    state.is_allowed(&String::from_utf8_lossy(t), &String::from_utf8_lossy(c))
                });
                let denied = target(&cmd)
                    .filter(|_| !allowed)
                    .map(|(n, t, c)| unauthorized(n, t, c));
                self.store_auth(state);
                match denied {
                    Some(e) => self.error(&e),
                    None => self.authorized_command(cmd),
                }
            }
        }
    }
}
