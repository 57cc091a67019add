// Types of www/jp.js (the JpHost class underneath has wasm-bindgen's own pkg/jp_web.d.ts).

/** One policy decision on a host request of a tool. */
export interface HostEvent {
  tool: string;
  /** D11 method: fs.read, fs.write, http.get, process.run, … */
  method: string;
  /** Path, URL or command. */
  target: string;
  decision: 'allow' | 'deny' | 'ask';
  /** The rule that allowed it, or why it was refused. */
  reason: string;
  /** Whether the request went ahead (an `ask` without an answer does not). */
  allowed: boolean;
}

/** A policy question mid-call; `signal` aborts when the call ends without the answer. */
export interface Inquiry { tool: string; method: string; target: string; reason: string; signal: AbortSignal; }
/** true/'once' allow; 'all' allow the rest of the call; false deny; another string: deny with that reason. */
export type InquiryAnswer = boolean | 'once' | 'all' | string;
/** A tool's own question (`needs-input`) to answer; resolve to the answer, or undefined for none. */
export interface AskedQuestion { tool: string; question: { id: string; text: string; answerType: unknown; default?: unknown } }
export type Answerer = (asked: AskedQuestion) => unknown | Promise<unknown>;

export interface ToolInfo {
  name: string;
  summary: string;
  description?: string;
  parameters: Record<string, unknown>;
  /** The arguments' JSON Schema, as every jp-host surface shows it. */
  inputSchema: Record<string, unknown>;
  component: string;
  /** A stateful tool's RFD 009 actions (its component exports `jp:tool/stateful`); `callTool`
   * then routes its calls to `agentCall`. */
  actions?: StatefulAction[];
}

export interface ErrorInfo { message: string; trace: string[]; transient: boolean; }
export interface Question { id: string; text: string; answerType: string; default?: string; }

/** The outcome of a call (jp:tool's `outcome`) and the paths it changed. */
export type ToolOutcome = (
  | { tag: 'success'; val: string }
  | { tag: 'error'; val: ErrorInfo }
  | { tag: 'needs-input'; val: Question }
) & { changed: string[] };

/** RFD 009: what an agent may do with a stateful tool (its `action` argument). */
export type StatefulAction = 'spawn' | 'fetch' | 'apply' | 'abort';
/** A live handle's state: `running`, `waiting` (for the answer to `question`, given with
 * `apply`) or `stopped` (its end: `result`, or `error`). */
export type HandleStateName = 'running' | 'waiting' | 'stopped';

/** What a stateful command answers (as `jp mcp` does): the handle's id and state. */
export interface HandleResponse {
  /** `h_1`, `h_2`, … — unique within the host, known only to its owner. */
  id: string;
  state: HandleStateName;
  /** Output so far (running, waiting). */
  content?: string;
  /** The final output (stopped, succeeded). */
  result?: string;
  /** Why it stopped (stopped, failed). */
  error?: ErrorInfo;
  /** The pending question (waiting). */
  question?: Question;
}

/** MCP's `CallToolResult`, as the agent gets it. */
export interface CallToolResult { content: unknown[]; structuredContent?: unknown; isError: boolean }

/** The reply of a stateful command (`spawn`, `fetch`, `apply`, `abort`): `result` is MCP's
 * `CallToolResult` of it; `changed` the paths the host's handle commands changed since the
 * previous reply. A command that could not reach a handle (unknown id, bad arguments) is an
 * `error` outcome instead. */
export interface HandleOutcome { tag: 'handle'; val: HandleResponse; result: CallToolResult; changed: string[] }

/** A call through the core's handle session (`agentCall`): a stateful command's reply, or a
 * call run to its end (`result`: MCP's `CallToolResult` when the component gives content blocks). */
export type AgentOutcome = HandleOutcome | (ToolOutcome & { result?: CallToolResult });

/** A live handle as `handles(owner)` lists it. `busy` while a command runs on it (its `tool`
 * then empty); `question` is the text of a waiting one's question. */
export interface LiveHandle { id: string; tool: string; state: HandleStateName | 'busy'; question?: string }

/** Whose handles a call makes and reaches (the page's agent panel: `turn-<n>`; the edge: one
 * per caller); another owner's ids are unknown. Default `default`. */
export interface AgentCallOptions {
  owner?: string;
  /** This call's policy questions instead of `setInquirer`'s. */
  inquirer?: ((inquiry: Inquiry) => InquiryAnswer | Promise<InquiryAnswer>) | null;
  /** A stateful tool run to its end (no `action`): who answers its questions. */
  answerer?: Answerer | null;
  /** Stops a call run to its end (its instance aborted); a command on a handle stops waiting
   * (abort the handle, or close its owner, to stop the tool). */
  signal?: AbortSignal | null;
}

export type RequestResult =
  | { result: unknown }
  | { error: { code: number; message: string } };

