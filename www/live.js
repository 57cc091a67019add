// Live sessions of stateful components (RFD 009, wit/tool/stateful.wit) for `JpHost.agentCall`
// (web/src/handles.rs): `spawn(session, name, argumentsJson)` starts an instance of its own
// for the handle and resolves to `{ state, handle }`, the handle being `{ fetch(session),
// apply(session, input), save(session)?, abort() }`. Each command runs on the call session the
// core gives it (its requests decided by the policy), under a fresh deadline; a trap or a stop
// ends the instance for good. `abort` drops it — or terminates its Worker. On this thread,
// `restore(session, name, saved)` rebuilds a handle from what its `save` returned (the edge,
// after losing the instance: web/src/saved.rs) and resolves to `{ handle }`.
import { instantiate, nullSession, DeadlineExceeded, memoryNote } from './instance.js';

/** The `jp:tool/stateful` export of an instance, or undefined. */
export function statefulExport(instance) {
  return instance?.stateful ?? instance?.['jp:tool/stateful@0.1.0'];
}

/** The RFD 009 actions the component offers for each of `tools` (`[{name}]`), set on them. */
export function withActions(instance, tools) {
  const stateful = statefulExport(instance);
  if (!stateful) return tools;
  return tools.map((t) => {
    const actions = stateful.actions(t.name);
    return actions.length ? { ...t, actions: [...actions] } : t;
  });
}

/** What a component's `spawn` or `restore` threw: the tool's own error, as a stopped state. */
function stoppedBy(e) {
  const info = e?.payload;
  if (info && typeof info.message === 'string') return { tag: 'stopped', val: { tag: 'err', val: info } };
  return null;
}

/**
 * `promise`, marked as handled: the core may stop waiting for a command (its deadline, a Stop)
 * before the command's own end, and that end's rejection must not surface as an unhandled one
 * later. Whoever still awaits it gets the rejection as before.
 */
const handled = (promise) => {
  promise.catch(() => {});
  return promise;
};

/**
 * The stateful runner of `component` on this thread: every handle an instance of its own, its
 * commands bounded by `deadlineMs` each. `memoryMiB`: the engine's cap, named when a trap looks
 * like running out of it.
 */
export function localRunner(component, { deadlineMs, memoryMiB = null }) {
  /** A live instance of tool `name` whose session `open(exported, ctx)` makes; `first`: also
   * fetch its first state (a spawn; a restored session's state is the one saved with it). */
  async function start(session, name, open, first) {
    const live = await instantiate(component, name, deadlineMs);
    const exported = statefulExport(live.instance);
    if (!exported) throw new Error(`component '${component.name}' does not export jp:tool/stateful; build it against world stateful-tool of wit/tool`);
    let dead = null; // why the instance may not run again
    let running = null; // the session of the command in progress
    let own = null; // the component's session resource
    /**
     * Drop the component's session now, once its handle has ended — never left to jco's
     * FinalizationRegistry, which would run the component's destructor whenever the garbage
     * collector gets to it: outside any command, past its deadline, where a loop check's throw
     * would be an uncaught exception (and end a Node process). The destructor gets a deadline
     * of its own; whatever it throws, the session is gone.
     */
    const release = () => {
      const resource = own;
      own = null;
      const dispose = resource?.[Symbol.dispose || Symbol.for('dispose')];
      if (typeof dispose !== 'function') return;
      live.limits.reset(name, deadlineMs);
      try { dispose.call(resource); } catch { /* it failed or ran out of time: dropped all the same */ }
      live.limits.cancel(dead ?? `tool '${name}' has ended`);
    };
    const command = async (session, f) => {
      if (dead) throw new Error(dead);
      running = session;
      live.current.session = session;
      live.limits.reset(name, deadlineMs);
      const watchdog = live.limits.watch(() => {
        live.limits.cancel(live.limits.expired());
        session.expire(live.limits.expired());
      });
      try {
        const state = await f();
        if (live.limits.stopped) throw new DeadlineExceeded(live.limits.stopped);
        if (state?.tag === 'stopped') dead ??= 'the tool stopped';
        return state;
      } catch (e) {
        const stopped = own === null ? stoppedBy(e) : null;
        dead = stopped
          ? 'the tool stopped'
          : (e instanceof DeadlineExceeded
            ? `${e.message}; the session has stopped`
            : `tool '${name}' trapped: ${e?.message ?? e}${memoryNote(live.cores, memoryMiB)}; the session has stopped`);
        if (stopped) return stopped;
        throw new Error(dead);
      } finally {
        watchdog.stop();
        live.current.session = nullSession;
        running = null;
        // The handle ended with this command (it stopped, failed, or was aborted meanwhile).
        if (dead) release();
      }
    };
    const ctx = { root: '/workspace', action: 'run' };
    const state = await command(session, async () => {
      own = await open(exported, ctx);
      return first ? own.fetch() : undefined;
    });
    const handle = {
      fetch: (session) => handled(command(session, () => own.fetch())),
      apply: (session, input) => handled(command(session, () => own.apply(input))),
      // Run like a command (its deadline, its session); undefined: the session cannot be saved.
      save: (session) => (dead ? undefined : handled(command(session, () => own.save()))),
      abort: () => {
        dead ??= `tool '${name}' was aborted`;
        live.limits.cancel(dead);
        // A command still running releases the session when it unwinds.
        if (running) running.abort(dead);
        else release();
      },
    };
    return { state, handle };
  }
  return {
    spawn: (session, name, argumentsJson) => handled(start(session, name, (exported, ctx) => exported.spawn(ctx, name, argumentsJson), true)),
    restore: (session, name, saved) => handled(restore(session, name, saved)),
  };
  /** A session rebuilt from what its `save` gave. */
  async function restore(session, name, saved) {
    const { state, handle } = await start(session, name, (exported, ctx) => exported.restore(ctx, name, saved), false);
    // The component refused what it saved: an error, not a session.
    if (state?.tag === 'stopped') throw new Error(state.val.val?.message ?? 'the component refused its saved session');
    return { handle };
  }
}

