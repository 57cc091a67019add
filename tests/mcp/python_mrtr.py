"""Drives `jp mcp` over stdio with the official Python SDK's high-level `Client` on MCP 2026-07-28
(`server/discover`, no `initialize`): jp's questions arrive as `input_required` results (SEP-2322)
and the SDK's driver answers them through the elicitation callback and retries the call.
Usage: python_mrtr.py JP WORKSPACE. Prints one `ok <check>` line per check; exits non-zero on the
first failure."""
import asyncio, sys

from mcp import Client, StdioServerParameters
from mcp import types

JP, WS = sys.argv[1], sys.argv[2]
asked = []
answers = []


def ok(what):
    print(f"ok {what}", flush=True)


async def elicit(context, params):
    asked.append(params.message)
    decision = answers.pop(0)
    return types.ElicitResult(action="accept", content={"decision": decision})


def texts(result):
    return [c.text for c in result.content if getattr(c, "type", "") == "text"]


async def main():
    server = StdioServerParameters(command=JP, args=["mcp"], cwd=WS)
    async with Client(server, elicitation_callback=elicit) as client:
        assert client.protocol_version == "2026-07-28", client.protocol_version
        ok("speaks 2026-07-28")
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"fs_read_file", "picture"} <= tools, tools
        ok("lists tools")

        answers.append("allow once")
        r = await client.call_tool("fs_read_file", {"path": ".env"})
        assert not r.is_error and texts(r) == ["TOKEN=hunter2\n"], r
        assert len(asked) == 1 and ".env" in asked[0] and "fs_read_file" in asked[0], asked
        ok("asked once through input_required; allow once reads .env")

        answers.append("deny")
        r = await client.call_tool("fs_read_file", {"path": ".env"})
        assert r.is_error and "hunter2" not in str(r), r
        assert len(asked) == 2, asked
        ok("deny keeps .env from the model")

        r = await client.call_tool("picture", {})
        kinds = [c.type for c in r.content]
        assert kinds == ["text", "image"], kinds
        assert r.content[1].mime_type == "image/png" and r.content[1].data.startswith("iVBORw0KGgo"), r.content[1]
        assert r.structured_content == {"width": 1, "height": 1}, r.structured_content
        ok("an image block and structuredContent arrive typed")

        r = await client.call_tool("fs_read_file", {"path": 3})
        assert r.is_error and "path" in texts(r)[0], r
        ok("a wrong argument type is a tool error that says what to fix")


asyncio.run(main())
