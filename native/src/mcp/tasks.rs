//! MCP tasks: the `io.modelcontextprotocol/tasks` extension (SEP-2663), the form MCP 2026-07-28
//! and rmcp implement — `tasks/get`, `tasks/update`, `tasks/cancel`, the result inline in
//! `tasks/get` (no `tasks/list`, no `tasks/result`: those were the 2025-11-25 experiment).
//!
//! Tasks are the client's, not the model's: RFD 009's `action` form (spawn/fetch/apply/abort)
//! is untouched. The server decides per request whether to make a task, so jp does it for the
//! calls that need one: a `tools/call` whose request declares the extension starts as always;
//! if it ends within [`INLINE_FOR`] its result is the answer, otherwise — or as soon as it asks
//! something — the answer is a task and the call goes on in a task of its own (the same running
//! call MRTR suspends). Its questions and policy inquiries become the task's `inputRequests`
//! (elicitations, offered only to a client that declared elicitation; otherwise denied at once,
//! as everywhere), answered by `tasks/update`. `tasks/cancel` cancels the call (D11 `cancel`,
//! SIGTERM, SIGKILL) and the task settles once its processes are gone.
//!
//! Each task belongs to its session (over stateless HTTP, to the server's one bearer token) and
//! its id is 128 random bits; another session's id is answered as unknown. A session's end
//! cancels its tasks. At most [`MAX_TASKS`] tasks are kept per owner — a call that would need a
//! task beyond that answers inline — and ended ones are dropped oldest first, also when their
//! results pass [`MAX_KEPT_BYTES`], or [`KEEP_ENDED`] after they ended. A task still running at
//! its `ttlMs` ([`TTL`]) is stopped and fails.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use jp_core::cancel::CancellationToken;
use jp_core::runtime::{ExecutionOutcome, RuntimeError, ToolCall};
use rmcp::model::{
    CallToolResponse, CreateTaskResult, DetailedTask, ElicitRequest, ElicitResult, InputRequest, InputResponses,
    JsonObject, ServerCapabilities, TASKS_EXTENSION_ID, Task, TaskPayload, TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::current_timestamp;
use rmcp::{ErrorData, RoleServer};
use tokio::sync::{OwnedSemaphorePermit, oneshot};
use tokio::task::JoinHandle;

use super::mrtr::Running;
use super::{JpMcp, elicit, response, tool_error};
use crate::app::CallReply;
use crate::runtime::mcp::ask::{self, Asked};
use crate::runtime::mcp::forward;

/// How long a call of a task-declaring client may run before it becomes a task.
pub(crate) const INLINE_FOR: Duration = Duration::from_secs(1);
/// A task's time to live from its creation while it runs (`ttlMs`): then it is stopped.
pub(crate) const TTL: Duration = Duration::from_secs(60 * 60);
/// How long an ended task is kept for `tasks/get` (its `ttlMs` is moved to say so).
pub(crate) const KEEP_ENDED: Duration = Duration::from_secs(10 * 60);
/// Tasks kept per owner; beyond it the oldest ended one is dropped.
pub(crate) const MAX_TASKS: usize = 64;
/// Bytes of results kept per owner; beyond it the oldest ended tasks are dropped.
pub(crate) const MAX_KEPT_BYTES: usize = 64 << 20;
/// The polling interval suggested to clients.
pub(crate) const POLL_INTERVAL_MS: u64 = 500;

/// Who may see a task: a session, or the server's principal (stateless requests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner([u8; 16]);

/// 16 random bytes from the OS.
fn random() -> Option<[u8; 16]> {
    let mut bytes = [0u8; 16];
    let n = rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).ok()?;
    (n == bytes.len()).then_some(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Owner {
    fn new() -> Self {
        // Owners are never sent anywhere; a failed read still gives distinct owners per process.
        Self(random().unwrap_or_else(|| {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&n.to_le_bytes());
            b
        }))
    }
}

/// A question of a running task, waiting for `tasks/update`.
struct OpenQuestion {
    request: InputRequest,
    answer: oneshot::Sender<Option<ElicitResult>>,
}

struct Entry {
    owner: Owner,
    task: Task,
    created: Instant,
    /// How it ended, and when.
    end: Option<(TaskPayload, Instant)>,
    pending: BTreeMap<String, OpenQuestion>,
    /// Questions asked so far (keys are never reused).
    asked: u64,
    cancel: CancellationToken,
    cancel_requested: bool,
    driver: Option<JoinHandle<()>>,
    bytes: usize,
}

impl Entry {
    fn touch(&mut self, status: TaskStatus, message: impl Into<String>) {
        self.task.status = status;
        self.task.status_message = Some(message.into());
        self.task.last_updated_at = current_timestamp();
    }

    fn detailed(&self) -> DetailedTask {
        let payload = match &self.end {
            Some((payload, _)) => payload.clone(),
            None if !self.pending.is_empty() => TaskPayload::InputRequired {
                input_requests: self.pending.iter().map(|(k, p)| (k.clone(), p.request.clone())).collect(),
            },
            None => TaskPayload::Working,
        };
        DetailedTask::new(self.task.clone(), payload)
    }
}

/// The tasks of one session (stdio) or of the whole server (HTTP: sessions and stateless
/// requests share it, each task bound to its owner).
pub struct TaskStore {
    tasks: Mutex<HashMap<String, Entry>>,
    principal: Owner,
    /// [`TTL`] and [`KEEP_ENDED`] (shorter in unit tests).
    ttl: Duration,
    keep_ended: Duration,
}

impl std::fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskStore").field("tasks", &self.lock().len()).finish_non_exhaustive()
    }
}

