//! A platform-neutral cancellation token, why it fired, and the race against it.
//!
//! Runtimes race a tool call against [`CancellationToken::cancelled`] (seed 002, "Cancellation");
//! hosts race each request of a call with [`or_cancelled`] so that a request still waiting — for a
//! question's answer, a server, a file — ends the moment the call is stopped. The token carries a
//! [`CancelReason`], so the request can say whether the call was cancelled or ran out of time.
//! Core has no tokio, so the token is built on `event-listener`, which works on every target.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::Poll;

use event_listener::Event;

/// Why a token was cancelled: each text says why, for the tool and the person (for instance
/// "tool 'x' ran past its deadline of 5000 ms and was stopped").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelReason {
    /// Someone gave up: the user stopped the call, the client cancelled it, the call ended.
    Cancelled(String),
    /// The call ran past its deadline.
    TimedOut(String),
}

/// A cloneable flag that can be awaited. Cancelling one clone cancels all of them.
#[derive(Clone, Default)]
pub struct CancellationToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    /// The first reason given; none for a plain [`CancellationToken::cancel`].
    reason: OnceLock<CancelReason>,
    event: Event,
}

impl std::fmt::Debug for CancellationToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancellationToken")
            .field("cancelled", &self.is_cancelled())
            .field("reason", &self.inner.reason.get())
            .finish()
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

    /// Cancel this token saying why. Only the first reason is kept: a call that ran out of time
    /// and is then ended stays timed out.
    pub fn cancel_with(&self, reason: CancelReason) {
        // Before the flag: whoever sees the token cancelled sees its reason.
        if !self.is_cancelled() {
            let _ = self.inner.reason.set(reason);
        }
        self.cancel();
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Why the token was cancelled: `None` while it is not, an empty
    /// [`CancelReason::Cancelled`] after a plain [`cancel`](Self::cancel).
    pub fn reason(&self) -> Option<CancelReason> {
        if !self.is_cancelled() {
            return None;
        }
        Some(self.inner.reason.get().cloned().unwrap_or_else(|| CancelReason::Cancelled(String::new())))
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

/// Resolve `f`, unless `token` is cancelled first: then `Err` with why, and `f` is dropped where
/// it stood (a question no longer waited for, a request abandoned). The token is looked at before
/// `f` each time, so once it has fired `f` makes no further progress — nor starts, if it fired
/// already: a write waiting behind a question is never done after the call was stopped.
pub async fn or_cancelled<F: Future>(f: F, token: &CancellationToken) -> Result<F::Output, CancelReason> {
    let mut f = pin!(f);
    let mut cancelled = pin!(token.cancelled());
    std::future::poll_fn(|cx| {
        if cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(token.reason().unwrap_or_else(|| CancelReason::Cancelled(String::new()))));
        }
        f.as_mut().poll(cx).map(Ok)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::{Context, Waker};

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

    #[test]
    fn the_first_reason_is_kept() {
        let token = CancellationToken::new();
        assert_eq!(token.reason(), None);
        token.cancel_with(CancelReason::TimedOut("past the deadline".into()));
        token.cancel_with(CancelReason::Cancelled("the call ended".into()));
        assert_eq!(token.clone().reason(), Some(CancelReason::TimedOut("past the deadline".into())));

        let plain = CancellationToken::new();
        plain.cancel();
        plain.cancel_with(CancelReason::TimedOut("too late to say".into()));
        assert_eq!(plain.reason(), Some(CancelReason::Cancelled(String::new())));
    }

    #[test]
    fn a_pending_future_ends_when_the_token_fires_and_is_not_polled_again() {
        let token = CancellationToken::new();
        let polls = std::cell::Cell::new(0);
        let never = std::future::poll_fn(|_| {
            polls.set(polls.get() + 1);
            Poll::<()>::Pending
        });
        let mut race = pin!(or_cancelled(never, &token));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(race.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls.get(), 1);
        token.cancel_with(CancelReason::Cancelled("stop".into()));
        assert_eq!(race.as_mut().poll(&mut cx), Poll::Ready(Err(CancelReason::Cancelled("stop".into()))));
        assert_eq!(polls.get(), 1, "the token is looked at first");

        // Cancelled before it starts: the future is never polled.
        let ready = std::future::poll_fn(|_| {
            polls.set(polls.get() + 1);
            Poll::Ready(())
        });
        assert!(futures_executor::block_on(or_cancelled(ready, &token)).is_err());
        assert_eq!(polls.get(), 1);
        assert_eq!(futures_executor::block_on(or_cancelled(async { 7 }, &CancellationToken::new())), Ok(7));
    }
}
