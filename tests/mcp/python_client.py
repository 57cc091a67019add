"""Drives `jp mcp` over stdio with the official Python MCP SDK (the `mcp` package, pinned by the
test that runs this). Usage: python_client.py JP WORKSPACE. Prints one `ok <check>` line per check
and exits non-zero on the first failure."""
import asyncio, json, os, re, sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp import types

JP, WS = sys.argv[1], sys.argv[2]

def ok(what):
    print(f"ok {what}", flush=True)

def text(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return ") Z " not in f.read()
    except FileNotFoundError:
        return False

answers = []

async def elicit(context, params):
    choice = answers.pop(0)
    if choice is None:
        return types.ElicitResult(action="decline")
    return types.ElicitResult(action="accept", content=choice)

SECRET = "s3cret-value-for-the-run-test"

def server():
    # The fetch wait is generous so that a slow machine does not turn "not yet" into a different
    # answer; `run` may start 8 commands at once for the concurrency check.
    return StdioServerParameters(command=JP, args=["mcp", "--fetch-wait-ms", "1000", "--max-concurrent", "8"], cwd=WS,
                                 env={**os.environ, "JP_TEST_SECRET": SECRET})

async def run_until_stopped(s, hid, seen=""):
    for _ in range(100):
        r = await s.call_tool("run", {"action": "fetch", "id": hid})
        st = r.structured_content
        seen += st.get("content", "")
        if st["state"] == "stopped":
            return st, seen
    raise AssertionError(f"{hid} did not stop: {seen!r}")

async def session_checks():
    async with stdio_client(server()) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as s:
            await s.initialize()
            tools = {t.name: t for t in (await s.list_tools()).tools}
            for name in ["fs_read_file", "fs_list_files", "fs_grep_files", "fs_create_file", "fs_modify_file",
                         "fs_delete_file", "fs_move_file", "run", "stager"]:
                assert name in tools, (name, list(tools))
            for t in tools.values():
                assert t.input_schema["type"] == "object", t
                assert not any(k in t.input_schema for k in ("oneOf", "anyOf", "allOf")), t
            assert tools["fs_read_file"].annotations.read_only_hint is True
            assert tools["fs_delete_file"].annotations.destructive_hint is True
            assert tools["fs_read_file"].annotations.open_world_hint is False
            assert tools["stager"].input_schema["properties"]["action"]["enum"] == ["spawn", "fetch", "apply", "abort"]
            ok("tools/list: every tool, object schemas without oneOf, policy hints, stateful flat schema")

            r = await s.call_tool("fs_read_file", {"path": "notes.txt"})
            assert not r.is_error and text(r) == "one\ntwo\nthree\n", r
            r = await s.call_tool("fs_list_files", {})
            assert "notes.txt" in text(r), r
            r = await s.call_tool("fs_grep_files", {"pattern": "tw."})
            assert "notes.txt:2:two" in text(r), r
            r = await s.call_tool("fs_create_file", {"path": "new/made.txt", "content": "made"})
            assert not r.is_error, r
            r = await s.call_tool("fs_modify_file", {"path": "new/made.txt", "patterns": [{"old": "made", "new": "changed"}]})
            assert not r.is_error, r
            r = await s.call_tool("fs_move_file", {"source": "new/made.txt", "destination": "moved.txt"})
            assert not r.is_error, r
            assert open(os.path.join(WS, "moved.txt")).read() == "changed"
            r = await s.call_tool("fs_delete_file", {"path": "moved.txt"})
            assert not r.is_error and not os.path.exists(os.path.join(WS, "moved.txt")), r
            ok("each first-party fs tool")

            try:
                await s.call_tool("no_such_tool", {})
                raise AssertionError("an unknown tool must be a JSON-RPC error")
            except Exception as e:
                assert "no tool named 'no_such_tool'" in str(e), e
            # MCP 2025-11-25 (SEP-1303): the caller's input mistakes are tool results the model
            # reads (isError), checked against the tool's whole schema before it runs.
            r = await s.call_tool("fs_read_file", {})
            assert r.is_error and "argument 'path' is required but missing; see the tool's schema" in text(r), r
            r = await s.call_tool("fs_read_file", {"path": 42})
            assert r.is_error and "argument 'path' must be a string, got 42" in text(r), r
            r = await s.call_tool("count", {"times": 0})
            assert r.is_error and "tool 'count': argument 'times' must be at least 1, got 0" in text(r), r
            assert not os.path.exists(os.path.join(WS, "counted.txt")), "count ran with times=0"
            r = await s.call_tool("count", {"times": 2})
            assert not r.is_error and text(r) == "counted 2", r
            assert open(os.path.join(WS, "counted.txt")).read() == "2"
            ok("unknown tool is a JSON-RPC error; missing argument, wrong type and a minimum are isError results naming the fix")

            answers[:] = [None]
            r = await s.call_tool("fs_read_file", {"path": ".env"})
            assert r.is_error and "Access denied" in text(r) and "hunter2" not in text(r), r
            answers[:] = [{"decision": "allow once"}]
            r = await s.call_tool("fs_read_file", {"path": ".env"})
            assert not r.is_error and text(r) == "TOKEN=hunter2\n", r
            ok("a sensitive read asks through elicitation: declined is isError, allowed once reads it")

            r = await s.call_tool("stager", {"action": "spawn", "path": "notes.txt"})
            st = r.structured_content
            assert st["id"].startswith("h_") and st["state"] == "waiting", st
            assert st["question"]["text"] == "Stage 'one'?", st
            hid, pid = st["id"], int(st["content"].split()[1])
            assert alive(pid)
            r = await s.call_tool("stager", {"action": "apply", "id": hid, "input": True})
            assert r.structured_content["question"]["text"] == "Stage 'two'?", r
            r = await s.call_tool("stager", {"action": "fetch", "id": hid})
            assert r.structured_content["state"] == "waiting", r
            await s.call_tool("stager", {"action": "apply", "id": hid, "input": False})
            r = await s.call_tool("stager", {"action": "apply", "id": hid, "input": True})
            st = r.structured_content
            assert st == {"id": hid, "state": "stopped", "result": "Staged 2 of 3 changes."}, st
            assert json.loads(text(r)) == st
            assert open(os.path.join(WS, "staged.txt")).read() == "one\nthree\n"
            r = await s.call_tool("stager", {"action": "fetch", "id": hid})
            assert r.is_error and f"no live handle '{hid}'" in text(r), r
            ok("stateful VFS tool: spawn -> apply -> fetch -> stopped, then its id is gone")

            r = await s.call_tool("stager", {"action": "spawn", "path": "notes.txt"})
            hid, pid = r.structured_content["id"], int(r.structured_content["content"].split()[1])
            r = await s.call_tool("stager", {"action": "abort", "id": hid})
            assert r.structured_content["state"] == "stopped" and not alive(pid), r
            ok("abort ends the tool's process")

            # One-shot wrapping: no action, questions asked through elicitation and applied.
            answers[:] = [{"answer": True}, {"answer": True}, {"answer": False}]
            r = await s.call_tool("stager", {"path": "notes.txt"})
            assert not r.is_error and text(r).endswith("Staged 2 of 3 changes."), r
            ok("a stateful tool called without action runs to its end, its questions elicited")

            progress = []
            async def on_progress(p, total, message):
                progress.append(p)
            r = await s.call_tool("run", {"action": "spawn", "program": "sh", "args": ["-c", "for i in 1 2 3; do echo tick $i; sleep 0.4; done; exit 3"]},
                                  progress_callback=on_progress)
            hid = r.structured_content["id"]
            seen = r.structured_content.get("content", "")
            states = []
            for _ in range(40):
                r = await s.call_tool("run", {"action": "fetch", "id": hid})
                st = r.structured_content
                states.append(st["state"])
                seen += st.get("content", "")
                if st["state"] == "stopped":
                    break
            assert "tick 1\ntick 2\ntick 3\n" in seen, seen
            assert st["error"]["message"] == "exited with code 3", st
            assert states.count("running") >= 2, states
            r = await s.call_tool("run", {"action": "spawn", "program": "rm", "args": ["-rf", "."]})
            assert r.is_error and "not allowed" in text(r), r
            ok("run: fetches see the output grow, stopped with the exit code; a command not allowed is refused at spawn")

            r = await s.call_tool("run", {"action": "spawn", "program": "cat"})
            hid = r.structured_content["id"]
            r = await s.call_tool("run", {"action": "apply", "id": hid, "input": "hello from apply\n"})
            seen = r.structured_content.get("content", "")
            r = await s.call_tool("run", {"action": "apply", "id": hid, "input": None})  # closes stdin
            st = r.structured_content
            seen += st.get("content", "")
            if st["state"] != "stopped":
                st, seen = await run_until_stopped(s, hid, seen)
            assert "hello from apply" in seen and st["result"] == "exited with code 0", (st, seen)
            ok("run: apply writes to its stdin, null closes it")

            r = await s.call_tool("run", {"action": "spawn", "program": "sh", "args": ["-c", "echo pid $$; exec sleep 100"]})
            hid = r.structured_content["id"]
            seen = r.structured_content.get("content", "")
            while not re.search(r"^pid \d+$", seen, re.M):
                seen += (await s.call_tool("run", {"action": "fetch", "id": hid})).structured_content.get("content", "")
            sleeper = int(re.search(r"^pid (\d+)$", seen, re.M).group(1))
            assert alive(sleeper)
            r = await s.call_tool("run", {"action": "abort", "id": hid})
            assert r.structured_content["state"] == "stopped" and not alive(sleeper), r
            ok("run: abort kills its process group")

            # Abort preempts a busy handle (RFD 009): a fetch waiting on it (up to the fetch
            # wait) is stopped where it stands, the abort answers `stopped` at once, not "busy".
            r = await s.call_tool("run", {"action": "spawn", "program": "sh", "args": ["-c", "echo pid $$; exec sleep 100"]})
            hid = r.structured_content["id"]
            seen = r.structured_content.get("content", "")
            while not re.search(r"^pid \d+$", seen, re.M):
                seen += (await s.call_tool("run", {"action": "fetch", "id": hid})).structured_content.get("content", "")
            sleeper = int(re.search(r"^pid (\d+)$", seen, re.M).group(1))
            waiting = asyncio.create_task(s.call_tool("run", {"action": "fetch", "id": hid}))
            await asyncio.sleep(0.3)
            r = await s.call_tool("run", {"action": "abort", "id": hid})
            assert (r.structured_content or {}).get("state") == "stopped", r  # not "busy with another call"
            f = await waiting
            # (On a machine slow enough that the fetch ended first, the abort was not a preemption.)
            assert f.structured_content["state"] == "running" or "aborted by another call" in json.dumps(f.structured_content), f
            assert not alive(sleeper)
            ok("run: abort preempts a fetch in progress on the same handle")

            # A secret the command prints in two halves, a fetch in between: still replaced.
            half = len(SECRET) // 2
            script = f'printf %s "$(echo $JP_TEST_SECRET | cut -c1-{half})"; sleep 2; echo "$JP_TEST_SECRET" | cut -c{half + 1}-'
            r = await s.call_tool("run", {"action": "spawn", "program": "sh", "args": ["-c", script], "envs": ["JP_TEST_SECRET"]})
            st, seen = await run_until_stopped(s, r.structured_content["id"], r.structured_content.get("content", ""))
            assert SECRET not in seen and SECRET[:half] not in seen and "[REDACTED]" in seen, seen
            ok("run: output is scrubbed even when a secret is split across fetches")

            r = await s.call_tool("stager", {"action": "spawn", "path": "notes.txt"})
            live = r.structured_content["id"]
            r = await s.call_tool("stager", {"action": "fetch", "id": "h_999"})
            assert r.is_error and "no live handle 'h_999'" in text(r) and live in text(r), r
            r = await s.call_tool("stager", {"action": "rewind", "id": live})
            assert r.is_error and "unknown action 'rewind'" in text(r), r
            r = await s.call_tool("stager", {"action": "spawn"})
            assert r.is_error and "argument 'path' is required but missing" in text(r), r
            await s.call_tool("stager", {"action": "abort", "id": live})
            r = await s.call_tool("stager", {"action": "fetch", "id": live})
            assert r.is_error and f"no live handle '{live}'" in text(r), r
            ok("an unknown or stopped handle, an unknown action and a bad spawn are isError results")

            # A hanging tool, cancelled by the client: no process left.
            task = asyncio.ensure_future(s.call_tool("hang", {}))
            pidfile = os.path.join(WS, "hang.pid")
            for _ in range(100):
                if os.path.exists(pidfile) and open(pidfile).read():
                    break
                await asyncio.sleep(0.1)
            hang_pid = int(open(pidfile).read())
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
            for _ in range(150):
                if not alive(hang_pid):
                    break
                await asyncio.sleep(0.1)
            assert not alive(hang_pid), "the cancelled tool's process is gone"
            ok("notifications/cancelled ends a hanging tool (cancel, SIGTERM, SIGKILL)")

            # Progress with a token, before the result.
            events = []
            async def on_progress2(p, total, message):
                events.append("progress")
            r = await s.call_tool("run", {"program": "sleep", "args": ["2.5"]}, progress_callback=on_progress2)
            events.append("result")
            assert not r.is_error and "exited with code 0" in text(r), r
            assert events[0] == "progress" and events[-1] == "result", events
            ok("progress notifications arrive while a call runs, before its result")

            # 8 concurrent calls: each waits (bounded) until all 8 have started, so they can only
            # all succeed if they really run at the same time.
            barrier = ('mkdir -p barrier; touch barrier/$$; i=0; '
                       'while [ "$(ls barrier | wc -l)" -lt 8 ]; do i=$((i+1)); [ $i -gt 400 ] && exit 7; sleep 0.05; done')
            rs = await asyncio.gather(*[s.call_tool("run", {"program": "sh", "args": ["-c", barrier]}) for _ in range(8)])
            assert all(not r.is_error and "exited with code 0" in text(r) for r in rs), [text(r) for r in rs]
            rs = await asyncio.gather(*[s.call_tool("fs_read_file", {"path": "notes.txt"}) for _ in range(8)])
            assert all(text(r) == "one\ntwo\nthree\n" for r in rs)
            ok("8 concurrent calls, running at the same time")

            # Disconnect mid-handle: left for the outer check.
            r = await s.call_tool("stager", {"action": "spawn", "path": "notes.txt"})
            return int(r.structured_content["content"].split()[1])

async def main():
    pid = await session_checks()
    for _ in range(100):
        if not alive(pid):
            break
        await asyncio.sleep(0.1)
    assert not alive(pid), "the handle's process ended with the session"
    ok("disconnect mid-handle: the session's handles are aborted, no process left")

asyncio.run(main())
