// Asking an MCP 2026-07-28 client at the edge: that protocol has no server-to-client requests,
// so a policy inquiry of a call becomes an `input_required` result of its `tools/call` (SEP-2322,
// multi round-trip requests), carrying one `elicitation/create` form request under the key
// `decision` and a `requestState`; the client calls again with the same tool and arguments,
// the state and its answer in `inputResponses`. The question and the answers are those of
// `jp mcp` (native/src/mcp/elicit.rs, mrtr.rs), word for word.
//
// Unlike `jp mcp`, which suspends the running call and resumes it with the answer, the edge keeps
// nothing between requests (a retry may reach another isolate): the call is stopped at its
// question — nothing of it is committed — and the retry RE-RUNS it from the start with every
// answer given so far applied to the questions they answer (same method and target); a question
// not answered yet stops it again, with one more input_required. So a re-run repeats what the
// tool did before its question — an `http.post` is sent again, a file read again — which is
// harmless for reads and for requests the policy allowed anyway, but a tool that is not
// idempotent up to its question acts twice.
//
// The requestState carries those answers, so it is sealed: an HMAC-SHA-256 (WebCrypto) over
// {tool, a hash of the arguments, the principal (an HMAC of the bearer token that called),
// project, answers, the question asked, expiry}, with a key derived from JP_EDGE_STATE_KEY or,
// unset, from the operator's token. A state that fails the check, has expired (5 minutes, as
// `jp mcp` waits for an answer), or was issued to another token, project, tool or arguments is
// refused with JSON-RPC -32602 saying what to do. Within its 5 minutes a state can be replayed
// by the client it was issued to: that repeats the call with answers that client gave already.

import { inquiryElicitation } from '../../www/jp.js';

/** The key of the one question in an `input_required` result (as `jp mcp`). */
export const KEY = 'decision';
// The answers the core's question offers (`agent::surface::ALLOW_ONCE`, `ALLOW_CALL`).
const ALLOW_ONCE = 'allow once';
const ALLOW_CALL = 'allow for the rest of this call';

/** How long a requestState may be answered (ms): `jp mcp`'s ASK_TIMEOUT. */
export const STATE_TTL_MS = 300_000;
/** Answers one state may carry: the most questions one call may ask (web/src/http.rs). */
const MAX_ANSWERS = 16;

/** Why no inquirer can reach a 2026-07-28 client (native elicit.rs's words). */
/** Why nobody is asked where no key seals a requestState. */
export const NO_STATE_KEY = 'nobody could be asked: this edge function has no key to seal the question\'s requestState with (set JP_EDGE_STATE_KEY or JP_EDGE_TOKEN); allow it in the operator\'s policy';
export const CANNOT_ASK = 'nobody could be asked: the MCP client does not support elicitation; allow it in the tool\'s configuration';

/** Whether a client with these capabilities (2026-07-28: from the request's `_meta`) is asked
 * through input_required: it declared elicitation in form mode (or without url mode). */
export function asksByResult(capabilities) {
  const e = capabilities?.elicitation;
  return Boolean(e && typeof e === 'object' && (e.form || !e.url));
}

/** The `inputRequests` entry that asks about `question` ({tool, method, target, reason}): the
 * core's words and escaping (`inquiryElicitation`, as `jp mcp`). */
export function elicitation({ tool, method, target, reason }) {
  return { method: 'elicitation/create', params: inquiryElicitation({ tool, method, target, reason }) };
}

/** The client's answer (`inputResponses[KEY]`, an ElicitResult) as an inquirer's answer: 'once',
 * 'all' or the reason of a denial (native elicit.rs's reasons). */
export function answerOf(response) {
  if (!response || typeof response !== 'object' || typeof response.action !== 'string') return 'the MCP client did not answer';
  if (response.action !== 'accept') return 'the user declined';
  const decision = response.content?.[KEY];
  if (decision === ALLOW_ONCE) return 'once';
  if (decision === ALLOW_CALL) return 'all';
  return 'denied by the user';
}

/**
 * The answers of one run, each used once: the k-th time a run asks about the same method and
 * target it gets the k-th answer given for them — an "allow once" is one request, not every
 * identical one after it. `undefined` when none is left.
 */
export function answering(answers) {
  const used = new Set();
  return (q) => {
    const i = answers.findIndex((a, n) => !used.has(n) && a.method === q.method && a.target === q.target);
    if (i < 0) return undefined;
    used.add(i);
    return answers[i].answer;
  };
}

/**
 * The inquirer of one run of a call that may ask by result: a question answered in `answers`
 * ([{method, target, answer}], each used once, see `answering`) gets that answer; the first one
 * that is not stops the call (`signal` aborts: nothing of it is committed) and is kept as
 * `asked()`.
 */
export function replaying(answers) {
  const stop = new AbortController();
  let asked = null;
  const answer = answering(answers);
  const inquirer = (q) => {
    const known = answer(q);
    if (known !== undefined) return known;
    asked ??= { tool: q.tool, method: q.method, target: q.target, reason: q.reason };
    stop.abort();
    // The call is being stopped; this denial is never committed nor shown.
    return 'the call stops here to ask the MCP client';
  };
  return { inquirer, signal: stop.signal, asked: () => asked };
}

