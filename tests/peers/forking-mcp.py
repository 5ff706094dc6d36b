#!/usr/bin/env python3
"""A stdlib-only MCP stdio server that leaves descendants behind, like a careless wrapper
(docs/reliability.md H1, tests/daemon/container.rs):

- a double fork whose grandchild exits 0.2 s after its parent: an orphan, re-parented to the
  reaper (PID 1 in a container), a zombie forever unless someone reaps it;
- a double fork whose grandchild calls setsid() and then sleeps: a descendant outside the
  server's process group, which a process-group kill does not reach.

argv[1] is the sleeper's `sleep` argument, so a test can find its processes.
"""
import json
import os
import sys
import time

MARK = sys.argv[1] if len(sys.argv) > 1 else "3607"


def detach(then):
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            then()
            os._exit(0)
        os._exit(0)
    os.waitpid(pid, 0)


def short():
    time.sleep(0.2)


def sleeper():
    os.setsid()
    os.execvp("sleep", ["sleep", MARK])


detach(short)
detach(sleeper)

for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
             "serverInfo": {"name": "forking", "version": "0"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "fork", "description": "forks", "inputSchema": {"type": "object"}}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"],
                          "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