/// The answer to a task id that is not this owner's, whatever the reason (no oracle).
fn unknown() -> ErrorData {
    ErrorData::invalid_params(
        format!(
            "no task with this taskId in this session: the id is wrong, the task belongs to another session, or it ended more than {} minutes ago or was dropped to keep the newest {MAX_TASKS}; call the tool again",
            KEEP_ENDED.as_secs() / 60
        ),
        None,
    )
}

impl TaskStore {
    /// An empty store.
    pub fn new() -> Arc<Self> {
        Self::with_times(TTL, KEEP_ENDED)
    }

    fn with_times(ttl: Duration, keep_ended: Duration) -> Arc<Self> {
        Arc::new(Self { tasks: Mutex::default(), principal: Owner::new(), ttl, keep_ended })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.tasks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Drop ended tasks kept long enough, and questions nobody can answer any more (the
    /// call stopped waiting: denied after the ask timeout).
    fn sweep(&self, tasks: &mut HashMap<String, Entry>) {
        tasks.retain(|_, e| e.end.as_ref().is_none_or(|(_, at)| at.elapsed() < self.keep_ended));
        for e in tasks.values_mut() {
            e.pending.retain(|_, p| !p.answer.is_closed());
        }
    }

    /// Drop `owner`'s oldest ended tasks while it has `count_over` tasks or more, or its results
    /// weigh more than `MAX_KEPT_BYTES`; `keep` is never dropped.
    fn evict(tasks: &mut HashMap<String, Entry>, owner: Owner, count_over: usize, keep: Option<&str>) {
        loop {
            let mine = tasks.values().filter(|e| e.owner == owner);
            let (count, bytes) = mine.fold((0, 0), |(c, b), e| (c + 1, b + e.bytes));
            if count < count_over && bytes <= MAX_KEPT_BYTES {
                return;
            }
            let oldest = tasks
                .iter()
                .filter(|(id, e)| e.owner == owner && e.end.is_some() && Some(id.as_str()) != keep)
                .min_by_key(|(_, e)| e.end.as_ref().map(|(_, at)| *at))
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => {
                    tasks.remove(&id);
                }
                None => return,
            }
        }
    }

    fn has_room(&self, owner: Owner) -> bool {
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        let mine: Vec<&Entry> = tasks.values().filter(|e| e.owner == owner).collect();
        mine.len() < MAX_TASKS || mine.iter().any(|e| e.end.is_some())
    }

    /// Make a task of `running` (its first question, if any, already asked) and follow it in
    /// a driver of its own.
    fn create(
        self: &Arc<Self>,
        owner: Owner,
        tool: String,
        running: Running,
        cancel: CancellationToken,
        first: Option<Asked>,
    ) -> Result<Task, &'static str> {
        let id = hex(&random().ok_or("jp could not draw a random task id from the OS")?);
        let now = current_timestamp();
        let task = Task::new(id.clone(), TaskStatus::Working, now.clone(), now)
            .with_ttl_ms(self.ttl.as_millis() as u64)
            .with_poll_interval_ms(POLL_INTERVAL_MS)
            .with_status_message(format!("tool '{tool}' is running"));
        let entry = Entry {
            owner,
            task,
            created: Instant::now(),
            end: None,
            pending: BTreeMap::new(),
            asked: 0,
            cancel,
            cancel_requested: false,
            driver: None,
            bytes: 0,
        };
        {
            let mut tasks = self.lock();
            self.sweep(&mut tasks);
            Self::evict(&mut tasks, owner, MAX_TASKS, None);
            tasks.insert(id.clone(), entry);
        }
        if let Some(first) = first {
            self.ask(&id, first);
        }
        let seed = self.lock().get(&id).map(|e| e.task.clone()).ok_or("the session is closing");
        let driver = tokio::spawn(Self::drive(self.clone(), id.clone(), tool, running));
        // Kept for `close` to wait on, unless the call already ended (or the session closed).
        if let Some(entry) = self.lock().get_mut(&id).filter(|e| e.end.is_none()) {
            entry.driver = Some(driver);
        }
        seed
    }