/** A jco-transpiled component module (`jco transpile --instantiation async`). */
export interface ComponentModule {
  instantiate(getCoreModule: (path: string) => WebAssembly.Module | Promise<WebAssembly.Module>, imports: Record<string, unknown>,
    instantiateCore?: (module: WebAssembly.Module, imports?: Record<string, unknown>) => Promise<WebAssembly.Instance>): Promise<unknown>;
}

/** A project's files kept by the embedder (edge functions): keys are workspace paths, values a
 * file's bytes or "dir"; `batch` must apply all its operations or none. */
export interface ProjectStorage {
  get(path: string): Promise<Uint8Array | 'dir' | undefined>;
  put(path: string, value: Uint8Array | 'dir'): Promise<void>;
  delete(path: string): Promise<void>;
  list(): Promise<Iterable<[string, Uint8Array | 'dir']>>;
  /** Apply these writes (`value` set) and deletions (`value` null) atomically. With `expected`
   * (a `version()` reading), apply them only if the version is still that, else apply nothing
   * and throw an error whose `name` is "ProjectChanged". */
  batch(ops: { path: string; value: Uint8Array | null }[], expected?: string | number): Promise<void>;
  /** Optional: a value that every change to the project (by anyone) moves. With it, a host
   * keeps its copy of the project between calls while the version holds, and its commits are
   * refused when somebody else wrote in between. */
  version?(): Promise<string | number>;
}

/** Limits of every component call: its deadline (default 30 s), and the memory cap the engine
 * enforces (for the error message when a component runs out). */
export interface CallLimitsOptions { deadlineMs?: number; memoryMiB?: number; }

/** Core modules: the URL of their directory (fetched), or `{ file: WebAssembly.Module }`. */
export type CoreModules = URL | string | Record<string, WebAssembly.Module>;

/** Load jp-web once: a `WebAssembly.Module` (edge engines inject it), bytes, or a URL;
 * by default the file next to jp.js, fetched. */
export function loadJp(source?: WebAssembly.Module | BufferSource | URL): Promise<unknown>;
export const DEFAULT_DEADLINE_MS: number;
/** What runs this: the engine and its version. */
export function engineName(): string;
/** Why components cannot run here (no WebAssembly JSPI), or null when they can. `Host.create`
 * throws with this message. */
export function jspiMissing(): string | null;

/** What a permission question shows of a call (as `jp query`'s question): the fields that say
 * what it touches — paths, commands, URLs — first and in full, the rest cut and named. All text
 * is safe to show as is. */
export interface CallSummary {
  /** The tool's name, quoted unless it is one plain word. */
  name: string;
  /** `key: value` per field shown. */
  lines: string[];
  /** The fields cut (`shown` characters of `characters`) or left out (`shown` 0). */
  cut: { key: string; characters: number; shown: number }[];
  /** One note per cut field: `(content cut: 5000 characters; shown: first 200)`. */
  notes: string[];
}
/** After `loadJp`. */
export function describeCall(name: string, args: unknown): CallSummary;
/** What `policy` grants beyond `ceiling` (the operator's policy), one line per right; empty when
 * it only narrows it. Throws when either does not parse. After `loadJp`. */
export function policyExceeds(policy: string, ceiling: string): string[];
/** A tool as `host.listTools()` lists it. */
export interface ListedTool { name: string; summary?: string; description?: string; inputSchema: unknown }
/** `host.policyHints()`. */
export interface PolicyHints { writes: boolean; destructive: boolean; network: boolean; commands: boolean }
/** The core's agent surface (the same as `jp mcp`'s), after `loadJp`: the tool as MCP's
 * `tools/list` shows it under a policy with `hints`. */
export function agentTool(tool: ListedTool, hints: PolicyHints): { name: string; description: string; inputSchema: unknown; annotations: Record<string, boolean> };
/** Whether the user is asked before a call of `tool` with `args` (RFD 009, as `jp query`). */
export function askBeforeCall(tool: ListedTool, hints: PolicyHints, args: unknown): boolean;
/** A `callTool` outcome as the agent gets it: MCP's `{content, structuredContent?, isError}`. */
export function agentResult(name: string, outcome: { tag: string; val: unknown; result?: CallToolResult }): CallToolResult;

