//! Starting an MCP server (the other half of [`McpRuntime`](super::client::McpRuntime)): a
//! stdio server spawned under the OS sandbox — the workspace per its policy's
//! `process_grant`, system directories read but not executable (only the program, the ELF
//! loader, a script's interpreter and `exec` entries may be executed), system config files and
//! `read_paths` read, a private `HOME`/`TMPDIR`, network per host and port through the egress
//! proxy when its policy allows URLs, a clean environment plus `env` — its stderr drained into
//! a tail; or a Streamable-HTTP server reached by its URL, checked again on connect.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jp_core::runtime::{McpServerConfig, McpServerError, RuntimeError};
use rmcp::ServiceExt;
use rustix::process::Signal;

use super::bounds::{BoundedTransport, MAX_MESSAGE};
use super::forward::Inbox;
use super::pipes::ServerPipes;
use super::wrapped::Wrapped;
use crate::process::{GroupGuard, find_program, private_env, signal_group};
use crate::sandbox::{ChildCommand, DirectAccess, SandboxMode, SandboxSpec, read_paths};

use super::client::{McpRuntime, START_TIMEOUT, STDERR_TAIL, Server, with_tail};
use crate::runtime::tail::StderrTail;

/// The ELF program interpreters a dynamically linked program needs to start.
const ELF_LOADERS: [&str; 4] = [
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/ld-linux-aarch64.so.1",
    "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
    "/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1",
];

/// A script's interpreter (`#!/usr/bin/python3`, or `#!/usr/bin/env node` → `env` and `node`).
fn script_interpreter(program: &std::path::Path, path_var: Option<&str>, cwd: &std::path::Path) -> Vec<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
    let Some(line) = head[..n].strip_prefix(b"#!") else { return Vec::new() };
    let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next().unwrap_or_default()).into_owned();
    let mut words = line.split_whitespace();
    let mut out = Vec::new();
    if let Some(first) = words.next() {
        out.push(std::fs::canonicalize(first).unwrap_or_else(|_| PathBuf::from(first)));
        if first.ends_with("/env")
            && let Some(next) = words.find(|w| !w.starts_with('-'))
            && let Some(found) = find_program(next, path_var, cwd)
        {
            out.push(std::fs::canonicalize(&found).unwrap_or(found));
        }
    }
    out
}

