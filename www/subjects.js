// A read-only wasi:filesystem in memory, for the one component that reads a directory through
// WASI rather than jp:host/filesystem: the builtin `learn` (seed 002), which lists and reads a
// knowledge-base topic's subjects at the preopen `/subjects` with std::fs — natively a read-only
// mount of the topic (native/src/app/learn.rs). Here the topic's files are a `Map` of path (below
// the topic) → bytes, taken from the project's files for each call; nothing can be written,
// created or removed, and no path leads out of it.
//
// Only what Rust's std::fs (wasi-libc) asks of a read-only tree is served: open, stat, the type,
// directory entries, reads (by stream and at an offset) and metadata hashes; everything else is
// `read-only` or `unsupported`.
import * as io from '@bytecodealliance/preview2-shim/io';

/** A WASI filesystem error (jco hands `payload` to the guest as the `error-code`). */
const fail = (code) => { throw { payload: code }; };

/** `path` below the tree's root, normalised; a path that leaves the root is no entry of it. */
function join(base, path) {
  if (path.startsWith('/')) fail('not-permitted');
  const parts = base ? base.split('/') : [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) fail('not-permitted');
      parts.pop();
    } else {
      parts.push(part);
    }
  }
  return parts.join('/');
}

/** A stream over bytes (the shim's InputStream, so that jco takes it as one). */
class BytesStream extends io.streams.InputStream {
  constructor(bytes) {
    super();
    this.handler = {}; // the browser shim's base looks for hooks here (none)
    this.bytes = bytes;
    this.at = 0;
  }

  read(len) {
    if (this.at >= this.bytes.length) throw { tag: 'closed' };
    const chunk = this.bytes.slice(this.at, this.at + Number(len));
    this.at += chunk.length;
    return chunk;
  }

  blockingRead(len) { return this.read(len); }
  skip(len) { return BigInt(this.read(len).length); }
  blockingSkip(len) { return this.skip(len); }
  [Symbol.dispose]() {}
}

/**
 * The wasi:filesystem imports (`types` and `preopens`) of one component instance whose
 * `/subjects` shows `tree()` — the current call's topic, `Map` path → bytes — read-only.
 */