    /// Follow a task's call to its end: its questions into `inputRequests`, stopped at its TTL.
    async fn drive(store: Arc<Self>, id: String, tool: String, mut running: Running) {
        let deadline = tokio::time::Instant::now() + store.ttl;
        let mut open = true;
        let reply = loop {
            tokio::select! {
                done = &mut running.work => break Some(joined(done)),
                asked = running.questions.recv(), if open => match asked {
                    Some(asked) => store.ask(&id, asked),
                    None => open = false,
                },
                () = tokio::time::sleep_until(deadline) => break None,
            }
        };
        let reply = match reply {
            Some(reply) => Some(reply),
            None => {
                // Past its TTL: stopped like a cancelled call; it fails.
                if let Some(e) = store.lock().get_mut(&id) {
                    e.cancel.cancel();
                    e.pending.clear();
                }
                stop(&mut running).await;
                None
            }
        };
        store.finish(&id, &tool, reply);
    }

    /// Record a question of task `id` under a fresh key (denied when the task is cancelled).
    fn ask(&self, id: &str, asked: Asked) {
        let mut tasks = self.lock();
        let Some(e) = tasks.get_mut(id) else { return };
        if e.cancel_requested || e.end.is_some() {
            return;
        }
        e.asked += 1;
        let key = format!("q{}", e.asked);
        e.pending.insert(
            key,
            OpenQuestion {
                request: InputRequest::Elicitation(ElicitRequest::new(asked.request)),
                answer: asked.answer,
            },
        );
        e.touch(TaskStatus::InputRequired, "waiting for the client to answer the task's inputRequests (tasks/update)");
    }

    /// The call of task `id` ended (`None`: stopped at its TTL).
    fn finish(&self, id: &str, tool: &str, reply: Option<Result<CallReply, RuntimeError>>) {
        let mut tasks = self.lock();
        let Some(e) = tasks.get_mut(id) else { return };
        let (payload, status, message) = match reply {
            None => (
                TaskPayload::Failed {
                    error: error_object(&ErrorData::internal_error(
                        format!(
                            "tool '{tool}' ran past the task's ttlMs ({} ms) and was stopped; for programs that run long use the tool's `action: spawn` form",
                            self.ttl.as_millis()
                        ),
                        None,
                    )),
                },
                TaskStatus::Failed,
                "expired: stopped at its ttlMs".to_owned(),
            ),
            Some(reply) if e.cancel_requested && !succeeded(&reply) => {
                (TaskPayload::Cancelled, TaskStatus::Cancelled, format!("tool '{tool}' was cancelled"))
            }
            Some(reply) => match response(tool, reply) {
                CallToolResponse::Complete(result) => {
                    let failed = result.is_error == Some(true);
                    let object = match serde_json::to_value(result) {
                        Ok(serde_json::Value::Object(o)) => o,
                        _ => JsonObject::new(),
                    };
                    e.bytes = serde_json::to_vec(&object).map_or(0, |v| v.len());
                    let message = if failed { "ended with a tool error" } else { "completed" };
                    (TaskPayload::Completed { result: object }, TaskStatus::Completed, message.to_owned())
                }
                _ => (
                    TaskPayload::Failed {
                        error: error_object(&ErrorData::internal_error("the call ended without a result", None)),
                    },
                    TaskStatus::Failed,
                    "failed".to_owned(),
                ),
            },
        };
        e.pending.clear();
        e.driver = None;
        e.end = Some((payload, Instant::now()));
        // Kept for KEEP_ENDED from now: the TTL says so.
        e.task.ttl_ms = Some((e.created.elapsed() + self.keep_ended).as_millis() as u64);
        e.touch(status, message);
        let owner = e.owner;
        Self::evict(&mut tasks, owner, usize::MAX, Some(id));
    }

