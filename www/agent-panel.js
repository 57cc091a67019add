// The playground's agent panel: a chat with a model — an OpenAI-compatible endpoint, the
// Anthropic Messages API, or the offline demo recording — driven by the core turn loop compiled
// to wasm32 (`agentTurn` in jp.js). Each tool call runs on the page's host (its policy, its
// IndexedDB files) and shows inline with every host decision it caused; before a call that may
// change files (the policy allows writes, the tool does not only read) the page asks, and the
// answer is a click. The question shows what a yes grants as `jp query` does (`describeCall`, in
// core): paths, commands and URLs first and in full, the other fields cut and named. A tool's
// question mid-call (a sensitive path, a request no rule of a `sandbox` table covers) shows in
// the chat while the component waits, with three answers: once, for the rest of this turn (the
// same request of the same tool), deny; Stop ends the call and its question. A stateful tool's
// handles (RFD 009: `spawn`, then `fetch` / `apply` / `abort` on its id) belong to the turn that
// spawned them: they are listed under the chat with their state (a waiting one's question) and
// an Abort button, and end with the turn — done, failed or stopped — their Workers with them.
// The API key lives in this tab's session storage only and is never shown to a tool.
import { agentTurn, describeCall, askBeforeCall, agentResult, shownReason, shownText } from './jp.js';
import { askQuestion } from './questions.js';

const KEY = 'jp-agent-key';
const SETTINGS = 'jp-agent-settings';

const el = (tag, className, text) => {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
};
const firstLine = (s) => { const line = String(s).split('\n')[0]; return line.length > 160 ? `${line.slice(0, 160)}…` : line; };
const compact = (args) => { const s = JSON.stringify(args); return s.length > 200 ? `${s.slice(0, 200)}…` : s; };

/**
 * Wire the panel: `$` finds elements by id; `host` is the page's Host; `onFilesChanged` refreshes
 * the file tree. Returns `{ send(text) }` for automation.
 */
