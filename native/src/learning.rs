//! Learning mode (`jp policy suggest -- ARGS…`): the command runs as it would, but every
//! question is answered "no" at once and every refusal is recorded, with what it would have
//! needed. Nothing is widened during the run, and a tool that goes on after a refusal has its
//! later requests decided (and recorded) too. The proposal is made afterwards from the record
//! (`jp_core::policy::widen`), for the user to approve like any change (`jp trust`).
//!
//! A process runs in learning mode as a whole: [`start`] is called once, before the command.

use std::sync::{Arc, Mutex, OnceLock};

use jp_core::BoxFuture;
use jp_core::host::{DispatchEvents, Inquirer, Inquiry, InquiryAnswer, TraceEvent};
use jp_core::protocol::Id;

use crate::app::AppOptions;

/// The refusals of a run in learning mode.
#[derive(Debug, Default)]
pub struct Recorder {
    refusals: Mutex<Vec<TraceEvent>>,
}

impl Recorder {
    /// Every decision that did not let the request go ahead, in order.
    pub fn refusals(&self) -> Vec<TraceEvent> {
        self.refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl DispatchEvents for Recorder {
    fn decided(&self, event: &TraceEvent) {
        if !event.allowed {
            self.refusals.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(event.clone());
        }
    }
}

static ACTIVE: OnceLock<Arc<Recorder>> = OnceLock::new();

/// Put this process in learning mode; the recorder of its refusals.
pub fn start() -> Arc<Recorder> {
    ACTIVE.get_or_init(Arc::default).clone()
}

/// Whether this process runs in learning mode.
pub fn active() -> bool {
    ACTIVE.get().is_some()
}

/// Whether a process that may reach no URL still gets jp's egress proxy: in learning mode it
/// does, where user namespaces exist, so that what it tries is decided (refused: its policy
/// allows nothing) and recorded instead of failing unseen in the kernel.
pub fn network_seen() -> bool {
    active() && jp_sandbox::user_namespaces().is_ok()
}

/// The options of an app in learning mode: questions answered "no", decisions also recorded.
pub fn apply(mut options: AppOptions) -> AppOptions {
    if let Some(recorder) = ACTIVE.get() {
        options.inquirer = Arc::new(Learning);
        options.trace = Some(Arc::new(Both(options.trace.take(), recorder.clone())));
    }
    options
}

/// The inquirer of a call: in learning mode always the app's (no client, person or model is
/// asked), otherwise the call's own when it has one.
pub fn inquirer_for(call: Option<&Arc<dyn Inquirer>>, app: &Arc<dyn Inquirer>) -> Arc<dyn Inquirer> {
    match call {
        Some(own) if !active() => own.clone(),
        _ => app.clone(),
    }
}

/// Learning mode's answer to every question: no, recorded.
struct Learning;

impl Inquirer for Learning {
    fn ask<'a>(&'a self, _: &'a Inquiry) -> BoxFuture<'a, InquiryAnswer> {
        Box::pin(async {
            InquiryAnswer::Deny("learning mode asks no one: refused and recorded for `jp policy suggest`".into())
        })
    }
}

/// Decisions to the run's own trace (`--trace`), if any, and to the recorder.
struct Both(Option<Arc<dyn DispatchEvents>>, Arc<Recorder>);

impl DispatchEvents for Both {
    fn pending(&self, request_id: &Id, reason: &str) {
        if let Some(t) = &self.0 {
            t.pending(request_id, reason);
        }
    }
    fn decided(&self, event: &TraceEvent) {
        if let Some(t) = &self.0 {
            t.decided(event);
        }
        self.1.decided(event);
    }
}
