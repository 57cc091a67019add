//! [`VfsHandle`]: a stateful VFS tool (RFD 009, D11 "Integration with the stateful tool
//! protocol") kept alive between calls and served in the background.

use std::sync::Arc;
use std::time::Duration;

use jp_core::BoxFuture;
use jp_core::cancel::CancellationToken;
use jp_core::handles::{AnyToolHandle, ApplyInput};
use jp_core::protocol::{ApplyParams, ProtocolNotification, encode_message};
use jp_core::state::{ToolError, ToolState};
use tokio::sync::Notify;

use super::conversation::{Halt, Outbox, VfsConversation, stopped};

/// A stateful VFS tool kept alive between calls (for the RFD 009 handle registry). A task
/// serves it in the background — its host requests are answered and its `state` notifications
/// collected while the assistant is elsewhere — until it stops or is aborted. `fetch` returns
/// the output gathered since the last fetch and the current state, waiting up to `wait` for a
/// change; `apply` sends the input and waits the same way for the state that follows.
pub struct VfsHandle {
    board: Arc<StateBoard>,
    out: Outbox,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
    wait: Duration,
    seen: u64,
}

/// Most content of unfetched states a handle keeps.
const MAX_UNREAD_STATE: usize = 4 * 1024 * 1024;

/// What the serving task has gathered for the handle.
struct StateBoard {
    state: std::sync::Mutex<Posted>,
    changed: Notify,
}

struct Posted {
    state: ToolState,
    /// Content of the states reached since the last fetch.
    unread: String,
    version: u64,
}

impl std::fmt::Debug for VfsHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfsHandle").field("live", &self.is_live()).finish_non_exhaustive()
    }
}

impl StateBoard {
    fn lock(&self) -> std::sync::MutexGuard<'_, Posted> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn publish(&self, state: ToolState) {
        let mut g = self.lock();
        if let ToolState::Running { content: Some(c) } | ToolState::Waiting { content: Some(c), .. } = &state {
            // Bounded: a tool that streams states nobody fetches loses the oldest content.
            if g.unread.len() + c.len() > MAX_UNREAD_STATE {
                let mut cut = (g.unread.len() + c.len() - MAX_UNREAD_STATE).min(g.unread.len());
                while !g.unread.is_char_boundary(cut) {
                    cut += 1;
                }
                g.unread.replace_range(..cut, "[… earlier output dropped: fetch more often]\n");
            }
            g.unread.push_str(c);
        }
        g.state = state;
        g.version += 1;
        drop(g);
        self.changed.notify_waiters();
    }
}

impl VfsHandle {
    /// Serve `conversation` in the background from its first state `state` on.
    pub(super) fn start(mut conversation: VfsConversation, state: ToolState, wait: Duration) -> Self {
        let board = Arc::new(StateBoard {
            state: std::sync::Mutex::new(Posted {
                state: ToolState::Running { content: None },
                unread: String::new(),
                version: 0,
            }),
            changed: Notify::new(),
        });
        board.publish(state);
        // A live stateful tool may be silent for as long as the assistant leaves it alone.
        conversation.idle_ok = true;
        let out = conversation.out.clone();
        let stop = CancellationToken::new();
        let task = {
            let (board, stop) = (board.clone(), stop.clone());
            tokio::spawn(async move {
                loop {
                    match conversation.serve(&stop, true).await {
                        Halt::State(state) => board.publish(state),
                        step => {
                            board.publish(stopped(conversation.end(step).await));
                            break;
                        }
                    }
                }
            })
        };
        // The first state (and its content) went back with `spawn`.
        let seen = {
            let mut g = board.lock();
            g.unread.clear();
            g.version
        };
        Self { board, out, stop, task: Some(task), wait, seen }
    }

    /// Whether the process is still being served (it has not stopped and was not aborted).
    pub fn is_live(&self) -> bool {
        self.task.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Wait up to `wait` for a state newer than the last one returned, then take it with the
    /// content gathered since.
    async fn next_state(&mut self) -> ToolState {
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            let notified = self.board.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.board.lock().version != self.seen {
                break;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                break;
            }
        }
        let mut g = self.board.lock();
        self.seen = g.version;
        let unread = std::mem::take(&mut g.unread);
        let content = (!unread.is_empty()).then_some(unread);
        match (&g.state, content) {
            // Output gathered before it stopped comes first; the stop is reported next time.
            (ToolState::Stopped { .. }, Some(c)) => {
                self.seen = g.version.wrapping_sub(1);
                ToolState::Running { content: Some(c) }
            }
            (ToolState::Running { .. }, content) => ToolState::Running { content },
            (ToolState::Waiting { question, .. }, content) => {
                ToolState::Waiting { content, question: question.clone() }
            }
            (stopped, None) => stopped.clone(),
        }
    }

    async fn apply_input(&mut self, input: ApplyInput) -> Result<ToolState, ToolError> {
        if !self.is_live() && self.board.lock().state.is_stopped() {
            return Err(ToolError::new("the tool has stopped; start it again to give it more input"));
        }
        let input = match input {
            ApplyInput::Data(v) => v,
            ApplyInput::Answer { value, .. } => value,
        };
        {
            // Answered: it is no longer waiting, whatever it says next.
            let mut g = self.board.lock();
            if matches!(g.state, ToolState::Waiting { .. }) {
                g.state = ToolState::Running { content: None };
            }
            self.seen = g.version;
        }
        self.out.send(encode_message(&ProtocolNotification::Apply(ApplyParams { input }).to_message()));
        Ok(self.next_state().await)
    }
}

impl AnyToolHandle for VfsHandle {
    fn fetch(&mut self) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(async move { Ok(self.next_state().await) })
    }

    fn apply(&mut self, input: ApplyInput) -> BoxFuture<'_, Result<ToolState, ToolError>> {
        Box::pin(self.apply_input(input))
    }

    fn abort(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.stop.cancel();
            if let Some(task) = self.task.take() {
                let _ = task.await;
            }
            self.board.publish(ToolState::Stopped { result: Err(ToolError::new("the tool was aborted")) });
        })
    }
}

impl Drop for VfsHandle {
    fn drop(&mut self) {
        // Nobody can reach it any more: the serving task stops it (cancel, SIGTERM, SIGKILL).
        self.stop.cancel();
    }
}