impl McpRuntime {
    pub(super) async fn start(&self, name: &str) -> Result<Server, RuntimeError> {
        let config = self.servers.get(name).ok_or_else(|| McpServerError::NotConfigured { server: name.to_owned() })?;
        let who = format!("MCP server '{name}'");
        if let Some(url) = &config.url {
            return self.connect(name, config, url).await;
        }
        let command =
            config.command.as_deref().ok_or_else(|| McpServerError::NoCommandOrUrl { server: name.to_owned() })?;
        let path_var = self.env.get("PATH").map(String::as_str);
        let program = find_program(command, path_var, &self.workspace)
            .ok_or_else(|| McpServerError::ProgramNotFound { server: name.to_owned(), program: command.to_owned() })?;
        let program = std::fs::canonicalize(&program).unwrap_or(program);
        let policy = config.policy().map_err(|source| McpServerError::Policy { server: name.to_owned(), source })?;
        let workspace = std::fs::canonicalize(&self.workspace).unwrap_or_else(|_| self.workspace.clone());
        // Arguments naming existing files (a script) are readable in the sandbox.
        let script_files: Vec<PathBuf> = config
            .args
            .iter()
            .filter(|a| !a.starts_with('-'))
            .map(|a| workspace.join(a))
            .filter(|p| p.is_file())
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .filter(|p| !p.starts_with(&workspace))
            .collect();
        let scratch = tempfile::Builder::new()
            .prefix("jp-mcp-")
            .tempdir()
            .map_err(|e| RuntimeError::Spawn { tool: who.clone(), message: format!("no private HOME: {e}") })?;
        let mut env = private_env(&self.env, |k| config.env.iter().any(|e| e == k), scratch.path());
        // A bound secret is never in its environment: a placeholder is (see `egress::secrets`).
        if let Some(b) = policy.secret_bindings().iter().find(|b| config.env.contains(&b.name)) {
            return Err(RuntimeError::Sandbox(format!(
                "{who} was not started: {} is bound to origins by its access.secrets and also listed in its env, which would hand it the value; remove it from env (it gets a placeholder either way)",
                b.name
            )));
        }
        let os_sandbox = !matches!(self.sandbox, SandboxMode::Disabled);
        let broker =
            crate::egress::SecretBroker::for_process(&policy, &self.env, &who, os_sandbox, scratch.path(), &mut env)
                .map_err(RuntimeError::Sandbox)?;
        let mut network = false;
        let sandbox = match self.sandbox {
            SandboxMode::Enforce => {
                let grant = policy.process_grant().map_err(|why| {
                    RuntimeError::Sandbox(format!(
                        "{who} was not started: a server touches files and the network directly, so the OS sandbox can grant it only the whole workspace (read-only or read-write) and the network per host and port (through jp's egress proxy), and its policy cannot be held that way: {why}"
                    ))
                })?;
                // It runs its own program only: the system directories stay readable (libraries,
                // an interpreter's modules) but nothing in them may be executed, except the
                // program, the ELF loader, a script's interpreter and what `exec` lists.
                let mut may_exec = vec![program.clone()];
                may_exec.extend(ELF_LOADERS.iter().map(PathBuf::from).filter(|p| p.exists()));
                may_exec.extend(script_interpreter(&program, path_var, &workspace));
                for entry in &config.exec {
                    let found = find_program(entry, path_var, &workspace).ok_or_else(|| {
                        McpServerError::ExecNotFound { server: name.to_owned(), entry: entry.clone() }
                    })?;
                    may_exec.push(std::fs::canonicalize(&found).unwrap_or(found));
                }
                let network_seen = grant.network || crate::learning::network_seen();
                let spec =
                    SandboxSpec::for_tool(&program, &script_files, &read_paths(&self.workspace, &config.read_paths)?)
                        .exec_only(may_exec)
                        .direct_access(&DirectAccess {
                            workspace: &workspace,
                            grant: grant.workspace,
                            exec_workspace: false,
                            scratch: scratch.path(),
                            // The harmless system files common programs fail without (as for process.run).
                            system_config: true,
                            network: network_seen,
                            policy: &policy,
                        });
                if network_seen {
                    network = true;
                    env = crate::egress::with_proxy_env(env);
                }
                Some(spec.prepare().map_err(|e| RuntimeError::Sandbox(format!("{who}: {e}")))?)
            }
            SandboxMode::Disabled => None,
        };
        let mut child =
            ChildCommand::new(&program).args(&config.args).envs(&env).current_dir(&workspace).spawn(sandbox).map_err(
                |e| RuntimeError::Spawn { tool: who.clone(), message: format!("{}: {e}", program.display()) },
            )?;
        let pgid = child.id();
        let egress = child.egress.take().filter(|_| network).map(|listener| {
            let gate = jp_core::host::EgressGate::new(
                format!("mcp.{name}"),
                Arc::new(policy.clone()),
                self.inquirer.clone(),
                self.trace.clone(),
                Arc::default(),
            );
            crate::egress::serve(listener, Arc::new(gate), crate::egress::EgressLimits::default(), broker.clone())
        });
        let guard = GroupGuard(pgid);
        let (stdin, stdout, stderr) = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => (i, o, e),
            _ => return Err(RuntimeError::Spawn { tool: who, message: "pipes were not created".into() }),
        };
        // Drained always: a full stderr pipe would block the server.
        let tail = StderrTail::new(STDERR_TAIL);
        {
            let tail = tail.clone();
            tokio::spawn(async move { tail.read_from(stderr).await });
        }
        // The child is reaped by its own task; the group dies with the guard.
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
        // rmcp's client and the relay share the pipes (see relay.rs).
        let (pipes, transport) = ServerPipes::start(stdin, stdout);
        let (read, write) = tokio::io::split(transport);
        let transport =
            rmcp::transport::async_rw::AsyncRwTransport::new_client(read, write).with_max_line_length(MAX_MESSAGE);
        let transport = BoundedTransport::new(transport, Some(Inbox::start(name, &self.hub)));
        let started = tokio::time::timeout(START_TIMEOUT, Wrapped::new(name, config, &self.hub).serve(transport)).await;
        let tail_now = || tail.text();
        let service = match started {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                signal_group(pgid, Signal::KILL);
                let why = pipes.broken().map(|why| format!(" ({why})")).unwrap_or_default();
                return Err(RuntimeError::Spawn {
                    tool: who,
                    message: with_tail(format!("initialize failed: {e}{why}"), &tail_now()),
                });
            }
            Err(_) => {
                signal_group(pgid, Signal::KILL);
                return Err(RuntimeError::Spawn {
                    tool: who,
                    message: with_tail(
                        format!("it did not answer initialize within {} s", START_TIMEOUT.as_secs()),
                        &tail_now(),
                    ),
                });
            }
        };
        // jp keeps what it needs of a list itself; rmcp's cache would keep up to 512 pages.
        service.peer().set_response_cache_config(rmcp::ClientCacheConfig::disabled()).await;
        Ok(Server {
            service,
            pipes: Some(pipes),
            stderr: tail,
            pgid: Some(pgid),
            _guard: Some(guard),
            _scratch: Some(scratch),
            _egress: egress,
        })
    }

    /// Connect to a Streamable-HTTP server. Its URL was checked against the server's network
    /// rules when the configuration was read, and is checked again here.
    async fn connect(&self, name: &str, config: &McpServerConfig, url: &str) -> Result<Server, RuntimeError> {
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let who = format!("MCP server '{name}'");
        let policy = config.policy().map_err(|source| McpServerError::Policy { server: name.to_owned(), source })?;
        if !policy.check_request(&jp_core::policy::HttpCheck::new("POST", url)).is_allow() {
            return Err(McpServerError::UrlNotAllowed { server: name.to_owned(), url: url.to_owned() }.into());
        }
        crate::http::crypto_provider();
        let mut transport = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        if let Some(var) = &config.token_env {
            let token = self
                .env
                .get(var)
                .filter(|t| !t.is_empty())
                .ok_or_else(|| McpServerError::TokenUnset { server: name.to_owned(), var: var.clone() })?;
            transport.auth_header = Some(token.clone());
        }
        // One JSON body, one SSE event: one message (rmcp's defaults, named here).
        transport.max_json_response_size = MAX_MESSAGE;
        transport.max_sse_event_size = MAX_MESSAGE;
        let transport = BoundedTransport::new(
            StreamableHttpClientTransport::from_config(transport),
            Some(Inbox::start(name, &self.hub)),
        );
        let connected =
            tokio::time::timeout(START_TIMEOUT, Wrapped::new(name, config, &self.hub).serve(transport)).await;
        let service = match connected {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                return Err(RuntimeError::Spawn { tool: who, message: format!("connecting to {url} failed: {e}") });
            }
            Err(_) => {
                return Err(RuntimeError::Spawn {
                    tool: who,
                    message: format!("{url} did not answer initialize within {} s", START_TIMEOUT.as_secs()),
                });
            }
        };
        service.peer().set_response_cache_config(rmcp::ClientCacheConfig::disabled()).await;
        Ok(Server {
            service,
            pipes: None,
            stderr: StderrTail::new(0),
            pgid: None,
            _guard: None,
            _scratch: None,
            _egress: None,
        })
    }

    /// A server that died: its group is killed and the next call starts it again.
    pub(super) async fn forget(&self, name: &str, server: &Arc<Server>) {
        // Give the tail a moment to arrive when the server just died.
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Some(pgid) = server.pgid {
            signal_group(pgid, Signal::KILL);
        }
        let mut running = self.running.lock().await;
        if running.get(name).is_some_and(|s| Arc::ptr_eq(s, server)) {
            running.remove(name);
        }
    }
}
