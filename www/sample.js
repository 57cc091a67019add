// The small project a visitor's first visit opens on (the playground's own database, empty and
// never seeded before): a README that says what to try, and two sources to read, grep and edit.
// The demo conversation makes its own `jp-demo/` beside them.

export const SAMPLE_PROJECT = {
  'README.md': `# A sample project

These files live in this browser (IndexedDB), not on a server. Every tool call — yours from
"Call a tool yourself", or the agent's from the chat — goes through the page's policy, and each
file request it makes is listed under "Host requests" with what decided it.

Try, in the chat: "fix the TODO". The demo replays a recorded conversation, offline: the agent
makes its own small project, jp-demo/, finds the TODO in it and fixes it, asking you before each
change. Pick another model in the chat's settings to talk to your own.
`,
  'src/inventory.py': `"""A tiny inventory: items and how many of each are left."""

STOCK = {"apples": 3, "pears": 0, "plums": 12}


def in_stock(item):
    return STOCK.get(item, 0) > 0


if __name__ == "__main__":
    for item in STOCK:
        print(item, "yes" if in_stock(item) else "no")
`,
  'docs/notes.md': `# Notes

- The policy on the right is empty: the project read-write, no network, no processes.
- Narrow it, e.g. a read-only project, and watch the agent's writes being refused:

      [access]
      filesystem = [{ path = ".", allow = ["read"] }]
`,
};

/**
 * Write the sample project into `host` once per database: when `db` was never seeded and holds
 * no file. A visitor who deletes the files later keeps an empty project.
 */
export async function seedSample(host, db, storage = localStorage) {
  const key = `jp-seeded:${db}`;
  if (storage.getItem(key)) return false;
  storage.setItem(key, '1');
  if ((await host.listFiles()).length) return false;
  for (const [path, text] of Object.entries(SAMPLE_PROJECT)) await host.writeFile(path, text);
  return true;
}
