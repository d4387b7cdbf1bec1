//! Starts the HTTP listener (placeholder until the HTTP module lands).

use std::net::SocketAddr;
use std::sync::Arc;

use nsqr_broker::Broker;
use tokio::task::JoinHandle;

use crate::options::Options;

pub async fn start(
    _opts: &Options,
    _broker: &Arc<Broker>,
    _tcp_addr: SocketAddr,
    _shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Option<JoinHandle<()>>, String> {
    Ok(None)
}
