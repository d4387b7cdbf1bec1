//! The handler style of consuming (go-nsq's `AddConcurrentHandlers`): a [`Handler`] sees each
//! message and returns whether it was handled; the consumer then finishes it, or requeues it
//! with backoff. A message delivered more than `max_attempts` times is finished without being
//! handled and shown to [`Handler::failed`] (go-nsq's `LogFailedMessage`).

use std::future::Future;
use std::time::Duration;

use crate::message::Message;

/// Why a handler did not handle a message, and how to requeue it.
#[derive(Debug)]
pub struct HandlerError {
    /// The cause, for the log.
    pub cause: Box<dyn std::error::Error + Send + Sync>,
    /// The requeue delay; None: `default_requeue_delay` times the attempts.
    pub delay: Option<Duration>,
    /// Back off (slow the consumer down) as for any failure; false for an expected retry.
    pub backoff: bool,
}

impl HandlerError {
    /// Requeue after `delay` instead of the default.
    pub fn delay(mut self, delay: Duration) -> HandlerError {
        self.delay = Some(delay);
        self
    }

    /// Requeue without backing off.
    pub fn without_backoff(mut self) -> HandlerError {
        self.backoff = false;
        self
    }
}

impl<E: Into<Box<dyn std::error::Error + Send + Sync>>> From<E> for HandlerError {
    fn from(e: E) -> HandlerError {
        HandlerError {
            cause: e.into(),
            delay: None,
            backoff: true,
        }
    }
}

/// Handles messages for [`Consumer::run`](crate::Consumer::run).
///
/// ```
/// use nsqr_client::{Handler, HandlerError, Message};
///
/// struct Print;
///
/// impl Handler for Print {
///     async fn handle(&self, m: &Message) -> Result<(), HandlerError> {
///         let text = std::str::from_utf8(m.body())?; // an error requeues it
///         println!("{text}");
///         Ok(())
///     }
/// }
/// ```
pub trait Handler: Send + Sync + 'static {
    /// Handle one message: Ok finishes it, Err requeues it.
    fn handle(&self, message: &Message) -> impl Future<Output = Result<(), HandlerError>> + Send;

    /// A message was given up on after more than `max_attempts` deliveries (it is finished).
    fn failed(&self, message: &Message) {
        tracing::warn!(
            "nsqr-client: message {} attempted {} times, giving up",
            message.id_str(),
            message.attempts()
        );
    }
}

/// A handler from a plain function or closure.
pub fn handler_fn<F>(f: F) -> FnHandler<F>
where
    F: Fn(&Message) -> Result<(), HandlerError> + Send + Sync + 'static,
{
    FnHandler(f)
}

/// See [`handler_fn`].
pub struct FnHandler<F>(F);

impl<F> Handler for FnHandler<F>
where
    F: Fn(&Message) -> Result<(), HandlerError> + Send + Sync + 'static,
{
    fn handle(&self, message: &Message) -> impl Future<Output = Result<(), HandlerError>> + Send {
        std::future::ready((self.0)(message))
    }
}

/// Run `handler` on `m` and answer it by the outcome.
pub(crate) async fn handle_one<H: Handler>(handler: &H, m: Message) {
    match handler.handle(&m).await {
        Ok(()) => {
            let _ = m.finish();
        }
        Err(e) => {
            tracing::warn!(
                "nsqr-client: handler failed for message {}: {}",
                m.id_str(),
                e.cause
            );
            let _ = if e.backoff {
                m.requeue(e.delay)
            } else {
                m.requeue_without_backoff(e.delay)
            };
        }
    }
}