export function agentPanel($, host, { onFilesChanged }) {
  const chat = $('chat');
  const saved = JSON.parse(localStorage.getItem(SETTINGS) ?? '{}');
  $('agent-kind').value = saved.kind ?? 'demo';
  $('agent-url').value = saved.baseUrl ?? '';
  $('agent-model').value = saved.model ?? '';
  $('agent-key').value = sessionStorage.getItem(KEY) ?? '';
  $('agent-unattended').checked = saved.unattended ?? false;
  const showFields = () => {
    const demo = $('agent-kind').value === 'demo';
    for (const id of ['agent-url', 'agent-model', 'agent-key']) $(id).hidden = demo;
  };
  $('agent-kind').onchange = showFields;
  showFields();

  let conversation = [];
  let running = null; // the AbortController of the running turn
  // Tools the user allowed for the rest of the running turn (as `jp query`'s `a`).
  let allowed = new Set();
  // Questions the user allowed for the rest of the running turn: tool, method and target (a
  // read of `.env` by read_env, a GET of one URL by api_get), asked again in the next turn.
  let allowedInTurn = new Set();
  const calls = new Map(); // call id → its chat entry
  let current = []; // the entries of the calls now running, for their decisions
  let turns = 0;
  let owner = null; // the running turn's owner of handles: `turn-<n>`
  const handleTools = new Map(); // handle id → its tool, for one listed busy (a command on it)

  const add = (node) => { chat.append(node); node.scrollIntoView({ block: 'nearest' }); return node; };

  host.onEvent((e) => {
    const entry = [...current].reverse().find((c) => c.dataset.tool === e.tool);
    if (!entry) return;
    const line = el('div', `decision ${e.allowed ? 'allow' : e.decision}`,
      `· ${e.method} ${shownText(e.target)} → ${e.allowed ? 'allow' : e.decision === 'ask' ? 'ask → deny' : 'deny'}${e.allowed ? '' : ` (${shownReason(e.target, e.reason)})`}`);
    entry.querySelector('.decisions').append(line);
  });

  /**
   * The running turn's live handles, shown again after every tool call: id, tool, state (a
   * waiting one's question) and an Abort button, which ends the handle and its Worker. Hidden
   * when there are none.
   */
  function showHandles() {
    const list = $('handles');
    const live = owner ? host.handles(owner) : [];
    for (const h of live) if (h.tool) handleTools.set(h.id, h.tool);
    list.replaceChildren(...live.map(({ id, state, question }) => {
      const h = { id, state, question, tool: handleTools.get(id) ?? '' };
      const li = el('li', `handle ${h.state}`);
      li.dataset.id = h.id;
      li.dataset.state = h.state;
      li.append(el('code', 'id', h.id), ' ', el('span', 'tool', shownText(h.tool)), ' — ', el('span', 'state', h.state));
      if (h.question) li.append(': ', el('span', 'question', shownText(h.question)));
      const abort = el('button', 'abort', 'Abort');
      abort.type = 'button';
      abort.setAttribute('aria-label', `Abort ${h.id} (${h.tool})`);
      abort.disabled = !h.tool;
      const turn = owner;
      abort.onclick = async () => {
        abort.disabled = true;
        // The model is not told: its next command on this id gets "no live handle".
        let said;
        try {
          const outcome = await host.abortHandle(h.tool, h.id, { owner: turn });
          said = outcome.tag === 'handle' ? 'aborted' : `not aborted: ${outcome.val?.message ?? outcome.tag}`;
        } catch (e) {
          said = `not aborted: ${e?.message ?? e}`;
        }
        add(el('li', 'note', `${h.id} (${shownText(h.tool)}) ${said}`));
        if (turn === owner) showHandles();
      };
      li.append(' ', abort);
      return li;
    }));
    $('agent-handles').hidden = live.length === 0;
  }

  /**
   * Ask the user whether `name` may run; resolves to true or false. The question is listed just
   * before its call's `entry` (the calls of one model reply are listed together as they arrive),
   * so the chat reads in the order things happened: asked, answered, run, its result.
   */
  function ask(name, args, entry) {
    return new Promise((resolve) => {
      const li = el('li', 'ask');
      if (entry?.parentNode === chat) chat.insertBefore(li, entry);
      else chat.append(li);
      li.scrollIntoView({ block: 'nearest' });
      const summary = describeCall(name, args);
      li.append(el('span', 'question', `Allow ${summary.name}? It may change files.`));
      const shown = el('div', 'granted');
      for (const line of [...summary.lines, ...summary.notes]) shown.append(el('div', null, line));
      li.append(shown);
      let answered = false;
      const answer = (ok, always) => () => {
        if (answered) return;
        answered = true;
        if (always) turnTools.add(name);
        li.querySelectorAll('button').forEach((b) => { b.disabled = true; });
        li.append(el('span', 'answered', ok ? (always ? ' — allowed for the rest of this turn' : ' — allowed once') : ' — denied'));
        resolve(ok);
      };
      // The words of `jp query`'s [y = once, a = NAME for the rest of this turn, n = deny].
      const turnTools = allowed;
      for (const [label, ok, always, cls] of [['Allow once', true, false, 'allow-once'], [`Allow ${name} for the rest of this turn`, true, true, 'allow-turn'], ['Deny', false, false, 'deny']]) {
        const b = el('button', cls, label);
        b.type = 'button';
        b.onclick = answer(ok, always);
        li.append(b);
      }
      running?.signal.addEventListener('abort', answer(false, false), { once: true });
    });
  }

  /**
   * Whether `name` may run: allowed for the rest of this turn, or asked. One question at a time,
   * as on a terminal: the calls of one model reply wait for the question before theirs, so an
   * answer "for the rest of this turn" spares the next call of the same tool its question.
   */
  let asking = Promise.resolve();
  async function permitted(name, args, entry) {
    const before = asking;
    let done;
    asking = new Promise((resolve) => { done = resolve; });
    try {
      await before;
      return allowed.has(name) || await ask(name, args, entry);
    } finally {
      done();
    }
  }

  /**
   * A question of a running call, asked in the chat: once, for the rest of this turn (the same
   * request of the same tool is then allowed without asking until the turn ends), or deny. The
   * component waits; the call's end (Stop, its deadline) ends the question unanswered. The card
   * is shown in its call's entry among the decisions, before the result it leads to.
   */
  function inquire(question) {
    const key = JSON.stringify([question.tool, question.method, question.target]);
    if (allowedInTurn.has(key)) return true;
    const turn = allowedInTurn;
    const entry = [...current].reverse().find((c) => c.dataset.tool === question.tool);
    const place = entry ? (card) => entry.querySelector('.decisions').append(card) : add;
    return askQuestion(question, [
      ['Allow once', 'once', 'allow-once'],
      ['Allow for the rest of this turn', 'turn', 'allow-turn', `${shownText(question.tool)} may ${question.method} ${shownText(question.target)} again without asking until this turn ends`],
      ['Deny', false, 'deny'],
    ], place, { tag: entry ? 'div' : 'li' }).then((answer) => {
      if (answer === 'turn') turn.add(key);
      return answer !== false;
    });
  }

  async function callTool(name, args, id) {
    const entry = calls.get(id);
    // Arguments that do not fit the tool's schema go back to the model to fix; nobody is asked.
    const problem = await host.checkArguments(name, args);
    if (problem) {
      entry?.querySelector('.result')?.replaceChildren(`✗ ${problem}`);
      return { content: problem, isError: true };
    }
    // RFD 009, decided by the core as for `jp query`: ask before a tool that may write or run
    // commands under the project's policy (a tool that only reads never does).
    const tool = host.listTools().find((t) => t.name === name);
    const mayWrite = !tool || askBeforeCall(tool, host.policyHints(), args);
    if (mayWrite && !$('agent-unattended').checked && !(await permitted(name, args, entry))) {
      entry?.querySelector('.result')?.replaceChildren('✗ declined by the user');
      return { content: `The user declined to run ${name}. Ask them, or do without it.`, isError: true };
    }
    if (entry) current.push(entry);
    try {
      // Stop ends the call too (its Worker stopped, nothing it did written), and its question.
      // A stateful tool's handles are the turn's (`owner`): another turn's ids are unknown.
      const outcome = await host.callTool(name, args, { inquirer: inquire, signal: running?.signal, owner });
      if (outcome.changed?.length) await onFilesChanged();
      return agentResult(name, outcome);
    } finally {
      current = current.filter((c) => c !== entry);
      showHandles();
    }
  }

  let live = null; // the reply being written (text_delta pieces)
  function onEvent(e) {
    switch (e.type) {
      case 'text_delta':
        live ??= add(el('li', 'assistant streaming', ''));
        live.textContent += e.text;
        live.scrollIntoView({ block: 'nearest' });
        break;
      case 'text':
        if (live) {
          live.classList.remove('streaming');
          live = null;
        } else {
          add(el('li', 'assistant', e.text));
        }
        break;
      case 'tool_call': {
        const li = add(el('li', 'tool'));
        li.dataset.tool = e.name;
        li.dataset.id = e.id;
        li.append(el('div', 'call', `▸ ${e.name} ${compact(e.arguments)}`), el('div', 'decisions'), el('div', 'result'));
        calls.set(e.id, li);
        break;
      }
      case 'tool_result': {
        const li = calls.get(e.id);
        const result = li?.querySelector('.result');
        if (result) {
          result.className = `result ${e.isError ? 'error' : 'ok'}`;
          result.textContent = `${e.isError ? '✗' : '✓'} ${firstLine(e.content)}`;
          result.title = e.content;
        }
        break;
      }
      case 'retry':
        add(el('li', 'note', `retrying in ${Math.round(e.afterMs / 100) / 10} s: ${e.error}`));
        break;
      case 'turn_end':
        add(el('li', 'note', `turn ended after ${e.rounds} model request${e.rounds === 1 ? '' : 's'}`));
        break;
      default:
    }
  }

  async function provider() {
    const kind = $('agent-kind').value;
    // The demo: the recording shipped with jp-host, replayed through the real loop.
    if (kind === 'demo') return { kind: 'scripted' };
    const apiKey = $('agent-key').value;
    sessionStorage.setItem(KEY, apiKey);
    localStorage.setItem(SETTINGS, JSON.stringify({ kind, baseUrl: $('agent-url').value, model: $('agent-model').value, unattended: $('agent-unattended').checked }));
    return { kind, baseUrl: $('agent-url').value.trim(), model: $('agent-model').value.trim(), apiKey, stream: true };
  }

  async function send(text) {
    if (running) throw new Error('a turn is running: wait for it or press Stop');
    add(el('li', 'user', text));
    running = new AbortController();
    allowedInTurn = new Set();
    allowed = new Set();
    const turn = `turn-${++turns}`;
    owner = turn;
    // Stop ends the turn's handles at once: a command running on one stops where it stands.
    running.signal.addEventListener('abort', () => host.closeHandles(turn).then(() => { if (owner === turn) showHandles(); }), { once: true });
    $('agent-send').disabled = true;
    $('agent-stop').disabled = false;
    const messages = [...conversation, { role: 'user', content: text }];
    try {
      const done = await agentTurn({ provider: await provider(), messages, tools: host.listTools(), callTool, onEvent, signal: running.signal });
      conversation = done.messages;
      return done.text;
    } catch (e) {
      if (e?.messages) conversation = e.messages;
      add(el('li', 'error', `the turn ended: ${e?.message ?? e}`));
      throw e;
    } finally {
      // No handle, and no Worker, outlives its turn.
      await host.closeHandles(turn);
      owner = null;
      handleTools.clear();
      showHandles();
      running = null;
      $('agent-send').disabled = false;
      $('agent-stop').disabled = true;
      await onFilesChanged();
    }
  }

  $('agent-form').onsubmit = (ev) => {
    ev.preventDefault();
    const text = $('agent-prompt').value.trim();
    if (!text) return;
    $('agent-prompt').value = '';
    send(text).catch(() => {});
  };
  $('agent-stop').onclick = () => running?.abort();
  /**
   * What the chat is for, where a new conversation starts; with the demo picked, its prompt is
   * filled in, so that Send is the first step.
   */
  function intro() {
    const demo = $('agent-kind').value === 'demo';
    if (demo && !$('agent-prompt').value) $('agent-prompt').value = 'fix the TODO';
    add(el('li', 'note intro', `${demo
      ? 'The demo replays a recorded conversation, offline: press Send to ask it to "fix the TODO". '
      : ''}Every tool call the agent makes runs in this page, under the policy on the right: a call that may change files asks you first, and each file or network request it makes is listed in it with what decided it.`));
  }
  $('agent-new').onclick = () => { conversation = []; chat.replaceChildren(); intro(); };
  $('agent-stop').disabled = true;
  intro();
  return { send };
}