/**
 * The stateful runner of `component` for a page: every handle a Worker of its own (the page
 * stays responsive whatever the component does), terminated on abort — and at a command's
 * deadline. The Worker gets the project's files before each command and hands back what the
 * command changed; those changes are made through the command's own call session here, so the
 * page's policy decides them again.
 */
export function workerRunner(host, component, { deadlineMs, tools, inquirer, answerer }) {
  const emit = (event) => { for (const listener of host.listeners) listener(event); };
  return {
    async spawn(session, name, argumentsJson) {
      const worker = new Worker(host.worker, { type: 'module' });
      let pending = null; // the command waiting for the Worker: { resolve, reject, session }
      let timer = null;
      let dead = null;
      const stop = (why) => {
        dead ??= why;
        clearTimeout(timer);
        worker.terminate();
        pending?.reject(new Error(why));
        pending = null;
      };
      worker.onerror = (e) => stop(`tool '${name}' failed in its worker: ${e.message ?? e}; the session has stopped`);
      worker.onmessage = async ({ data }) => {
        if (data.event) emit(data.event);
        if (data.ask) {
          const wait = pending;
          let reply;
          try {
            reply = data.ask.tool
              ? (answerer ? await answerer(data.ask.question) : undefined)
              : (inquirer ? await inquirer({ ...data.ask.question }) : false);
          } catch { reply = data.ask.tool ? undefined : false; }
          if (wait && wait === pending) worker.postMessage({ answer: { id: data.ask.id, value: reply } });
        }
        if (data.failed) stop(`tool '${name}' failed in its worker: ${data.failed}; the session has stopped`);
        if (data.state !== undefined && pending) {
          const { resolve, reject, session } = pending;
          pending = null;
          clearTimeout(timer);
          try {
            // The Worker's changes, made again through this command's session: decided here.
            for (const [path, bytes] of Object.entries(data.changes ?? {})) {
              if (bytes === null) await session.delete(path);
              else await session.write(path, bytes);
            }
            resolve(data.state);
          } catch (e) {
            reject(new Error(`tool '${name}' changed files the page's policy refuses: ${e?.payload?.message ?? e?.message ?? e}`));
          }
        }
      };
      const send = async (session, message) => {
        if (dead) throw new Error(dead);
        const files = await host.inner.exportFiles();
        return new Promise((resolve, reject) => {
          pending = { resolve, reject, session };
          timer = setTimeout(() => stop(`tool '${name}' ran past its deadline of ${deadlineMs} ms and was stopped; the session has stopped`), deadlineMs + 1000);
          worker.postMessage({ ...message, files });
        });
      };
      const state = await send(session, {
        live: {
          jpUrl: new URL('./pkg/jp_web_bg.wasm', import.meta.url).href,
          component: { name: component.name, moduleUrl: component.moduleUrl, coresUrl: component.coresUrl, source: component.source, coreBytes: component.coreBytes, tools },
          policy: host.policyText, ceiling: host.ceilingText, limits: host.limits, secrets: host.secrets,
          asks: Boolean(inquirer), answers: Boolean(answerer), tool: name, args: argumentsJson,
        },
      });
      const handle = {
        fetch: (session) => handled(send(session, { command: { method: 'fetch' } })),
        apply: (session, input) => handled(send(session, { command: { method: 'apply', input } })),
        abort: () => stop(`tool '${name}' was aborted`),
        worker, // for tests: whether it is still running
      };
      host.liveWorkers.add(worker);
      worker.addEventListener('error', () => host.liveWorkers.delete(worker));
      const terminate = worker.terminate.bind(worker);
      worker.terminate = () => { host.liveWorkers.delete(worker); terminate(); };
      return { state, handle };
    },
  };
}
