//! The intake of a wrapped server's notifications: [`Inbox::take`] hands each over without
//! waiting — a call's progress to that call's queue, the rest to the server's bounded queue
//! ([`MAX_QUEUED`]) — and one task per server passes them on to the agent sessions (log
//! messages at each session's level, their data cut at [`MAX_LOG_DATA`]; list-changed and
//! subscribed `resources/updated`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{
    LoggingLevel, LoggingMessageNotificationParam, ProgressToken, RequestMetaObject, ServerNotification,
};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Hub, lock, rank};

/// Most notifications of one server waiting to be passed on; more are dropped and counted.
pub const MAX_QUEUED: usize = 64;

/// Most bytes (as JSON) of a forwarded log message's `data`; more is cut.
pub const MAX_LOG_DATA: usize = 16 << 10;

/// What the transport of a wrapped server hands its notifications to (and shows its calls).
pub struct Inbox {
    server: String,
    hub: Arc<Hub>,
    queue: mpsc::Sender<ServerNotification>,
    dropped: Arc<AtomicUsize>,
}

impl Inbox {
    /// The inbox of server `server`, and the task that passes its notifications on.
    pub fn start(server: &str, hub: &Arc<Hub>) -> Arc<Self> {
        let (queue, rx) = mpsc::channel(MAX_QUEUED);
        let dropped = Arc::new(AtomicUsize::new(0));
        tokio::spawn(pass_on(server.to_owned(), hub.clone(), rx, dropped.clone()));
        Arc::new(Self { server: server.to_owned(), hub: hub.clone(), queue, dropped })
    }

    /// A `tools/call` of jp's client on its way to the server (its mark taken out, its progress token bound to its call).
    pub fn outgoing(&self, meta: &mut RequestMetaObject, token: Option<ProgressToken>) {
        self.hub.bind(meta, token);
    }

    /// Take one notification of the server, without waiting.
    pub fn take(&self, notification: ServerNotification) {
        if let ServerNotification::ProgressNotification(n) = &notification {
            // Only to a call of this server: one server cannot report for another's call.
            if let Some(tx) = self.hub.progress_of(&self.server, &n.params.progress_token) {
                let _ = tx.try_send(n.params.clone());
            }
            return;
        }
        if let ServerNotification::ToolListChangedNotification(_) = &notification {
            lock(&self.hub.tools_changed).insert(self.server.clone());
        }
        if self.queue.try_send(notification).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A log message's data, cut to [`MAX_LOG_DATA`] bytes of JSON.
fn log_data(data: Value) -> Value {
    let len = serde_json::to_string(&data).map_or(0, |s| s.len());
    if len <= MAX_LOG_DATA {
        return data;
    }
    let text = match &data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut end = MAX_LOG_DATA.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Value::String(format!("{}… ({len} bytes, cut by jp at {MAX_LOG_DATA})", &text[..end]))
}

/// Pass server `server`'s notifications on to the sessions, one at a time, until its
/// connection ends.
async fn pass_on(server: String, hub: Arc<Hub>, mut rx: mpsc::Receiver<ServerNotification>, dropped: Arc<AtomicUsize>) {
    while let Some(notification) = rx.recv().await {
        let lost = dropped.swap(0, Ordering::Relaxed);
        for session in hub.sessions() {
            let Some(peer) = session.peer() else { continue };
            let level = *lock(&session.level);
            if lost > 0 {
                let note = LoggingMessageNotificationParam::new(
                    LoggingLevel::Warning,
                    Value::String(format!(
                        "jp dropped {lost} notifications of MCP server '{server}': it sent more than {MAX_QUEUED} faster than they could be passed on"
                    )),
                )
                .with_logger("jp");
                let _ = peer.notify_logging_message(note).await;
            }
            // MCP 2026-07-28: change notifications only through the client's listen streams,
            // as their filters allow.
            if session.listens()
                && matches!(
                    notification,
                    ServerNotification::ResourceUpdatedNotification(_)
                        | ServerNotification::ResourceListChangedNotification(_)
                        | ServerNotification::PromptListChangedNotification(_)
                        | ServerNotification::ToolListChangedNotification(_)
                )
            {
                session.to_listeners(&notification).await;
                continue;
            }
            let _ = match &notification {
                ServerNotification::LoggingMessageNotification(n) => {
                    if level.is_some_and(|min| rank(n.params.level) < rank(min)) {
                        continue;
                    }
                    let note = LoggingMessageNotificationParam::new(n.params.level, log_data(n.params.data.clone()))
                        .with_logger(server.clone());
                    peer.notify_logging_message(note).await
                }
                ServerNotification::ResourceUpdatedNotification(n) => {
                    if !session.subscribed(&n.params.uri) {
                        continue;
                    }
                    peer.notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(
                        n.params.uri.clone(),
                    ))
                    .await
                }
                ServerNotification::ResourceListChangedNotification(_) => peer.notify_resource_list_changed().await,
                ServerNotification::PromptListChangedNotification(_) => peer.notify_prompt_list_changed().await,
                ServerNotification::ToolListChangedNotification(_) => peer.notify_tool_list_changed().await,
                // Cancellations of jp's requests, task status, custom notifications: jp's
                // client has nothing to do with them.
                _ => continue,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_log_data_is_cut() {
        let data = log_data(Value::String("x".repeat(MAX_LOG_DATA * 4)));
        let text = data.as_str().unwrap();
        assert!(text.len() < MAX_LOG_DATA + 100 && text.contains("cut by jp"), "{}", text.len());
        assert_eq!(log_data(serde_json::json!({"a": 1})), serde_json::json!({"a": 1}));
    }
}
