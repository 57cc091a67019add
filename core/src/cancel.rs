//! A platform-neutral cancellation token.
//!
//! Runtimes race a tool call against [`CancellationToken::cancelled`] (seed 002, "Cancellation").
//! Core has no tokio, so the token is built on `event-listener`, which works on every target.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use event_listener::Event;

/// A cloneable flag that can be awaited. Cancelling one clone cancels all of them.
#[derive(Clone, Default)]
pub struct CancellationToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    event: Event,
}

impl std::fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancellationToken").field("cancelled", &self.is_cancelled()).finish()
    }
}

impl CancellationToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancel this token and wake every task waiting in [`cancelled`](Self::cancelled).
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::SeqCst);
        self.inner.event.notify(usize::MAX);
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Completes once the token is cancelled.
    pub async fn cancelled(&self) {
        loop {
            if self.is_cancelled() {
                return;
            }
            let listener = self.inner.event.listen();
            // Re-check after registering so a cancel between the check and `listen` is not lost.
            if self.is_cancelled() {
                return;
            }
            listener.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_wakes_waiters_and_clones_share_state() {
        let token = CancellationToken::new();
        let clone = token.clone();
        assert!(!clone.is_cancelled());
        let waiter = std::thread::spawn(move || futures_executor::block_on(clone.cancelled()));
        token.cancel();
        waiter.join().unwrap();
        assert!(token.is_cancelled());
        // Already cancelled: returns at once.
        futures_executor::block_on(token.cancelled());
    }
}
