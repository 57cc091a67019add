// A form generated from a tool's JSON Schema (`inputSchema`, the same schema every jp-host
// surface shows): one input per parameter, by type — text (a textarea for content-like
// strings), number, checkbox, a select for an `enum`, one item per line for a list of strings,
// JSON for anything nested — with the required ones marked. `read()` gives the arguments or
// says which required parameter is missing.

const LONG_TEXT = /content|text|body|old|new|patch|diff|script|code/i;

/** Which control a property gets. */
function control(prop) {
  const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== 'null') : prop.type;
  if (Array.isArray(prop.enum) && prop.enum.every((v) => typeof v === 'string')) return 'enum';
  if (type === 'boolean') return 'boolean';
  if (type === 'integer' || type === 'number') return 'number';
  if (type === 'array' && prop.items?.type === 'string') return 'lines';
  if (type === 'string') return 'string';
  return 'json';
}

/**
 * Fill `container` with a form for `schema`; returns `{ read }`, where `read()` returns
 * `{ args }` or `{ error }` (a message naming the field to fix).
 */
export function schemaForm(container, schema) {
  container.replaceChildren();
  const properties = schema?.properties ?? {};
  const required = new Set(schema?.required ?? []);
  const fields = [];
  for (const [name, prop] of Object.entries(properties)) {
    const kind = control(prop);
    const id = `arg-${name}`;
    const label = document.createElement('label');
    label.htmlFor = id;
    label.textContent = name;
    if (required.has(name)) {
      const star = document.createElement('span');
      star.className = 'required';
      star.textContent = ' *';
      star.title = 'required';
      label.append(star);
    }
    if (prop.description) label.title = prop.description;
    let input;
    switch (kind) {
      case 'enum':
        input = document.createElement('select');
        if (!required.has(name)) input.append(new Option('', ''));
        for (const v of prop.enum) input.append(new Option(v, v));
        break;
      case 'boolean':
        input = document.createElement('input');
        input.type = 'checkbox';
        input.checked = prop.default === true;
        break;
      case 'number':
        input = document.createElement('input');
        input.type = 'number';
        if (prop.type === 'integer') input.step = '1';
        if (prop.minimum !== undefined) input.min = prop.minimum;
        if (prop.maximum !== undefined) input.max = prop.maximum;
        break;
      case 'lines':
        input = document.createElement('textarea');
        input.rows = 2;
        input.placeholder = 'one per line';
        break;
      case 'json':
        input = document.createElement('textarea');
        input.rows = 2;
        input.placeholder = 'JSON';
        break;
      default:
        input = document.createElement(LONG_TEXT.test(name) ? 'textarea' : 'input');
        if (input.tagName === 'TEXTAREA') input.rows = 4;
    }
    input.id = id;
    input.name = name;
    input.dataset.kind = kind;
    if (prop.description && kind !== 'boolean') input.placeholder ||= prop.description;
    const row = document.createElement('div');
    row.className = `field field-${kind}`;
    row.append(label, input);
    container.append(row);
    fields.push({ name, kind, input, required: required.has(name) });
  }
  if (fields.length === 0) {
    const none = document.createElement('p');
    none.className = 'muted';
    none.textContent = 'This tool takes no arguments.';
    container.append(none);
  }

  function read() {
    const args = {};
    for (const { name, kind, input, required: needed } of fields) {
      const raw = kind === 'boolean' ? null : input.value;
      if (kind === 'boolean') {
        if (input.checked || needed) args[name] = input.checked;
        continue;
      }
      if (raw.trim() === '') {
        if (needed) return { error: `'${name}' is required` };
        continue;
      }
      switch (kind) {
        case 'number': {
          const n = Number(raw);
          if (!Number.isFinite(n)) return { error: `'${name}' must be a number` };
          args[name] = n;
          break;
        }
        case 'lines':
          args[name] = raw.split('\n').map((l) => l.trim()).filter((l) => l);
          break;
        case 'json':
          try { args[name] = JSON.parse(raw); } catch (e) { return { error: `'${name}' must be JSON: ${e.message}` }; }
          break;
        default:
          args[name] = raw;
      }
    }
    return { args };
  }
  return { read };
}
