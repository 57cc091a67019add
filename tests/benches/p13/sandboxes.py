"""P13: jp's sandbox against the sandboxes users would pick instead, same machine, same run
(issue 27). Every side is a fresh process started and waited for by this script (process start
and exit included, as a user pays them), in alternating rounds after a warm-up of each.

One-shot, the same trivial command (`/bin/true`) in the same workspace:
- bare: `/bin/true` spawned directly — the floor;
- jp: `jp tool call truth`, a stdio tool whose command is `/bin/true`, policy `.` read-write and
  no network: jp starts, checks the workspace's approved configuration, resolves the tool and
  spawns it under Landlock + seccomp (clone, no fork), then reports;
- jp without the OS sandbox: the same with `--no-os-sandbox` (what jp itself costs; the
  difference to the row above is the sandbox's share, measured by this switch);
- bwrap (bubblewrap, what sandbox-runtime and Codex use on Linux): read-only system, the workspace
  bound read-write, no network, own PID namespace, `--die-with-parent`;
- srt (`@anthropic-ai/sandbox-runtime`, npm): `srt -s settings "true"` with the workspace
  writable and no network allowed (node start, its proxies, then bubblewrap).
A Landlock-only sandbox has no command-line tool on Debian: not measured.
P13k: run as root (as this script is on a VM), bubblewrap needs no user namespace (root may make
the others without one) while jp makes one for every sandboxed tool, whoever runs it. So where
the script runs as root, jp and bwrap are also run as an unprivileged user (uid 65534, as a
user runs them: each then makes a user namespace) on a copy of the workspace that user owns,
the same jp binary copied where that user can run it, its state in a home of its own.
P13l: the start of each binary alone, `jp --version` vs `bwrap --version` (exec, the dynamic
loader with its relocations, argument parsing, exit): what a 45 MB binary pays before it does
anything. P13m: P13d without it, each side's one-shot median minus its own `--version` median.
P13j: reading one small file, `jp tool call fs_read_file` (the builtin tool, in-process: no
child, the policy deciding the read) vs `cat` of it under bwrap as above.

MCP server cold start, spawn + `initialize` + `tools/list` + one `tools/call` (read a small file)
+ close, the reference `@modelcontextprotocol/server-filesystem` on Node:
- bare: the server spawned directly;
- jp: `jp mcp` wrapping it (`[mcp.servers]`, started under jp's OS sandbox on the first list);
- srt: the server run under `srt`.

Prints medians with min/max and `TABLE|…` lines; asserts nothing about time.
Usage: sandboxes.py JP SRT SERVER_JS [ROUNDS]
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

jp, srt, server_js = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 15
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from mcp_raw_client import Server  # noqa: E402

bwrap = shutil.which("bwrap")


def timed(argv, cwd, **kw):
    t = time.perf_counter_ns()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    return time.perf_counter_ns() - t


def bwrap_argv(ws, command):
    argv = [bwrap, "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = os.readlink(f"/{link}") if os.path.islink(f"/{link}") else None
        argv += ["--symlink", target, f"/{link}"] if target else ["--ro-bind", f"/{link}", f"/{link}"]
    # A private /tmp first: the workspace (under /tmp here) is bound over it.
    return argv + ["--tmpfs", "/tmp", "--bind", ws, ws, "--chdir", ws, "--proc", "/proc", "--dev", "/dev",
                   "--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"] + command


def report(id_, label, samples, base_label, base):
    ms = lambda xs: statistics.median(xs) / 1e6
    a, b = ms(samples), ms(base)
    print(f"p13: {label}: median {a:.1f} ms (min {min(samples) / 1e6:.1f}, max {max(samples) / 1e6:.1f}); "
          f"{base_label}: {b:.1f} ms")
    print(f"TABLE|{id_}|{label}|{a:.1f} ms|{base_label} {b:.1f} ms|{a / b:.2f}x|-|info")


with tempfile.TemporaryDirectory() as root:
    ws = os.path.join(root, "ws")
    os.makedirs(os.path.join(ws, ".jp"))
    with open(os.path.join(ws, "notes.txt"), "w") as f:
        f.write("hello\n")
    node_modules = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(server_js))))
    with open(os.path.join(ws, ".jp", "config.toml"), "w") as f:
        f.write(f'''[conversation.tools.truth]
source = "local"
command = "/bin/true"
parameters = {{}}
[conversation.tools.truth.access]
filesystem = [{{ path = ".", allow = ["read", "write"] }}]

[mcp.servers.files]
command = "node"
args = ["{server_js}", "{ws}"]
read_paths = ["{node_modules}"]
tools = ["read_text_file"]
[mcp.servers.files.access]
filesystem = [{{ path = ".", allow = ["read"] }}]
''')
    subprocess.run([jp, "trust", "--yes", "--workspace", ws], check=True, stdout=subprocess.DEVNULL)
    settings = os.path.join(root, "srt-settings.json")
    with open(settings, "w") as f:
        json.dump({"filesystem": {"denyRead": [], "allowWrite": [ws], "denyWrite": []},
                   "network": {"allowedDomains": [], "deniedDomains": []}}, f)

    sides = {
        "bare": lambda: timed(["/bin/true"], ws),
        "jp": lambda: timed([jp, "tool", "call", "truth"], ws),
        "jp-nosandbox": lambda: timed([jp, "--no-os-sandbox", "tool", "call", "truth"], ws),
        "srt": lambda: timed([srt, "-s", settings, "true"], ws),
    }
    if bwrap:
        sides["bwrap"] = lambda: timed(bwrap_argv(ws, ["/bin/true"]), ws)
        sides["jp-read"] = lambda: timed([jp, "tool", "call", "fs_read_file", "--args", '{"path":"notes.txt"}'], ws)
        sides["bwrap-cat"] = lambda: timed(bwrap_argv(ws, ["/usr/bin/cat", "notes.txt"]), ws)
        sides["jp-version"] = lambda: timed([jp, "--version"], ws)
        sides["bwrap-version"] = lambda: timed([bwrap, "--version"], ws)
    else:
        print("p13: bubblewrap (bwrap) is not installed: not measured")
    nobody = 65534
    if bwrap and os.geteuid() == 0:
        # The same workspace, binary and configuration, owned by an unprivileged user.
        os.chmod(root, 0o755)
        user = os.path.join(root, "user")
        shutil.copytree(ws, os.path.join(user, "ws"))
        os.makedirs(os.path.join(user, "home"))
        user_jp = os.path.join(user, "jp")
        shutil.copy2(jp, user_jp)
        for dirpath, dirnames, filenames in os.walk(user):
            for name in [dirpath] + [os.path.join(dirpath, n) for n in dirnames + filenames]:
                os.chown(name, nobody, nobody)
        uws = os.path.join(user, "ws")
        user_env = {"PATH": "/usr/bin:/bin", "HOME": os.path.join(user, "home")}

        def timed_as_user(argv):
            return timed(argv, uws, user=nobody, group=nobody, extra_groups=[], env=user_env)

        subprocess.run([user_jp, "trust", "--yes", "--workspace", uws], check=True, stdout=subprocess.DEVNULL,
                       user=nobody, group=nobody, extra_groups=[], env=user_env)
        sides["jp-user"] = lambda: timed_as_user([user_jp, "tool", "call", "truth"])
        sides["bwrap-user"] = lambda: timed_as_user(bwrap_argv(uws, ["/bin/true"]))
    samples = {k: [] for k in sides}
    for run in sides.values():  # warm-up
        run()
    order = list(sides)
    for i in range(rounds):
        for k in (order if i % 2 == 0 else order[::-1]):
            samples[k].append(sides[k]())
    base = samples["bare"]
    report("P13a", "one-shot /bin/true under jp (jp tool call, Landlock + seccomp)", samples["jp"], "bare spawn", base)
    report("P13b", "the same under jp --no-os-sandbox (jp without its sandbox)", samples["jp-nosandbox"], "bare spawn", base)
    if bwrap:
        report("P13c", "one-shot /bin/true under bubblewrap (ro system, workspace rw, no net, own pid ns)", samples["bwrap"], "bare spawn", base)
        report("P13d", "jp tool call vs bubblewrap, the same command", samples["jp"], "bwrap", samples["bwrap"])
        report("P13l", "start alone: jp --version vs bwrap --version", samples["jp-version"], "bwrap --version",
               samples["bwrap-version"])
        med = lambda k: statistics.median(samples[k]) / 1e6
        a, b = med("jp") - med("jp-version"), med("bwrap") - med("bwrap-version")
        print(f"p13: the one-shot beyond each binary's start: jp {a:.1f} ms, bwrap {b:.1f} ms")
        print(f"TABLE|P13m|P13d beyond each binary's start (one-shot minus --version)|{a:.1f} ms|bwrap {b:.1f} ms|"
              f"{a / b:.2f}x|-|info")
        report("P13j", "read a small file: jp tool call fs_read_file (builtin) vs cat under bubblewrap",
               samples["jp-read"], "bwrap cat", samples["bwrap-cat"])
    if "jp-user" in samples:
        report("P13k", "as an unprivileged user (each makes a user namespace): jp tool call vs bubblewrap, the same command",
               samples["jp-user"], "bwrap", samples["bwrap-user"])
    report("P13e", "one-shot /bin/true under srt (sandbox-runtime 0.0.83: node, proxies, bubblewrap)", samples["srt"], "bare spawn", base)
    report("P13f", "jp tool call vs srt, the same command", samples["jp"], "srt", samples["srt"])

    # MCP server cold start: spawn + initialize + tools/list + one call + close.
    path = os.path.join(ws, "notes.txt")

    def mcp_cold(argv, tool):
        t = time.perf_counter_ns()
        s = Server(argv, ws, tool, {"path": path})
        s.request("tools/list", {})
        assert s.call() == "hello\n"
        s.close()
        return time.perf_counter_ns() - t

    mcp = {
        "bare": lambda: mcp_cold(["node", server_js, ws], "read_text_file"),
        "jp": lambda: mcp_cold([jp, "mcp"], "files.read_text_file"),
        "srt": lambda: mcp_cold([srt, "-s", settings, "-c", f"node {server_js} {ws}"], "read_text_file"),
    }
    cold = {k: [] for k in mcp}
    for run in mcp.values():
        run()
    mcp_rounds = max(3, rounds // 2)
    for i in range(mcp_rounds):
        for k in (list(mcp) if i % 2 == 0 else list(mcp)[::-1]):
            cold[k].append(mcp[k]())
    report("P13g", "MCP server cold start (spawn, initialize, tools/list, one call) through jp mcp (sandboxed)", cold["jp"], "bare server", cold["bare"])
    report("P13h", "the same under srt", cold["srt"], "bare server", cold["bare"])
    report("P13i", "MCP server cold start: jp mcp vs srt", cold["jp"], "srt", cold["srt"])
