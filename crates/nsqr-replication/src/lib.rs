//! Replicated topics for nsqr: the replicated log of one topic group (a topic, or a shard of
//! topics), on openraft (`docs/decisions/0014-consensus-library.md`), and the authenticated
//! TCP transport between the nodes of a cluster. How the broker uses it, and what an `OK`
//! then means, is `docs/replication.md`.
//!
//! - [`command`]: what a log entry carries, a whole batch (serde types).
//! - [`seq_map`]: the map by sequence number the state keeps messages in.
//! - [`state`]: the topic's replicated state (unfinished messages per channel, pauses,
//!   settings), which snapshots hold.
//! - [`log_store`]: the durable log (segments, vote, purge point), fsynced when asked.
//! - [`state_machine`]: applies entries, hands them to the broker, builds and installs
//!   snapshots.
//! - [`network`]: the only module with sockets: the handshake, frames, client and server.
//! - [`membership`]: `--cluster-peers` and leader placement.
//! - [`group`]: [`ClusterNode`] and [`ReplicatedLog`], the API the broker calls.
//! - [`forward`]: a publish on a node that does not lead its group, carried to the leader.
//! - `space`: a write refused by a full disk waits for space instead of stopping the group.

mod batch;
pub mod command;
mod elect;
pub mod error;
mod files;
pub mod forward;
pub mod group;
pub mod log_store;
pub mod membership;
pub mod network;
mod rejoin;
pub mod seq_map;
mod space;
pub mod state;
pub mod state_machine;
pub mod types;

pub use command::{Applied, ChannelOp, Command, Message, MessageId, PassId};
pub use error::{ChangeError, MembershipError, ProposeError, StartError, StoreError};
pub use forward::{ForwardError, ForwardHandler, ForwardRefused, Forwarded, Unstamped};
pub use group::{ClusterNode, Founding, GroupConfig, GroupStatus, ReplicatedLog, StatusWatch};
pub use membership::{ClusterConfig, Peers};
pub use network::{probe, ClusterTls, NetError, TlsError};
pub use seq_map::SeqMap;
pub use state::{Pending, StoredMessage, TopicState};
pub use state_machine::Committed;
pub use types::NodeId;
