//! Request failures: [`HostError`] (what a tool is told) and [`BackendError`] (what an HTTP
//! client or process runner reports). [`HostError::code`] is the one place failures map to D11
//! error codes.

use crate::cancel::CancelReason;
use crate::files::FilesError;
use crate::protocol::{ErrorCode, RpcError};

/// A failed request. [`HostError::code`] maps each variant to its D11 code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// Malformed message.
    #[error("{0}")]
    InvalidRequest(String),
    /// Unknown method.
    #[error("{0}")]
    MethodNotFound(String),
    /// Bad parameters.
    #[error("{0}")]
    InvalidParams(String),
    /// The request would carry more than the size cap.
    #[error("{0}")]
    TooLarge(String),
    /// The policy (or the user) refused.
    #[error("{0}")]
    AccessDenied(String),
    /// No such file or resource.
    #[error("{0}")]
    NotFound(String),
    /// The target exists.
    #[error("{0}")]
    AlreadyExists(String),
    /// Timed out.
    #[error("{0}")]
    Timeout(String),
    /// Cancelled.
    #[error("{0}")]
    Cancelled(String),
    /// This platform or host lacks the capability.
    #[error("{0}")]
    Unavailable(String),
    /// The host failed.
    #[error("{0}")]
    Internal(String),
}

impl HostError {
    /// The same error with its message passed through `f` (the dispatcher scrubs secrets from
    /// every message this way).
    pub fn map_message(self, f: impl FnOnce(&str) -> String) -> Self {
        match self {
            Self::InvalidRequest(m) => Self::InvalidRequest(f(&m)),
            Self::MethodNotFound(m) => Self::MethodNotFound(f(&m)),
            Self::InvalidParams(m) => Self::InvalidParams(f(&m)),
            Self::TooLarge(m) => Self::TooLarge(f(&m)),
            Self::AccessDenied(m) => Self::AccessDenied(f(&m)),
            Self::NotFound(m) => Self::NotFound(f(&m)),
            Self::AlreadyExists(m) => Self::AlreadyExists(f(&m)),
            Self::Timeout(m) => Self::Timeout(f(&m)),
            Self::Cancelled(m) => Self::Cancelled(f(&m)),
            Self::Unavailable(m) => Self::Unavailable(f(&m)),
            Self::Internal(m) => Self::Internal(f(&m)),
        }
    }

    /// The D11 error code of this error. This is the only mapping from failures to codes.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::InvalidRequest(_) => ErrorCode::InvalidRequest,
            Self::MethodNotFound(_) | Self::Unavailable(_) => ErrorCode::MethodNotFound,
            Self::InvalidParams(_) | Self::TooLarge(_) => ErrorCode::InvalidParams,
            Self::AccessDenied(_) => ErrorCode::AccessDenied,
            Self::NotFound(_) => ErrorCode::NotFound,
            Self::AlreadyExists(_) => ErrorCode::AlreadyExists,
            Self::Timeout(_) => ErrorCode::Timeout,
            Self::Cancelled(_) => ErrorCode::Cancelled,
            Self::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// As a JSON-RPC error object.
    pub fn to_rpc(&self) -> RpcError {
        RpcError::new(self.code(), self.to_string())
    }

    /// The answer to a `method` request of a call that was stopped ([`CancelReason`]): one that
    /// ran out of time is a [`Timeout`](Self::Timeout), one cancelled is
    /// [`Cancelled`](Self::Cancelled). `waiting`: the request had started and was waiting (for a
    /// question's answer, a server, a file) when the call was stopped; else it came after.
    pub fn stopped(method: &str, reason: CancelReason, waiting: bool) -> Self {
        let why = |r: String| if r.is_empty() { String::new() } else { format!(": {r}") };
        match reason {
            CancelReason::TimedOut(r) if waiting => {
                Self::Timeout(format!("the call ran out of time while waiting for an answer to {method}{}", why(r)))
            }
            CancelReason::TimedOut(r) => {
                Self::Timeout(format!("the call had run out of time before {method} was sent{}", why(r)))
            }
            CancelReason::Cancelled(r) => Self::Cancelled(format!("the call was cancelled{}", why(r))),
        }
    }

    /// From a JSON-RPC error object (the tool side of the SDK).
    pub fn from_rpc(err: &RpcError) -> Self {
        let m = err.message.clone();
        match ErrorCode::from_code(err.code) {
            Some(ErrorCode::InvalidRequest) => Self::InvalidRequest(m),
            Some(ErrorCode::MethodNotFound) => Self::MethodNotFound(m),
            Some(ErrorCode::InvalidParams) => Self::InvalidParams(m),
            Some(ErrorCode::AccessDenied) => Self::AccessDenied(m),
            Some(ErrorCode::NotFound) => Self::NotFound(m),
            Some(ErrorCode::AlreadyExists) => Self::AlreadyExists(m),
            Some(ErrorCode::Timeout) => Self::Timeout(m),
            Some(ErrorCode::Cancelled) => Self::Cancelled(m),
            Some(ErrorCode::InternalError) | None => Self::Internal(m),
        }
    }
}

impl From<RpcError> for HostError {
    fn from(e: RpcError) -> Self {
        Self::from_rpc(&e)
    }
}

impl From<FilesError> for HostError {
    fn from(e: FilesError) -> Self {
        let m = e.to_string();
        match e {
            FilesError::NotFound(_) => Self::NotFound(m),
            FilesError::AlreadyExists(_) => Self::AlreadyExists(m),
            FilesError::IsADirectory(_) | FilesError::NotADirectory(_) | FilesError::InvalidPattern(_) => {
                Self::InvalidParams(m)
            }
            FilesError::InvalidPath(_) => Self::AccessDenied(format!("Access denied: {m}")),
            FilesError::Unsupported(_) => Self::Unavailable(m),
            FilesError::Io { .. } => Self::Internal(m),
        }
    }
}

/// A failure of an HTTP client or process runner backend.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// The backend does not exist on this platform.
    #[error("{0}")]
    Unavailable(String),
    /// The operation timed out.
    #[error("{0}")]
    Timeout(String),
    /// The operation was cancelled.
    #[error("{0}")]
    Cancelled(String),
    /// The program or resource does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The output exceeded the cap.
    #[error("{0}")]
    TooLarge(String),
    /// Anything else (connection refused, spawn failed, …).
    #[error("{0}")]
    Failed(String),
}

impl From<BackendError> for HostError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::Unavailable(m) => Self::Unavailable(m),
            BackendError::Timeout(m) => Self::Timeout(m),
            BackendError::Cancelled(m) => Self::Cancelled(m),
            BackendError::NotFound(m) => Self::NotFound(m),
            BackendError::TooLarge(m) => Self::TooLarge(m),
            BackendError::Failed(m) => Self::Internal(m),
        }
    }
}
