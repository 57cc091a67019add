//! The in-memory buffers of a guest's open files, and the byte budget they are charged to.
//!
//! A guest's linear memory is capped by the store's limit, but file buffers live on the host:
//! without a budget a component could open many files and grow each to the file-size cap. So
//! every buffer of a call is charged to one [`Budget`] (as large as the memory limit) on every
//! growth and released when the buffer is gone (closed and written, or dropped); a growth over
//! the budget fails with `insufficient-memory`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use wasmtime_wasi::p2::{InputStream, OutputStream, Pollable, StreamError, StreamResult};

/// Bytes of file buffers one call may hold.
#[derive(Debug)]
pub(super) struct Budget {
    limit: usize,
    used: AtomicUsize,
}

/// A growth that the budget does not allow.
#[derive(Debug)]
pub(super) struct OverBudget;

impl Budget {
    pub(super) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self { limit, used: AtomicUsize::new(0) })
    }

    fn charge(&self, n: usize) -> Result<(), OverBudget> {
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(n).filter(|&total| total <= self.limit)
            })
            .map(|_| ())
            .map_err(|_| OverBudget)
    }

    fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::SeqCst);
    }

    /// Bytes charged now.
    #[cfg(test)]
    pub(super) fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }
}

/// An open file's content; `charged` bytes of its budget are held until it is dropped.
pub(super) struct FileBuf {
    pub(super) data: Vec<u8>,
    pub(super) dirty: bool,
    charged: usize,
    budget: Arc<Budget>,
}

pub(super) type Shared = Arc<Mutex<FileBuf>>;

impl FileBuf {
    /// A buffer holding `data` (already in memory), charged to `budget`.
    pub(super) fn new(budget: &Arc<Budget>, mut data: Vec<u8>, dirty: bool) -> Result<Self, OverBudget> {
        data.shrink_to_fit();
        budget.charge(data.capacity())?;
        Ok(Self { charged: data.capacity(), data, dirty, budget: budget.clone() })
    }

    /// Make room for `len` bytes (at most `max`), charging the growth first: capacity doubles
    /// while the budget allows, so appending in small writes stays linear.
    fn reserve(&mut self, len: usize, max: usize) -> Result<(), OverBudget> {
        if len <= self.charged {
            return Ok(());
        }
        let doubled = self.charged.saturating_mul(2).clamp(len, max.max(len));
        let target = if self.budget.charge(doubled - self.charged).is_ok() {
            doubled
        } else {
            self.budget.charge(len - self.charged)?;
            len
        };
        self.charged = target;
        self.data.reserve_exact(target - self.data.len());
        Ok(())
    }

    /// Set the length to `len` (zero-filled when growing).
    pub(super) fn resize(&mut self, len: usize, max: usize) -> Result<(), OverBudget> {
        self.reserve(len, max)?;
        self.data.resize(len, 0);
        self.dirty = true;
        Ok(())
    }
}

impl Drop for FileBuf {
    fn drop(&mut self) {
        self.budget.release(self.charged);
    }
}

/// Why a write into a buffer failed.
#[derive(Debug)]
pub(super) enum WriteError {
    /// Past the file-size limit.
    TooLarge,
    /// Past the call's budget.
    Memory(OverBudget),
}

pub(super) fn write_at(b: &mut FileBuf, at: usize, bytes: &[u8], max: usize) -> Result<(), WriteError> {
    let end = at.checked_add(bytes.len()).ok_or(WriteError::TooLarge)?;
    if end > max {
        return Err(WriteError::TooLarge);
    }
    if b.data.len() < end {
        b.reserve(end, max).map_err(WriteError::Memory)?;
        b.data.resize(end, 0);
    }
    b.data[at..end].copy_from_slice(bytes);
    b.dirty = true;
    Ok(())
}

/// A write (or append, `position: None`) stream into a file's buffer.
pub(super) struct BufferStream {
    pub(super) buf: Shared,
    pub(super) position: Option<usize>,
    pub(super) max: usize,
}

#[wasmtime_wasi::async_trait]
impl Pollable for BufferStream {
    async fn ready(&mut self) {}
}

#[wasmtime_wasi::async_trait]
impl OutputStream for BufferStream {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        let mut b = self.buf.lock().map_err(|_| StreamError::trap("file buffer poisoned"))?;
        let at = self.position.unwrap_or(b.data.len());
        write_at(&mut b, at, &bytes, self.max).map_err(|e| {
            // As an OS error, so that `filesystem-error-code` says `file-too-large` or
            // `insufficient-memory` (wasi-libc does not ask it for file streams today: the
            // guest sees EIO there; `descriptor.write` reports the code directly).
            let errno = match e {
                WriteError::TooLarge => rustix::io::Errno::FBIG,
                WriteError::Memory(_) => rustix::io::Errno::NOMEM,
            };
            StreamError::LastOperationFailed(std::io::Error::from_raw_os_error(errno.raw_os_error()).into())
        })?;
        if let Some(p) = &mut self.position {
            *p += bytes.len();
        }
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

/// A read stream over a file's buffer: shares it instead of copying it, so streams cost no
/// memory of their own.
pub(super) struct BufferInput {
    pub(super) buf: Shared,
    pub(super) position: usize,
}

#[wasmtime_wasi::async_trait]
impl Pollable for BufferInput {
    async fn ready(&mut self) {}
}

impl InputStream for BufferInput {
    fn read(&mut self, size: usize) -> StreamResult<bytes::Bytes> {
        let b = self.buf.lock().map_err(|_| StreamError::trap("file buffer poisoned"))?;
        if self.position >= b.data.len() {
            return Err(StreamError::Closed);
        }
        let end = self.position.saturating_add(size).min(b.data.len());
        let chunk = bytes::Bytes::copy_from_slice(&b.data[self.position..end]);
        self.position = end;
        Ok(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_charged_on_growth_and_released_on_drop() {
        let budget = Budget::new(100);
        let mut a = FileBuf::new(&budget, b"0123456789".to_vec(), false).unwrap();
        assert_eq!(budget.used(), 10);
        write_at(&mut a, 10, &[1; 50], 1000).unwrap();
        assert!(budget.used() >= 60 && budget.used() <= 100, "{}", budget.used());
        let mut b = FileBuf::new(&budget, Vec::new(), false).unwrap();
        // Past the budget: refused, and nothing is charged for the attempt.
        let before = budget.used();
        assert!(matches!(write_at(&mut b, 0, &[2; 80], 1000), Err(WriteError::Memory(_))));
        assert_eq!(budget.used(), before);
        // Over the file limit is a different error.
        assert!(matches!(write_at(&mut b, 0, &[2; 20], 10), Err(WriteError::TooLarge)));
        drop(a);
        write_at(&mut b, 0, &[2; 80], 1000).unwrap();
        drop(b);
        assert_eq!(budget.used(), 0);
    }
}
