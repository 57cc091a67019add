//! The signals that end `jp`: SIGINT (Ctrl-C), SIGTERM (a supervisor), SIGHUP (a closed
//! terminal) and SIGQUIT. Every command ends on each of them the same way — its tool calls
//! cancelled, their process groups killed and scratch directories removed — never by the default
//! action, which would leave the tools' process groups running.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Listeners for SIGINT, SIGTERM, SIGHUP and SIGQUIT, registered when made: from then on none
/// of them ends the process by its default action. Must be made within a tokio runtime.
#[derive(Debug)]
pub struct EndingSignals {
    listeners: [Option<Signal>; 4],
}

impl EndingSignals {
    /// Register the listeners. A signal that cannot be listened to keeps its default action
    /// (which ends jp; its tools still die with it, by their parent-death signal).
    pub fn new() -> Self {
        let listen = |kind| signal(kind).ok();
        Self {
            listeners: [
                listen(SignalKind::interrupt()),
                listen(SignalKind::terminate()),
                listen(SignalKind::hangup()),
                listen(SignalKind::quit()),
            ],
        }
    }

    /// The next ending signal, by number.
    pub async fn recv(&mut self) -> i32 {
        async fn one(s: &mut Option<Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let [int, term, hup, quit] = &mut self.listeners;
        tokio::select! {
            () = one(int) => libc::SIGINT,
            () = one(term) => libc::SIGTERM,
            () = one(hup) => libc::SIGHUP,
            () = one(quit) => libc::SIGQUIT,
        }
    }
}

impl Default for EndingSignals {
    fn default() -> Self {
        Self::new()
    }
}

/// Resolves on the first of SIGINT, SIGTERM, SIGHUP or SIGQUIT, with its number.
pub async fn shutdown_signal() -> i32 {
    EndingSignals::new().recv().await
}
