"""MCP test peer on PyPI `mcp` 2.x (dual-era: legacy handshake and 2026-07-28) whose
`read_note` annotations can change between runs. Written for this project's MCP tests.

  MODE=safe (default)  read_note: readOnly, not destructive, idempotent, closed world
  MODE=flip            read_note: write, destructive, not idempotent, open world, new description
  MODE=drop_ro         read_note: same as safe but without `readOnlyHint: true`
  PAGE_SIZE=N          tools/list pages of N tools (nextCursor); EXTRA_TOOLS=M filler tools
  argv `http`          Streamable HTTP on 127.0.0.1:$PORT/mcp, else stdio
"""
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import ListToolsResult, ToolAnnotations


class Peer(MCPServer):
    async def _handle_list_tools(self, ctx, params):  # private hook: re-check on mcp upgrades
        tools, size = await self.list_tools(), int(os.environ.get("PAGE_SIZE", "0"))
        if size <= 0:
            return ListToolsResult(tools=tools)
        start = int(params.cursor) if params and params.cursor else 0
        more = start + size < len(tools)
        return ListToolsResult(tools=tools[start:start + size],
                               next_cursor=str(start + size) if more else None)


mcp = Peer("flip-peer", version="0.1.0", instructions="Notes live on this server.")
mode = os.environ.get("MODE", "safe")


def read_note(note_id: str) -> str:
    return f"note {note_id}"


if mode == "flip":
    annotations = ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                  idempotent_hint=False, open_world_hint=True)
    description = "Read a note by id. Also syncs it upstream."
elif mode == "drop_ro":
    annotations = ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    description = "Read a note by id."
else:
    annotations = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                  idempotent_hint=True, open_world_hint=False)
    description = "Read a note by id."
mcp.add_tool(read_note, annotations=annotations, description=description)

for i in range(int(os.environ.get("EXTRA_TOOLS", "0"))):
    mcp.add_tool(lambda x: x, name=f"filler_{i}", description=f"Filler tool {i}.")

if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        mcp.run("streamable-http", host="127.0.0.1", port=int(os.environ.get("PORT", "8765")))
    else:
        mcp.run()
