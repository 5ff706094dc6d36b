#!/usr/bin/env bash
# Literal `...` and $(...) in single quotes are on purpose (expected text, injection values);
# the predicates are called through `expect`.
# shellcheck disable=SC2016,SC2317
# The GitHub Action's script (scripts/github-action) on real git repositories, with the
# environment GitHub gives a composite action's step: INPUT_*, GITHUB_OUTPUT and
# GITHUB_STEP_SUMMARY files, GITHUB_BASE_REF naming the base branch of a pull request. The
# "remote" is a bare repository on disk and the checkout a shallow clone of the PR branch, as
# actions/checkout makes it; no network. SCHEMAWATCH_BIN points at the built binary (the
# install step is not exercised here: it is a cargo release build).
#
#   tests/kit/action_test.sh target/debug/schemawatch
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/kit/lib.sh
. "$here/lib.sh"

if [ $# -ne 1 ]; then
  echo "usage: $0 SCHEMAWATCH_BIN" >&2
  exit 2
fi
bin=$(cd "$(dirname "$1")" 2>/dev/null && pwd)/$(basename "$1")
if [ ! -x "$bin" ]; then
  missing_peer "schemawatch binary $1"
  finish
fi
script="$root/scripts/github-action"

t=$(mktemp -d "${TMPDIR:-/tmp}/schemawatch-action-test.XXXXXX")
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/home" "$t/tmp"
export GIT_CONFIG_NOSYSTEM=1 HOME="$t/home"
git config --global user.name test
git config --global user.email test@example.invalid
git config --global init.defaultBranch main
git config --global advice.detachedHead false

# Two endpoints. breaking: /owners removed. compatible: a new read-only endpoint.
base_doc='{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1.4.0"}, "paths": {
  "/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}},
  "/owners": {"get": {"operationId": "listOwners", "responses": {"200": {"description": "ok"}}}}}}'
breaking_doc='{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1.5.0"}, "paths": {
  "/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}}}}'
compatible_doc='{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1.5.0"}, "paths": {
  "/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}},
  "/owners": {"get": {"operationId": "listOwners", "responses": {"200": {"description": "ok"}}}},
  "/toys": {"get": {"operationId": "listToys", "responses": {"200": {"description": "ok"}}}}}}'

# The upstream: main has the base document; pull request branches change it.
git init -q "$t/src"
(
  cd "$t/src" || exit 2
  printf '%s\n' "$base_doc" >openapi.json
  git add openapi.json && git commit -qm base
  git checkout -qb pr-breaking
  printf '%s\n' "$breaking_doc" >openapi.json
  git commit -qam "remove /owners"
  git checkout -q main && git checkout -qb pr-compatible
  printf '%s\n' "$compatible_doc" >openapi.json
  git commit -qam "add /toys"
  git checkout -q main && git checkout -qb pr-newfile
  printf '%s\n' "$base_doc" >second.json
  git add second.json && git commit -qm "a second contract"
  git checkout -q main
)
git clone -q --bare "$t/src" "$t/origin.git"
main_sha=$(git -C "$t/origin.git" rev-parse main)

# A checkout as actions/checkout makes it: one branch, depth 1 (the base branch is not there).
checkout() {
  rm -rf "$t/ws"
  git clone -q --depth=1 --branch "$1" "file://$t/origin.git" "$t/ws"
}

# run_action VAR=VALUE...: runs the script in the checkout with only these variables (plus
# PATH, HOME, TMPDIR, SCHEMAWATCH_BIN and fresh GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files);
# sets $rc, $out (stdout and stderr), $outputs, $summary.
run_action() {
  : >"$t/output" && : >"$t/summary"
  out=$(cd "$t/ws" && env -i PATH="$PATH" HOME="$HOME" TMPDIR="$t/tmp" GIT_CONFIG_NOSYSTEM=1 \
    SCHEMAWATCH_BIN="$bin" GITHUB_OUTPUT="$t/output" GITHUB_STEP_SUMMARY="$t/summary" \
    "$@" "$script" 2>&1)
  rc=$?
  outputs=$(cat "$t/output")
  summary=$(cat "$t/summary")
}

expect() { # NAME CONDITION-COMMAND...: a check that shows the run when it fails
  local name=$1
  shift
  if "$@"; then
    pass "$name"
  else
    fail "$name" "exit $rc
outputs: $outputs
$out"
  fi
}

has() { grep -qF -- "$2" <<<"$1"; }

