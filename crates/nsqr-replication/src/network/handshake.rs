//! The handshake that opens every cluster connection, before any Raft message is read: both
//! sides prove they know the cluster's shared secret, and the server checks that the caller is
//! a configured peer, that the connection is meant for this node, and that it serves the group.
//!
//! The server sends a random nonce; the client answers with its node id, the node it meant to
//! reach, the group and an HMAC-SHA256 over them and the nonce; the server answers with its own
//! HMAC over the client's nonce (or a refusal, logged with the caller's address). The secret
//! never travels, and a recorded handshake cannot be replayed against a new nonce.

use std::net::SocketAddr;

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{frame, NetError};
use crate::membership::ClusterConfig;
use crate::types::NodeId;

const MAGIC: [u8; 8] = *b"NSQRRAFT";

/// How a refusal for a group this node does not serve (yet) begins.
pub(crate) const NO_GROUP: &str = "no group ";

type Nonce = [u8; 32];

#[derive(Serialize, Deserialize)]
struct ServerHello {
    magic: [u8; 8],
    node_id: NodeId,
    nonce: Nonce,
}

#[derive(Serialize, Deserialize)]
struct ClientHello {
    magic: [u8; 8],
    from: NodeId,
    to: NodeId,
    group: String,
    nonce: Nonce,
    mac: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
enum Verdict {
    Accepted { mac: Vec<u8> },
    Refused { reason: String },
}

fn nonce() -> Result<Nonce, NetError> {
    let mut nonce = [0u8; 32];
    SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| NetError::Random)?;
    Ok(nonce)
}

/// The bytes a side signs: its role, the other side's nonce, who calls whom, and the group.
fn transcript(role: &[u8], nonce: &Nonce, from: NodeId, to: NodeId, group: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(role.len() + 48 + group.len());
    out.extend_from_slice(role);
    out.extend_from_slice(nonce);
    out.extend_from_slice(&from.to_be_bytes());
    out.extend_from_slice(&to.to_be_bytes());
    out.extend_from_slice(group.as_bytes());
    out
}

fn key(config: &ClusterConfig) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, &config.secret)
}

/// The client's side: proves itself to node `to` for `group`, and checks the server's proof.
pub(crate) async fn client(
    stream: &mut (impl AsyncRead + AsyncWrite + Unpin),
    config: &ClusterConfig,
    to: NodeId,
    group: &str,
) -> Result<(), NetError> {
    let hello: ServerHello = frame::read(stream, frame::HANDSHAKE_MAX).await?;
    if hello.magic != MAGIC {
        return Err(NetError::BadPeer("not an nsqr cluster listener".into()));
    }
    if hello.node_id != to {
        return Err(NetError::BadPeer(format!(
            "node {} answered where node {to} was expected",
            hello.node_id
        )));
    }
    let key = key(config);
    let my_nonce = nonce()?;
    let from = config.node_id;
    let mac = hmac::sign(&key, &transcript(b"client", &hello.nonce, from, to, group));
    let reply = ClientHello {
        magic: MAGIC,
        from,
        to,
        group: group.to_owned(),
        nonce: my_nonce,
        mac: mac.as_ref().to_vec(),
    };
    frame::write(stream, &reply, frame::HANDSHAKE_MAX).await?;
    match frame::read(stream, frame::HANDSHAKE_MAX).await? {
        Verdict::Refused { reason } => Err(NetError::Refused(reason)),
        Verdict::Accepted { mac } => {
            let signed = transcript(b"server", &my_nonce, from, to, group);
            hmac::verify(&key, &signed, &mac)
                .map_err(|_| NetError::BadPeer("the server does not know the secret".into()))
        }
    }
}

/// The server's side: the group the client may use, once it proved it is a peer. A refusal is
/// sent to the client, logged, and returned.
pub(crate) async fn server(
    stream: &mut (impl AsyncRead + AsyncWrite + Unpin),
    remote: SocketAddr,
    config: &ClusterConfig,
    serves: impl Fn(&str) -> bool,
) -> Result<String, NetError> {
    let my_nonce = nonce()?;
    let hello = ServerHello {
        magic: MAGIC,
        node_id: config.node_id,
        nonce: my_nonce,
    };
    frame::write(stream, &hello, frame::HANDSHAKE_MAX).await?;
    let client: ClientHello = frame::read(stream, frame::HANDSHAKE_MAX).await?;
    let key = key(config);
    let signed = transcript(b"client", &my_nonce, client.from, client.to, &client.group);
    let refusal = if client.magic != MAGIC {
        Some("not an nsqr cluster client".to_owned())
    } else if !config.peers.contains(client.from) {
        Some(format!("node {} is not a configured peer", client.from))
    } else if client.to != config.node_id {
        Some(format!(
            "addressed to node {}, this is node {}",
            client.to, config.node_id
        ))
    } else if hmac::verify(&key, &signed, &client.mac).is_err() {
        Some(format!(
            "node {} does not know the cluster secret",
            client.from
        ))
    } else if !serves(&client.group) {
        Some(format!("{NO_GROUP}{:?} on this node", client.group))
    } else {
        None
    };
    if let Some(reason) = refusal {
        if serves(&client.group) {
            tracing::warn!(%remote, "cluster: refused a connection: {reason}");
        } else {
            // A peer may reach this node before the group is open here: it retries.
            tracing::debug!(%remote, "cluster: refused a connection: {reason}");
        }
        let verdict = Verdict::Refused {
            reason: reason.clone(),
        };
        frame::write(stream, &verdict, frame::HANDSHAKE_MAX).await?;
        return Err(NetError::Refused(reason));
    }
    let to_sign = transcript(
        b"server",
        &client.nonce,
        client.from,
        client.to,
        &client.group,
    );
    let mac = hmac::sign(&key, &to_sign).as_ref().to_vec();
    frame::write(stream, &Verdict::Accepted { mac }, frame::HANDSHAKE_MAX).await?;
    Ok(client.group)
}
