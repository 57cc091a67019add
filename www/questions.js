// A tool's question mid-call — a sensitive path such as `.env`, a request that no rule of a
// `sandbox` table covers — shown in the page while the component waits for the answer (the
// host's inquirer, see `Host.setInquirer` in jp.js): which tool asks for what, the policy's
// reason, and one button per answer. The card ends at the first click, or when the call ends
// without an answer (its `signal`: Stop, the deadline, the Worker's end), which it then says.

import { shownReason, shownText } from './jp.js';

const el = (tag, className, text) => {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
};

/**
 * Show `question` (`{tool, method, target, reason, signal}`, as the inquirer gets it) in a new
 * `card` (a `tag` element, class `inquiry`) that `place(card)` puts in the page, with one button
 * per `[label, value, className, title]` of `choices`. Resolves to the clicked choice's value,
 * or `false` when the call ended first. Tool text is shown as text, never as markup.
 */
export function askQuestion(question, choices, place, { tag = 'div' } = {}) {
  return new Promise((resolve) => {
    const card = el(tag, 'inquiry');
    // Line breaks, bidi and invisible characters of the tool's text shown as escapes, as jp shows
    // them everywhere (the core's `display::escape`): a tool cannot dress one request as another.
    card.append(el('span', 'question', `${shownText(question.tool)} asks: `), el('code', 'request', `${question.method} ${shownText(question.target)}`));
    card.append(el('div', 'reason', shownReason(question.target, question.reason)));
    const buttons = el('div', 'answers');
    card.append(buttons);
    let ended = false;
    const end = (value, note) => {
      if (ended) return;
      ended = true;
      question.signal?.removeEventListener('abort', onAbort);
      buttons.replaceChildren();
      card.classList.add('answered');
      card.append(el('div', 'answered', note));
      resolve(value);
    };
    const onAbort = () => end(false, 'not answered: the call ended first');
    for (const [label, value, className, title] of choices) {
      const b = el('button', className, label);
      b.type = 'button';
      if (title) b.title = title;
      b.onclick = () => end(value, value === false ? 'denied' : `allowed (${label.toLowerCase()})`);
      buttons.append(b);
    }
    place(card);
    card.scrollIntoView?.({ block: 'nearest' });
    if (question.signal?.aborted) onAbort();
    else question.signal?.addEventListener('abort', onAbort);
  });
}
