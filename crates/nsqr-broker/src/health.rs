//! The node's health as `/ping` and `/stats` report it: `OK`, or `NOK - <error>` after a failed
//! disk write until the next successful one (nsqd's rule). Shared by the broker and every disk
//! queue writer, so it is a cheap handle around one small lock.

use std::sync::Arc;

use parking_lot::Mutex;

/// `OK`, or the last disk error; clones share one state.
#[derive(Debug, Clone, Default)]
pub struct Health(Arc<Mutex<Option<String>>>);

impl Health {
    /// A write failed: unhealthy until the next success.
    pub fn set_error(&self, error: &str) {
        *self.0.lock() = Some(error.to_string());
    }

    /// A write succeeded.
    pub fn set_ok(&self) {
        let mut h = self.0.lock();
        if h.is_some() {
            *h = None;
        }
    }

    /// True while healthy.
    pub fn is_ok(&self) -> bool {
        self.0.lock().is_none()
    }

    /// `OK` or `NOK - <error>`.
    pub fn text(&self) -> String {
        match &*self.0.lock() {
            None => "OK".to_string(),
            Some(e) => format!("NOK - {e}"),
        }
    }
}