/** A retry's requestState that resumes nothing: JSON-RPC -32602, its message what to do. */
export class StaleState extends Error {}

const stale = {
  altered: () => new StaleState('this requestState was not issued by this server, or it was altered; call the tool again without requestState'),
  expired: () => new StaleState(`this requestState expired (a question waits ${STATE_TTL_MS / 60_000} minutes for its answer); call the tool again without requestState`),
  otherPrincipal: () => new StaleState('this requestState was issued to another client (another bearer token); call the tool again without requestState'),
  otherProject: () => new StaleState('this requestState belongs to a call on another project; retry on that project, or call the tool again without requestState'),
  // `jp mcp`'s StaleState::OtherTool and ::OtherArguments.
  otherTool: (was, tool) => new StaleState(`this requestState belongs to a call of '${was}', not '${tool}'; retry that call with its own tool and arguments, or call '${tool}' again without requestState`),
  otherArguments: (tool) => new StaleState(`the arguments differ from the call that asked under this requestState; retry with the arguments of that call of '${tool}', or call it again without requestState`),
  tooMany: () => new StaleState(`this call was answered ${MAX_ANSWERS} times already, the most one call may ask; call the tool again without requestState`),
};

const encoder = new TextEncoder();

function base64url(bytes) {
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

function unbase64url(text) {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new Error('not base64url');
  const bin = atob(text.replaceAll('-', '+').replaceAll('_', '/'));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

const hex = (buffer) => [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join('');

/** JSON with every object's keys sorted: equal arguments give equal text whatever their order. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Sealing and opening requestStates with a key derived from `secret` (JP_EDGE_STATE_KEY, else
 * the operator's token). A state is `v1.<payload>.<mac>` (base64url): the payload is JSON
 * `{tool, args, principal, project, answers: [{method, target, answer}], asking: {method,
 * target}, expires}` — `args` the SHA-256 of the arguments' canonical JSON, `principal` an HMAC
 * of the bearer token — and the MAC an HMAC-SHA-256 over `v1.<payload>`. It holds no secret:
 * the client already knows everything in it.
 */
export function requestStates({ secret, now = () => Date.now() }) {
  let key = null;
  const hmacKey = () => (key ??= (async () => {
    if (!secret) throw new Error('no key for requestState: set JP_EDGE_STATE_KEY or JP_EDGE_TOKEN');
    const material = await crypto.subtle.importKey('raw', encoder.encode(secret), 'HKDF', false, ['deriveKey']);
    return crypto.subtle.deriveKey(
      { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: encoder.encode('jp-edge requestState v1') },
      material, { name: 'HMAC', hash: 'SHA-256', length: 256 }, false, ['sign', 'verify'],
    );
  })());
  const sign = async (text) => new Uint8Array(await crypto.subtle.sign('HMAC', await hmacKey(), encoder.encode(text)));
  const principal = async (bearer) => hex(await sign(`principal\0${bearer}`)).slice(0, 32);
  const argsHash = async (args) => hex(await crypto.subtle.digest('SHA-256', encoder.encode(canonical(args ?? {}))));

  return {
    /** Whether states can be sealed here: a key was configured. */
    ready: Boolean(secret),
    /** The state for a call of `tool` with `args` by `bearer` on `project` that was answered
     * `answers` and now asks `asking`. */
    async seal({ tool, args, bearer, project, answers, asking }) {
      const payload = {
        tool, args: await argsHash(args), principal: await principal(bearer), project: project ?? null,
        answers, asking: { method: asking.method, target: asking.target }, expires: now() + STATE_TTL_MS,
      };
      const body = `v1.${base64url(encoder.encode(JSON.stringify(payload)))}`;
      return `${body}.${base64url(await sign(body))}`;
    },

    /** The answers so far and the question asked, of a state the retry (`tool`, `args`,
     * `bearer`, `project`) may resume; else throws StaleState. */
    async open(state, { tool, args, bearer, project }) {
      const parts = typeof state === 'string' ? state.split('.') : [];
      if (parts.length !== 3 || parts[0] !== 'v1') throw stale.altered();
      let payload;
      try {
        const mac = unbase64url(parts[2]);
        if (!await crypto.subtle.verify('HMAC', await hmacKey(), mac, encoder.encode(`v1.${parts[1]}`))) throw stale.altered();
        payload = JSON.parse(new TextDecoder().decode(unbase64url(parts[1])));
      } catch (e) {
        throw e instanceof StaleState ? e : stale.altered();
      }
      if (!(payload.expires > now())) throw stale.expired();
      if (payload.principal !== await principal(bearer)) throw stale.otherPrincipal();
      if (payload.project !== (project ?? null)) throw stale.otherProject();
      if (payload.tool !== tool) throw stale.otherTool(payload.tool, tool);
      if (payload.args !== await argsHash(args)) throw stale.otherArguments(tool);
      if (payload.answers.length >= MAX_ANSWERS) throw stale.tooMany();
      return { answers: payload.answers, asking: payload.asking };
    },
  };
}
