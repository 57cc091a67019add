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

export interface Inquiry { tool: string; method: string; target: string; reason: string; }
export type InquiryAnswer = boolean | 'once' | 'all';

export interface ToolInfo {
  name: string;
  summary: string;
  description?: string;
  parameters: Record<string, unknown>;
  component: string;
}

export interface ErrorInfo { message: string; trace: string[]; transient: boolean; }
export interface Question { id: string; text: string; answerType: string; default?: string; }

/** The outcome of a call (jp:tool's `outcome`) and the paths it changed. */
export type ToolOutcome = (
  | { tag: 'success'; val: string }
  | { tag: 'error'; val: ErrorInfo }
  | { tag: 'needs-input'; val: Question }
) & { changed: string[] };

export type RequestResult =
  | { result: unknown }
  | { error: { code: number; message: string } };

/** A jco-transpiled component module (`jco transpile --instantiation async`). */
export interface ComponentModule {
  instantiate(getCoreModule: (path: string) => Promise<WebAssembly.Module>, imports: Record<string, unknown>): Promise<unknown>;
}

export function loadJp(): Promise<unknown>;

export class Host {
  /** Files in the IndexedDB database `db`, or in memory when `db` is null. `policy`: TOML or
   * JSON with `access` and/or `sandbox` tables; empty = workspace read-write, nothing else. */
  static create(options?: { db?: string | null; policy?: string }): Promise<Host>;
  onEvent(listener: (event: HostEvent) => void): () => void;
  setPolicy(text: string): void;
  policySummary(): string;
  setInquirer(callback: ((inquiry: Inquiry) => InquiryAnswer | Promise<InquiryAnswer>) | null): void;
  request(tool: string, method: string, params?: Record<string, unknown>): Promise<RequestResult>;
  writeFile(path: string, content: string | Uint8Array): Promise<void>;
  readFile(path: string): Promise<string>;
  readFileBytes(path: string): Promise<Uint8Array>;
  deleteFile(path: string): Promise<void>;
  listFiles(): Promise<string[]>;
  registerComponent(name: string, module: ComponentModule, base: URL, tools?: ToolInfo[] | null): Promise<string[]>;
  listTools(): ToolInfo[];
  callTool(name: string, args?: Record<string, unknown>): Promise<ToolOutcome>;
}