    fn owned<'a>(tasks: &'a mut HashMap<String, Entry>, owner: Owner, id: &str) -> Result<&'a mut Entry, ErrorData> {
        tasks.get_mut(id).filter(|e| e.owner == owner).ok_or_else(unknown)
    }

    fn get(&self, owner: Owner, id: &str) -> Result<DetailedTask, ErrorData> {
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        let e = Self::owned(&mut tasks, owner, id)?;
        if e.end.is_none() && e.pending.is_empty() && e.task.status == TaskStatus::InputRequired {
            e.touch(TaskStatus::Working, "running");
        }
        Ok(e.detailed())
    }

    /// Deliver answers: each key that names an outstanding question answers it (an answer that
    /// is not an `ElicitResult` denies); other keys are ignored, as the extension says.
    fn update(&self, owner: Owner, id: &str, responses: InputResponses) -> Result<(), ErrorData> {
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        let e = Self::owned(&mut tasks, owner, id)?;
        for (key, value) in responses {
            if let Some(p) = e.pending.remove(&key) {
                let _ = p.answer.send(serde_json::from_value::<ElicitResult>(value).ok());
            }
        }
        if e.end.is_none() && e.pending.is_empty() {
            e.touch(TaskStatus::Working, "running");
        }
        Ok(())
    }

    /// Cancel task `id`'s call; outstanding questions are denied. The task settles when the
    /// call has ended (its processes gone).
    fn cancel(&self, owner: Owner, id: &str) -> Result<(), ErrorData> {
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        let e = Self::owned(&mut tasks, owner, id)?;
        if e.end.is_none() && !e.cancel_requested {
            e.cancel_requested = true;
            e.cancel.cancel();
            e.pending.clear();
            e.touch(TaskStatus::Working, "cancelling: the tool is being stopped");
        }
        Ok(())
    }

    /// Cancel the tasks of `owner` (all when `None`), wait until their calls have ended and
    /// forget them.
    pub(crate) async fn close(&self, owner: Option<Owner>) {
        let drivers: Vec<JoinHandle<()>> = {
            let mut tasks = self.lock();
            tasks
                .values_mut()
                .filter(|e| owner.is_none_or(|o| e.owner == o))
                .filter_map(|e| {
                    e.cancel_requested = true;
                    e.cancel.cancel();
                    e.pending.clear();
                    e.driver.take()
                })
                .collect()
        };
        for driver in drivers {
            let _ = driver.await;
        }
        self.lock().retain(|_, e| owner.is_some_and(|o| e.owner != o));
    }
}

/// Wait for a cancelled call to end, denying whatever it still asks.
async fn stop(running: &mut Running) {
    loop {
        tokio::select! {
            _ = &mut running.work => return,
            asked = running.questions.recv() => if asked.is_none() {
                let _ = (&mut running.work).await;
                return;
            },
        }
    }
}

fn joined(done: Result<Result<CallReply, RuntimeError>, tokio::task::JoinError>) -> Result<CallReply, RuntimeError> {
    done.unwrap_or_else(|e| Err(RuntimeError::Other(format!("the call failed: {e}"))))
}

fn succeeded(reply: &Result<CallReply, RuntimeError>) -> bool {
    matches!(
        reply,
        Ok(CallReply::Outcome(ExecutionOutcome::Completed { result: Ok(_), .. }) | CallReply::Handle { .. })
    )
}

fn error_object(error: &ErrorData) -> JsonObject {
    match serde_json::to_value(error) {
        Ok(serde_json::Value::Object(o)) => o,
        _ => JsonObject::new(),
    }
}

/// A session's view of a store: which owner its requests act as, and what its end cancels.
#[derive(Debug, Clone)]
pub(crate) struct SessionTasks {
    store: Arc<TaskStore>,
    session: Owner,
    /// The store is this session's alone (stdio): its end cancels every task in it.
    own_store: bool,
}

impl SessionTasks {
    /// A session with a store of its own.
    pub(crate) fn own() -> Self {
        Self { store: TaskStore::new(), session: Owner::new(), own_store: true }
    }

    /// A session in a store shared with others (HTTP).
    pub(crate) fn shared(store: Arc<TaskStore>) -> Self {
        Self { store, session: Owner::new(), own_store: false }
    }

    /// Whom `ctx`'s request acts as: its session, or — a stateless request (protocol
    /// 2026-07-28, no `initialize`), whose server lives for that request only — the principal
    /// that every request of this server shares (over HTTP, holders of the one bearer token).
    fn owner(&self, ctx: &RequestContext<RoleServer>) -> Owner {
        let stateless = ctx.protocol_version().is_some_and(|v| !v.has_initialize());
        if stateless { self.store.principal } else { self.session }
    }

