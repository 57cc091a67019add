//! `grep` over the real directory: walk with `ignore` and search with `grep-searcher` in one
//! parallel pass, as ripgrep does, opening each file without following links.
//!
//! The search stops once the matches collected exceed [`GrepQuery::max_bytes`]: a running total
//! shared by the walker threads, checked before each file and, through the sink, after each
//! line, so a pattern matching everything in a large project costs about the cap in memory, not
//! the whole match set. The file whose lines crossed the cap is kept; the dispatcher trims it.

use std::io::{self, Read as _};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use jp_core::files::{FilesError, FilesResult, GrepQuery};
use jp_core::policy::WorkspacePath;
use jp_core::protocol::{GrepFileMatch, GrepLine};
use rustix::fs::FileType;

use super::{FsProjectFiles, LINK_REFUSED, map_err, nofollow, rel};

/// Largest file `grep` will search: each walker thread (at most 8) holds one file whole, so this
/// bounds the search's memory besides the match budget; a bigger file is skipped.
const GREP_MAX_FILE: u64 = 16 * 1024 * 1024;

/// Bytes one line counts for, as in [`jp_core::files::match_bytes`].
const LINE_OVERHEAD: usize = 16;

/// The running total of collected bytes and whether the cap was crossed.
struct Budget {
    max: usize,
    used: AtomicUsize,
    stop: AtomicBool,
}

impl Budget {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Count `n` more bytes; true (and stop everyone) once the total exceeds the cap.
    fn spend(&self, n: usize) -> bool {
        let total = self.used.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        if total > self.max {
            self.stop.store(true, Ordering::Relaxed);
        }
        self.stopped()
    }
}

impl FsProjectFiles {
    /// Search one file, opened beneath the root without following links (a link swapped in
    /// after the walk listed it is not followed). Unreadable, binary and huge files are skipped.
    fn grep_file(
        &self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        path: &WorkspacePath,
        budget: &Budget,
    ) -> Option<GrepFileMatch> {
        if budget.stopped() {
            return None;
        }
        let (mut file, len) = self.open_regular(path).ok()?;
        if len > GREP_MAX_FILE {
            return None;
        }
        let mut bytes = Vec::with_capacity(len as usize);
        file.read_to_end(&mut bytes).ok()?;
        // Binary files (a NUL byte anywhere) are skipped, as in the in-memory grep.
        if bytes.contains(&0) {
            return None;
        }
        // The path counts once, charged with the first line.
        let mut sink = Collect { lines: Vec::new(), budget, pending: path.as_str().len() };
        searcher.search_slice(matcher, &bytes, &mut sink).ok()?;
        (!sink.lines.is_empty()).then(|| GrepFileMatch { path: path.as_str().to_owned(), lines: sink.lines })
    }

    pub(super) fn grep_sync(&self, query: &GrepQuery) -> FilesResult<Vec<GrepFileMatch>> {
        let roots = if query.paths.is_empty() { vec![WorkspacePath::root()] } else { query.paths.clone() };
        let matcher = RegexMatcherBuilder::new()
            .build(query.regex.as_str())
            .map_err(|e| FilesError::InvalidPattern(e.to_string()))?;
        let context = query.context as usize;
        let new_searcher =
            || SearcherBuilder::new().line_number(true).before_context(context).after_context(context).build();
        let budget = Budget { max: query.max_bytes, used: AtomicUsize::new(0), stop: AtomicBool::new(false) };
        let results = Mutex::new(Vec::new());
        let push = |m: GrepFileMatch| results.lock().unwrap_or_else(|e| e.into_inner()).push(m);
        for root in &roots {
            if budget.stopped() {
                break;
            }
            let fd = self.open_nofollow(root, nofollow::STAT).map_err(|e| map_err(root, e))?;
            match nofollow::file_type(&fd).map_err(|e| map_err(root, e.into()))?.0 {
                FileType::Directory => {}
                FileType::Symlink => {
                    return Err(FilesError::Io { path: root.display().into(), message: LINK_REFUSED.into() });
                }
                _ => {
                    // An explicitly named file is searched whatever its extension or name.
                    if query.searchable(root)
                        && let Some(m) = self.grep_file(&mut new_searcher(), &matcher, root, &budget)
                    {
                        push(m);
                    }
                    continue;
                }
            }
            let walk_root = self.root.join(rel(root));
            ignore::WalkBuilder::new(&walk_root)
                .hidden(true)
                .git_ignore(true)
                .require_git(false)
                .follow_links(false)
                .threads(std::thread::available_parallelism().map_or(2, |n| n.get()).min(8))
                .build_parallel()
                .run(|| {
                    let mut searcher = new_searcher();
                    let (matcher, budget, push) = (&matcher, &budget, &push);
                    Box::new(move |entry| {
                        if budget.stopped() {
                            return ignore::WalkState::Quit;
                        }
                        if let Ok(entry) = entry
                            && entry.file_type().is_some_and(|t| t.is_file())
                            && let Ok(relative) = entry.path().strip_prefix(&self.root)
                            && let Some(p) = relative.to_str().and_then(|s| WorkspacePath::parse(s).ok())
                            && query.extension_ok(&p)
                            && query.searchable(&p)
                            && let Some(m) = self.grep_file(&mut searcher, matcher, &p, budget)
                        {
                            push(m);
                        }
                        if budget.stopped() { ignore::WalkState::Quit } else { ignore::WalkState::Continue }
                    })
                });
        }
        let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
        results.sort_by(|a, b| a.path.cmp(&b.path));
        results.dedup_by(|a, b| a.path == b.path);
        Ok(results)
    }
}

/// Collects matched and context lines with 1-based numbers, charging each to the budget and
/// stopping the file once the budget is spent.
struct Collect<'b> {
    lines: Vec<GrepLine>,
    budget: &'b Budget,
    /// Bytes to charge with the next line (the path, before the first).
    pending: usize,
}

impl Collect<'_> {
    /// Keep one line; false once the cap is crossed (by this search or another thread's).
    fn keep(&mut self, line: GrepLine) -> bool {
        let n = std::mem::take(&mut self.pending) + line.content.len() + LINE_OVERHEAD;
        self.lines.push(line);
        !self.budget.spend(n)
    }
}

fn line_text(bytes: &[u8]) -> String {
    let trimmed = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
    String::from_utf8_lossy(trimmed).into_owned()
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = mat.line_number().unwrap_or(0);
        let mut more = true;
        for (i, line) in mat.lines().enumerate() {
            more &= self.keep(GrepLine { line_number: first + i as u64, content: line_text(line), is_match: true });
        }
        Ok(more)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        Ok(self.keep(GrepLine {
            line_number: ctx.line_number().unwrap_or(0),
            content: line_text(ctx.bytes()),
            is_match: false,
        }))
    }
}