export function subjectsFilesystem(tree) {
  /** What is at `path`: 'directory', 'regular-file' or undefined. */
  const kind = (path) => {
    const files = tree() ?? new Map();
    if (path === '' || [...files.keys()].some((f) => f.startsWith(`${path}/`))) return 'directory';
    return files.has(path) ? 'regular-file' : undefined;
  };
  const hash = (path) => {
    let h = 0xcbf29ce484222325n;
    for (const c of new TextEncoder().encode(`/subjects/${path}`)) h = ((h ^ BigInt(c)) * 0x100000001b3n) & 0xffffffffffffffffn;
    return { lower: h, upper: 0n };
  };

  class DirectoryEntryStream {
    constructor(entries) { this.entries = entries; }
    readDirectoryEntry() { return this.entries.shift(); }
  }

  class Descriptor {
    constructor(path) { this.path = path; }

    #stat(path) {
      const type = kind(path) ?? fail('no-entry');
      const size = type === 'regular-file' ? BigInt(tree().get(path).length) : 0n;
      return { type, linkCount: 1n, size, dataAccessTimestamp: undefined, dataModificationTimestamp: undefined, statusChangeTimestamp: undefined };
    }

    #bytes() {
      if (kind(this.path) !== 'regular-file') fail(kind(this.path) ? 'is-directory' : 'no-entry');
      return tree().get(this.path);
    }

    getType() { return kind(this.path) ?? fail('no-entry'); }
    getFlags() { return { read: true }; }
    stat() { return this.#stat(this.path); }
    statAt(_flags, path) { return this.#stat(join(this.path, path)); }
    metadataHash() { return hash(this.path); }
    metadataHashAt(_flags, path) { return hash(join(this.path, path)); }
    isSameObject(other) { return other instanceof Descriptor && other.path === this.path; }

    openAt(_pathFlags, path, openFlags = {}, flags = {}) {
      if (openFlags.create || openFlags.truncate || openFlags.exclusive || flags.write || flags.mutateDirectory) fail('read-only');
      const target = join(this.path, path);
      const type = kind(target) ?? fail('no-entry');
      if (openFlags.directory && type !== 'directory') fail('not-directory');
      return new Descriptor(target);
    }

    readDirectory() {
      if (kind(this.path) !== 'directory') fail('not-directory');
      const prefix = this.path ? `${this.path}/` : '';
      const seen = new Map();
      for (const file of tree().keys()) {
        if (!file.startsWith(prefix)) continue;
        const [name, ...rest] = file.slice(prefix.length).split('/');
        if (!seen.has(name)) seen.set(name, rest.length ? 'directory' : 'regular-file');
      }
      return new DirectoryEntryStream([...seen].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, type]) => ({ type, name })));
    }

    readViaStream(offset) { return new BytesStream(this.#bytes().subarray(Number(offset))); }

    read(length, offset) {
      const bytes = this.#bytes();
      const start = Math.min(Number(offset), bytes.length);
      const chunk = bytes.slice(start, start + Number(length));
      return [chunk, start + chunk.length >= bytes.length];
    }

    writeViaStream() { fail('read-only'); }
    appendViaStream() { fail('read-only'); }
    write() { fail('read-only'); }
    setSize() { fail('read-only'); }
    setTimes() { fail('read-only'); }
    setTimesAt() { fail('read-only'); }
    createDirectoryAt() { fail('read-only'); }
    removeDirectoryAt() { fail('read-only'); }
    unlinkFileAt() { fail('read-only'); }
    renameAt() { fail('read-only'); }
    linkAt() { fail('read-only'); }
    symlinkAt() { fail('read-only'); }
    readlinkAt() { fail('invalid'); }
    advise() {}
    sync() {}
    syncData() {}
  }

  const root = new Descriptor('');
  return {
    'wasi:filesystem/preopens': { getDirectories: () => [[root, '/subjects']] },
    'wasi:filesystem/types': { Descriptor, DirectoryEntryStream, filesystemErrorCode: () => undefined },
  };
}

/** Where `learn` finds its topics in the project, as natively (`.jp/kb`, jp's DEFAULT_KB). */
export const KNOWLEDGE_BASE = '.jp/kb';

/**
 * A `learn` call as natively (native/src/app/learn.rs): its topic — the `topic` argument, or the
 * only one there is — among the directories of the knowledge base `kb` in the project, whose
 * files become the call's `/subjects`, and the topic's metadata injected as `_topic` (seed 002;
 * the page and the edge have no tool configuration, so no description, nothing disabled or
 * learned). `paths`: the project's files; `read(path)`: a file's bytes. Resolves to
 * `{ argumentsJson, tree }`, or `{ error }` (a message saying what to do).
 */
export async function learnCall(argumentsJson, kb, paths, read) {
  const args = JSON.parse(argumentsJson);
  const prefix = `${kb}/`;
  const inKb = paths.filter((p) => p.startsWith(prefix)).map((p) => p.slice(prefix.length));
  if (inKb.length === 0) {
    return { error: `learn has no knowledge base: ${kb}/ does not exist; create ${kb}/<topic>/<subject>.md` };
  }
  const topics = [...new Set(inKb.filter((p) => p.includes('/')).map((p) => p.split('/')[0]))].filter((t) => !t.startsWith('.')).sort();
  let topic = args.topic;
  delete args.topic;
  if (topic === undefined) {
    if (topics.length !== 1) return { error: `learn needs a \`topic\`; topics in ${kb}/: ${topics.length ? topics.join(', ') : 'none'}` };
    [topic] = topics;
  } else if (!topics.includes(topic)) {
    return { error: `learn: no topic '${topic}' in ${kb}/; topics: ${topics.join(', ')}` };
  }
  const tree = new Map();
  for (const path of inKb) {
    if (path.startsWith(`${topic}/`)) tree.set(path.slice(topic.length + 1), await read(`${prefix}${path}`));
  }
  args._topic = { title: topic, description: null, disabled: [], learned: [] };
  return { argumentsJson: JSON.stringify(args), tree };
}