    /// Whether `ctx`'s `tools/call` may become a task: its request declared the extension and
    /// its owner has room for one more.
    pub(crate) fn offered(&self, ctx: &RequestContext<RoleServer>) -> bool {
        ctx.client_capabilities().is_some_and(|c| c.supports_tasks()) && self.store.has_room(self.owner(ctx))
    }

    /// Cancel this session's tasks (every task of its own store) and wait for their ends.
    pub(crate) async fn close(&self) {
        self.store.close((!self.own_store).then_some(self.session)).await;
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, ctx: &RequestContext<RoleServer>, id: &str) -> Result<DetailedTask, ErrorData> {
        self.store.get(self.owner(ctx), id)
    }

    /// `tasks/update`.
    pub(crate) fn update(
        &self,
        ctx: &RequestContext<RoleServer>,
        id: &str,
        responses: InputResponses,
    ) -> Result<(), ErrorData> {
        self.store.update(self.owner(ctx), id, responses)
    }

    /// `tasks/cancel`.
    pub(crate) fn cancel(&self, ctx: &RequestContext<RoleServer>, id: &str) -> Result<(), ErrorData> {
        self.store.cancel(self.owner(ctx), id)
    }
}

/// `capabilities` with the tasks extension declared.
pub(crate) fn advertise(mut capabilities: ServerCapabilities) -> ServerCapabilities {
    capabilities.extensions.get_or_insert_with(Default::default).insert(TASKS_EXTENSION_ID.into(), JsonObject::new());
    capabilities
}

/// Whether the client of `ctx` can be sent elicitations in `inputRequests`.
fn can_elicit(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.client_capabilities().and_then(|c| c.elicitation).is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// How the first moments of a call went.
enum First {
    Done(Result<CallReply, RuntimeError>),
    Asked(Asked),
    Slow,
    Cancelled,
}

/// Run `call` for a client that declared tasks ([`SessionTasks::offered`]): its result if it
/// ends within [`INLINE_FOR`] without asking, else a task.
pub(crate) async fn call(
    server: &JpMcp,
    name: &str,
    mut call: ToolCall,
    cancel: CancellationToken,
    slot: OwnedSemaphorePermit,
    ctx: &RequestContext<RoleServer>,
) -> CallToolResponse {
    let (questions, asked) = ask::channel();
    let questions = can_elicit(ctx).then_some(questions);
    call.inquirer = Some(Arc::new(elicit::ElicitInquirer::new(ctx, questions.clone())));
    // A wrapped server's questions go to the task too; its progress nowhere (the extension has
    // no progress for tasks): the call's caller is given no progress token.
    let mut quiet = ctx.clone();
    quiet.meta.remove("progressToken");
    let caller = forward::Caller::new(&server.session, &quiet, questions.clone());
    let answerer = elicit::Elicitor::new(ctx, questions);
    let app = server.app.clone();
    let handles = server.handles_for(ctx).await;
    let work = tokio::spawn(async move {
        let _slot = slot;
        let handles = handles?;
        forward::CALLER.scope(caller, app.agent_call(call, &handles, &answerer)).await
    });
    let mut running = Running { work, questions: asked };
    let inline = tokio::time::sleep(INLINE_FOR);
    tokio::pin!(inline);
    let mut open = true;
    let first = loop {
        tokio::select! {
            done = &mut running.work => break First::Done(joined(done)),
            asked = running.questions.recv(), if open => match asked {
                Some(asked) => break First::Asked(asked),
                None => open = false,
            },
            () = &mut inline => break First::Slow,
            () = ctx.ct.cancelled() => break First::Cancelled,
        }
    };
    let first = match first {
        First::Done(reply) => return response(name, reply),
        First::Cancelled => {
            cancel.cancel();
            stop(&mut running).await;
            return tool_error(format!("tool '{name}' was cancelled"));
        }
        First::Asked(asked) => Some(asked),
        First::Slow => None,
    };
    let owner = server.tasks.owner(ctx);
    match server.tasks.store.create(owner, name.to_owned(), running, cancel.clone(), first) {
        Ok(task) => CallToolResponse::Task(CreateTaskResult::new(task)),
        Err(why) => {
            // No task could hold the call: it is stopped rather than left unreachable.
            cancel.cancel();
            tool_error(format!("tool '{name}' was stopped: {why}; call it again"))
        }
    }
}

#[cfg(test)]
mod tests;
