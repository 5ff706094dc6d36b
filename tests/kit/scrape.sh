#!/usr/bin/env bash
# Writes a /metrics scrape of a real daemon to OUT, for tests/kit/metric_names.py: per-watch
# metrics on, one watch that registers, one that fails (refresh_errors_total), one webhook
# sink whose receiver is a closed loopback port (notifications_total, _pending). Everything
# on 127.0.0.1; the daemon is stopped with SIGTERM before the script exits.
#
#   tests/kit/scrape.sh target/debug/schemawatch metrics.txt
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 SCHEMAWATCH_BIN OUT" >&2
  exit 2
fi
bin=$1 out=$2
t=$(mktemp -d "${TMPDIR:-/tmp}/schemawatch-scrape.XXXXXX")
pid=""
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$t"
}
trap cleanup EXIT

# A closed port: bind one, then let it go (the sink's deliveries fail with a connect error).
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '%s\n' '{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1"}, "paths": {"/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}}}}' >"$t/openapi.json"
cat >"$t/schemawatch.toml" <<TOML
[storage]
path = "registry.sqlite3"

[server]
listen = "127.0.0.1:0"
per_watch_metrics = true

[[notify]]
name = "hook"
kind = "webhook"
url = "http://127.0.0.1:$dead/hook"
secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

[[watch]]
name = "kit.pets"
kind = "openapi"
path = "openapi.json"
interval = "2s"

[[watch]]
name = "kit.missing"
kind = "openapi"
path = "missing.json"
interval = "2s"
TOML

"$bin" run --config "$t/schemawatch.toml" >"$t/log" 2>&1 &
pid=$!
addr=""
families=(schemawatch_refresh_errors_total schemawatch_notifications_total schemawatch_watch_status schemawatch_refreshes_total)
for _ in $(seq 1 300); do
  if [ -z "$addr" ]; then
    addr=$(sed -n 's/.*event="api_listening" addr=\([0-9.:]*\).*/\1/p' "$t/log" | head -n 1)
  fi
  if [ -n "$addr" ] && python3 -c 'import sys, urllib.request as u; open(sys.argv[2], "wb").write(u.build_opener(u.ProxyHandler({})).open(sys.argv[1], timeout=5).read())' \
    "http://$addr/metrics" "$t/scrape" 2>/dev/null; then
    missing=0
    for f in "${families[@]}"; do
      grep -q "^$f" "$t/scrape" || missing=1
    done
    if [ "$missing" = 0 ]; then
      cp "$t/scrape" "$out"
      exit 0
    fi
  fi
  kill -0 "$pid" 2>/dev/null || { cat "$t/log" >&2; echo "scrape.sh: the daemon exited" >&2; exit 1; }
  sleep 0.2
done
cat "$t/log" >&2
echo "scrape.sh: no scrape with ${families[*]} within 60 s" >&2
exit 1
