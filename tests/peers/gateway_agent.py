"""Agent-side client for the gateway tests, written for this project with the PyPI `mcp` client
library (the initialize era). It starts `schemawatch mcp-gateway` as an agent host would, walks
a scenario against tests/peers/gateway_peer.py behind it, and prints one JSON object of what it
saw for the Rust test (tests/cli/gateway.rs) to judge.

  gateway_agent.py --bin SCHEMAWATCH --config CONFIG --watch NAME --control PATH --errlog PATH
                   [--era legacy|modern]

`legacy` (default) walks the whole scenario over `initialize`; `modern` speaks 2026-07-28
(`server/discover`, `subscriptions/listen`): accepted tools, a flip announced on the listen
stream, the flipped tool gone and refused.
"""
import argparse
import json
import re
import subprocess
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

WAIT = 60  # seconds: a generous bound for the slow shared CI box, never asserted on


def text_of(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("--bin", "--config", "--watch", "--control", "--errlog"):
        ap.add_argument(name, required=True)
    ap.add_argument("--era", default="legacy")
    args = ap.parse_args()
    if args.era == "modern":
        await modern(args)
        return
    out = {}
    changed = anyio.Event()
    changes = {"tools": 0}

    async def on_message(message) -> None:
        nonlocal changed
        if isinstance(message, types.ToolListChangedNotification):
            changes["tools"] += 1
            changed.set()

    async def wait_changed(label: str) -> None:
        nonlocal changed
        with anyio.fail_after(WAIT):
            await changed.wait()
        changed = anyio.Event()
        out.setdefault("list_changed_after", []).append(label)

    def flip(state: str) -> None:
        with open(args.control, "w", encoding="utf-8") as f:
            f.write(state)

    def cli(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([args.bin, *argv, "--config", args.config], capture_output=True, text=True)

    server = StdioServerParameters(
        command=args.bin,
        args=["mcp-gateway", "--config", args.config, "--watch", args.watch],
    )
    with open(args.errlog, "w", encoding="utf-8") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write):
            async with ClientSession(read, write, message_handler=on_message) as session:
                init = await session.initialize()
                out["instructions"] = init.instructions
                out["listChanged"] = bool(init.capabilities.tools and init.capabilities.tools.list_changed)

                async def tool_names():
                    return sorted(t.name for t in (await session.list_tools()).tools)

                out["tools_start"] = await tool_names()
                echo = await session.call_tool("echo", {"text": "hello"})
                out["echo"] = {"error": bool(echo.is_error), "text": text_of(echo)}
                page = await session.call_tool("fetch_page", {})
                out["fetch_page"] = {"error": bool(page.is_error), "text": text_of(page)}

                # Out of band: the upstream flips read_note's annotations.
                flip("flip")
                await wait_changed("flip")
                out["tools_flipped"] = await tool_names()

                # The daemon's part, by hand: a refresh queues the review.
                out["check_exit"] = cli("check").returncode
                message = ""
                with anyio.fail_after(WAIT):
                    while not re.search(r"open review \d+", message):
                        try:
                            await session.call_tool("read_note", {"note_id": "1"})
                            message = "(forwarded)"
                        except Exception as e:  # McpError: the refusal
                            message = str(e)
                        if not re.search(r"open review \d+", message):
                            await anyio.sleep(0.2)
                out["refusal"] = message
                review = re.search(r"open review (\d+)", message).group(1)
                accept = cli("pending", "accept", review, "--reviewer", "test", "--reason", "gateway test")
                out["accept_exit"] = accept.returncode
                await wait_changed("accept")
                out["tools_accepted"] = await tool_names()
                note = await session.call_tool("read_note", {"note_id": "7"})
                out["read_note"] = {"error": bool(note.is_error), "text": text_of(note)}

                # A description gains tag characters: withheld (read_note drifts back too).
                flip("hidden")
                await wait_changed("hidden")
                out["tools_hidden"] = await tool_names()
                try:
                    await session.call_tool("summarize", {"text": "abc"})
                    out["summarize"] = "(forwarded)"
                except Exception as e:
                    out["summarize"] = str(e)
                try:
                    await session.call_tool("read_notes", {"note_id": "1"})
                    out["near_match"] = "(forwarded)"
                except Exception as e:
                    out["near_match"] = str(e)
    print(json.dumps(out, sort_keys=True))


async def modern(args) -> None:
    from mcp.client.client import Client

    out = {}
    server = StdioServerParameters(
        command=args.bin,
        args=["mcp-gateway", "--config", args.config, "--watch", args.watch],
    )
    async with Client(server, mode="auto") as client:
        out["discovered"] = client.session.discover_result is not None

        async def tool_names():
            return sorted(t.name for t in (await client.list_tools()).tools)

        out["tools_start"] = await tool_names()
        async with client.listen(tools_list_changed=True) as sub:
            out["honored"] = bool(sub.honored.tools_list_changed)
            with open(args.control, "w", encoding="utf-8") as f:
                f.write("flip")
            with anyio.fail_after(WAIT):
                event = await sub.__anext__()
            out["event"] = type(event).__name__
        out["tools_flipped"] = await tool_names()
        try:
            result = await client.call_tool("read_note", {"note_id": "1"})
            out["refusal"] = "(forwarded) " + text_of(result)
        except Exception as e:
            out["refusal"] = str(e)
        echo = await client.call_tool("echo", {"text": "modern"})
        out["echo"] = text_of(echo)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    try:
        anyio.run(main)
    except Exception as e:  # the Rust test prints this with the gateway's stderr
        print(json.dumps({"failed": repr(e)}))
        sys.exit(1)