export class Host {
  /** Files in the IndexedDB database `db`, or in memory when `db` is null. `policy`: TOML or
   * JSON with `access` and/or `sandbox` tables; empty = workspace read-write, nothing else. */
  /** `worker`: the URL of call-worker.bundle.js — each call then runs in a Worker. */
  /** `ceiling`: the operator's policy, which `policy` may only narrow (see `setPolicy`). */
  /** Throws where the engine lacks WebAssembly JSPI (see `jspiMissing`). */
  static create(options?: { db?: string | null; policy?: string; ceiling?: string | null; storage?: ProjectStorage | null; limits?: CallLimitsOptions; worker?: URL | null; instances?: Map<string, unknown> | null }): Promise<Host>;
  /** What the policy lets a tool do at most (MCP tool hints). */
  policyHints(): { writes: boolean; destructive: boolean; network: boolean; commands: boolean };
  onEvent(listener: (event: HostEvent) => void): () => void;
  /** With `ceiling`, `text` may only narrow it: each decision is the stricter of the two, empty
   * `text` is the ceiling, and a `text` granting more throws naming every such right. */
  setPolicy(text: string, options?: { ceiling?: string | null }): void;
  policySummary(): string;
  /** Who answers the policy's questions of every call (a sensitive path, a URL no rule covers
   * under a `sandbox` table); the component waits, its deadline standing still. Without one,
   * questions are denied at once with the reason. */
  setInquirer(callback: ((inquiry: Inquiry) => InquiryAnswer | Promise<InquiryAnswer>) | null): void;
  /** Who answers a tool's own questions (`needs-input`); the tool then runs again with the answer. */
  setAnswerer(callback: Answerer | null): void;
  /** The secrets `${VAR}` headers may use; only the names the policy's `network.envs` lists are
   * kept. Substituted by the host, never shown to a tool, scrubbed from what it reads back. */
  setSecrets(secrets: Record<string, string>): void;
  /** The variable names the policy's `network.envs` lists. */
  secretNames(): string[];
  request(tool: string, method: string, params?: Record<string, unknown>): Promise<RequestResult>;
  writeFile(path: string, content: string | Uint8Array): Promise<void>;
  readFile(path: string): Promise<string>;
  readFileBytes(path: string): Promise<Uint8Array>;
  deleteFile(path: string): Promise<void>;
  listFiles(): Promise<string[]>;
  /** `module`: jco's JS module or its URL (needed for calls in a Worker) with its `cores`; or
   * the component's `.wasm` bytes, transpiled here by jco (then `cores` is null, and its calls
   * run only in a Worker: it has no loop checks). `knowledgeBase`: the project directory whose
   * topics the component reads at `/subjects` (the builtin `learn`, seed 002). */
  registerComponent(name: string, module: ComponentModule | URL | Uint8Array | ArrayBuffer, cores?: CoreModules | null, tools?: Omit<ToolInfo, 'component' | 'inputSchema'>[] | null, options?: { knowledgeBase?: string | null }): Promise<string[]>;
  listTools(): ToolInfo[];
  /**
   * Why `args` do not fit tool `name`'s JSON Schema (the core's check, as `jp` makes it; each
   * argument named with the fix), or `undefined` when they do.
   */
  checkArguments(name: string, args: Record<string, unknown>): string | undefined;
  /**
   * `files` are written first and committed with the tool's changes, or not at all. Arguments
   * that do not fit the tool's schema are an `error` outcome (`checkArguments`); the tool does
   * not run.
   */
  callTool(name: string, args?: Record<string, unknown>, options?: {
    files?: Record<string, string | Uint8Array> | null;
    /** Cancels the call: its pending requests end, nothing it did is written. */
    signal?: AbortSignal | null;
    /** This call's questions instead of `setInquirer`'s. */
    inquirer?: ((inquiry: Inquiry) => InquiryAnswer | Promise<InquiryAnswer>) | null;
    /** This call's tool questions instead of `setAnswerer`'s. */
    answerer?: Answerer | null;
    /** A stateful tool's (one with `actions`) handles are this owner's; see `agentCall`. */
    owner?: string;
  }): Promise<AgentOutcome>;

  /** The Workers of live handles in a page (`Host.create({ worker })`): one per handle,
   * terminated when it is aborted or its owner's handles are closed. */
  readonly liveWorkers: Set<Worker>;
  /**
   * One call of an agent (RFD 009) through the core's handle session, its handles kept for
   * `owner`: `args.action` = `spawn` starts a live instance (in a Worker of its own when the host
   * has one) and answers its handle; `fetch` / `apply` (with `input`: data for a running one, the
   * answer for a waiting one) / `abort` reach it by `id`. Without `action` the tool runs to its
   * end, its questions going to `answerer`. Each command's file changes are committed when it
   * ends; a command runs under the host's deadline.
   */
  agentCall(name: string, args?: Record<string, unknown>, options?: AgentCallOptions): Promise<AgentOutcome>;
  /** Start stateful tool `name` (`action: 'spawn'`). */
  spawn(name: string, args?: Record<string, unknown>, options?: AgentCallOptions): Promise<AgentOutcome>;
  /** The state of handle `id`. */
  fetchHandle(name: string, id: string, options?: AgentCallOptions): Promise<AgentOutcome>;
  /** Send `input` to handle `id`: data for a running tool, the answer for a waiting one. */
  applyHandle(name: string, id: string, input: unknown, options?: AgentCallOptions): Promise<AgentOutcome>;
  /** Stop handle `id`: its instance dropped, its Worker terminated. */
  abortHandle(name: string, id: string, options?: AgentCallOptions): Promise<AgentOutcome>;
  /** The live handles of `owner` (default `default`), oldest first. */
  handles(owner?: string): LiveHandle[];
  /** End `owner`'s handles (a turn ended): each aborted, a command running on one stopped. */
  closeHandles(owner?: string): Promise<void>;
}