# ran RC [COMPATIBILITY FAILED]: the exit code, and the two outputs (none when not given).
ran() {
  [ "$rc" = "$1" ] || return 1
  if [ $# -eq 3 ]; then
    [ "$outputs" = "compatibility=$2"$'\n'"failed=$3" ]
  else
    [ -z "$outputs" ]
  fi
}

# 1. A pull request with a breaking change: the base branch is fetched, the gate fails.
checkout pr-breaking
run_action GITHUB_BASE_REF=main INPUT_PATH=openapi.json INPUT_SARIF=schemawatch.sarif
expect "breaking PR: exit 1, outputs compatibility=breaking, failed=true" ran 1 breaking true
expect "breaking PR: the base branch was fetched as origin/main" \
  [ "$(git -C "$t/ws" rev-parse -q --verify origin/main)" = "$main_sha" ]
expect "breaking PR: an ::error annotation on openapi.json" has "$out" "::error file=openapi.json"
expect "breaking PR: the job summary holds the Markdown report" has "$summary" "## Contract drift: breaking"
expect "breaking PR: the summary names the removed endpoint" has "$summary" "listOwners"
expect "breaking PR: the summary says the gate failed" \
  has "$summary" 'schemawatch: `openapi.json` against `origin/main`: breaking; gate (fail on `breaking`) **failed**.'
if python3 - "$t/ws/schemawatch.sarif" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["runs"][0]["results"]
assert d["version"] == "2.1.0", d["version"]
assert r and all(x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "openapi.json" for x in r), r
assert any(x["level"] == "error" for x in r), r
PY
then pass "breaking PR: SARIF 2.1.0 written with an error result on openapi.json"
else fail "breaking PR: SARIF 2.1.0 written with an error result on openapi.json"
fi

# 2. Without a job summary file (a local run): the Markdown report on stdout.
out=$(cd "$t/ws" && env -i PATH="$PATH" HOME="$HOME" TMPDIR="$t/tmp" SCHEMAWATCH_BIN="$bin" \
  INPUT_BASE=origin/main INPUT_PATH=openapi.json "$script" 2>&1)
rc=$? outputs="" summary=""
local_run() { [ "$rc" = 1 ] && has "$out" "## Contract drift: breaking" && ! has "$out" "::error"; }
expect "no GITHUB_STEP_SUMMARY: exit 1, Markdown on stdout, no workflow commands" local_run

# 3. Accepting both breaking changes passes the gate (the report still says breaking).
ids=$(cd "$t/ws" && "$bin" diff "git:origin/main:openapi.json" openapi.json --json \
  | python3 -c 'import json,sys; print(" ".join(c["id"] for c in json.load(sys.stdin)["changes"] if c["severity"] == "breaking"))')
{
  for id in $ids; do
    printf '[[accept]]\nchange = "%s"\nreviewer = "alice"\nreason = "clients migrated"\nexpires = "%s"\n\n' \
      "$id" "$(date -u -d '+30 days' +%F)"
  done
} >"$t/ws/accept.toml"
run_action GITHUB_BASE_REF=main INPUT_PATH=openapi.json INPUT_ACCEPT_FILE=accept.toml
expect "accepted breaking change ($(wc -w <<<"$ids") id): exit 0, compatibility=breaking, failed=false" \
  ran 0 breaking false

# 4. A compatible change passes; with fail-on compatible it fails.
checkout pr-compatible
run_action GITHUB_BASE_REF=main INPUT_PATH=openapi.json
expect "compatible PR: exit 0, compatibility=compatible, failed=false" ran 0 compatible false
expect "compatible PR: the summary says the gate passed" has "$summary" "gate (fail on \`breaking\`) passed."
run_action GITHUB_BASE_REF=main INPUT_PATH=openapi.json INPUT_FAIL_ON=compatible
expect "compatible PR with fail-on compatible: exit 1, failed=true" ran 1 compatible true
expect "compatible PR: no SARIF file unless asked" [ ! -e "$t/ws/schemawatch.sarif" ]

# 5. A file the base does not have: nothing to compare, passes.
checkout pr-newfile
run_action GITHUB_BASE_REF=main INPUT_PATH=second.json
expect "new file: exit 0, compatibility=new, failed=false" ran 0 new false
expect "new file: a notice on second.json" has "$out" "::notice file=second.json"

# 6. Outside a pull request: base is required; an explicit base revision works.
checkout pr-breaking
run_action INPUT_PATH=openapi.json
expect "push event without base: exit 2, no outputs" ran 2
expect "push event without base: the error says base is required" \
  has "$out" "input 'base' is required outside pull requests"
run_action INPUT_PATH=openapi.json INPUT_BASE=origin/main
expect "explicit base not in the clone: exit 2, no outputs" ran 2
expect "explicit base not in the clone: says fetch it first" has "$out" "fetch it first"
git -C "$t/ws" fetch -q --depth=1 origin main
run_action INPUT_PATH=openapi.json INPUT_BASE=FETCH_HEAD
expect "explicit base (FETCH_HEAD, no GITHUB_BASE_REF): exit 1, compatibility=breaking" ran 1 breaking true
run_action INPUT_PATH=openapi.json INPUT_BASE=--output=x
expect "a base starting with '-': exit 2, no outputs" ran 2
run_action GITHUB_BASE_REF=main INPUT_PATH=openapi.json INPUT_KIND=nonsense
expect "an unknown kind: exit 2 from schemawatch, no outputs" ran 2

# 7. Script injection: every input, and the base branch name, carrying shell syntax stays data.
injections=('$(touch pwned)' '`touch pwned`' ';touch pwned' '"; touch pwned; "' $'x\ntouch pwned')
for value in "${injections[@]}"; do
  checkout pr-breaking
  for var in INPUT_BASE INPUT_PATH INPUT_KIND INPUT_FAIL_ON INPUT_ACCEPT_FILE INPUT_SARIF GITHUB_BASE_REF; do
    case $var in
      INPUT_PATH) run_action GITHUB_BASE_REF=main "$var=$value" ;;
      GITHUB_BASE_REF) run_action INPUT_PATH=openapi.json "$var=$value" ;;
      *) run_action GITHUB_BASE_REF=main INPUT_PATH=openapi.json "$var=$value" ;;
    esac
    # Data, not code: refused (2), a new path (0) or an accepted value in a file name (1).
    if [ "$rc" -gt 2 ]; then
      fail "injection $var=$(printf %q "$value"): exit $rc" "$out"
    fi
  done
  found=$(find "$t" -name pwned 2>/dev/null | head -n 5)
  expect "injection $(printf %q "$value") in every input: no file named pwned in the workspace, HOME or TMPDIR" [ -z "$found" ]
done
# And nowhere else on the machine since the test began (one scan: it walks the filesystem).
found=$(find / /tmp -xdev -name pwned -newer "$t/origin.git" 2>/dev/null | head -n 5)
expect "injections: no file named pwned anywhere on the filesystem" [ -z "$found" ]

finish
