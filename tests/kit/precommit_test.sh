#!/usr/bin/env bash
# The pre-commit hook (.pre-commit-hooks.yaml, `schemawatch diff --against HEAD FILE...`) with
# the real PyPI pre-commit (pinned in tests/peers/requirements.txt) on a real git repository:
# `pre-commit install`, then `git commit`s. The hook is the shipped one, run as a `repo: local`
# hook whose entry's `schemawatch` is the binary under test (language: system; pre-commit
# builds nothing). Checked: the manifest's entry, args and files; a breaking staged change is
# refused, a compatible one and a new file pass, an unstaged breaking edit does not count, a
# file outside `files:` is not passed, the first commit of a repository passes.
#
#   tests/kit/precommit_test.sh target/debug/schemawatch
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
venv="$root/tests/peers/.venv/bin"
if [ ! -x "$bin" ]; then
  missing_peer "schemawatch binary $1"
  finish
fi
if [ ! -x "$venv/pre-commit" ] || ! "$venv/python" -c 'import yaml' 2>/dev/null; then
  missing_peer "pre-commit and PyYAML in tests/peers/.venv (pip install -r tests/peers/requirements.txt)"
  finish
fi
echo "pre-commit: $("$venv/pre-commit" --version)"

t=$(mktemp -d "${TMPDIR:-/tmp}/schemawatch-precommit-test.XXXXXX")
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/home"
export HOME="$t/home" GIT_CONFIG_NOSYSTEM=1 PRE_COMMIT_HOME="$t/pre-commit-cache"
export PATH="$venv:$PATH"
git config --global user.name test
git config --global user.email test@example.invalid
git config --global init.defaultBranch main

# 1. The manifest: what users get with `id: schemawatch-diff`.
if out=$(pre-commit validate-manifest "$root/.pre-commit-hooks.yaml" 2>&1); then
  pass "pre-commit validate-manifest .pre-commit-hooks.yaml"
else
  fail "pre-commit validate-manifest .pre-commit-hooks.yaml" "$out"
fi
if out=$("$venv/python" - "$root/.pre-commit-hooks.yaml" "$root/docs/design.md" <<'PY' 2>&1
import re, sys, yaml
hooks = yaml.safe_load(open(sys.argv[1]))
design = open(sys.argv[2]).read()
ids = [h["id"] for h in hooks]
assert ids == ["schemawatch-diff"], ids
h = hooks[0]
assert h["entry"] == "schemawatch diff --against HEAD", h["entry"]
assert h["language"] == "system", h["language"]
assert h.get("pass_filenames", True) is True, "the hook needs the staged file names"
kinds = [a for a in h["args"] if a.startswith("--kind=")]
assert kinds == ["--kind=openapi"], h["args"]
for path in ["openapi.json", "api/openapi.yaml", "svc/swagger.yml"]:
    assert re.search(h["files"], path), f"files: does not match {path}"
for path in ["notes.json", "openapi.md", "src/main.rs"]:
    assert not re.search(h["files"], path), f"files: matches {path}"
# The form the entry uses is the one docs/design.md specifies.
assert "schemawatch diff --against REV" in design, "docs/design.md does not document diff --against REV"
PY
); then
  pass "the hook's id, entry (diff --against HEAD), language, args (--kind=openapi) and files"
else
  fail "the hook's id, entry (diff --against HEAD), language, args (--kind=openapi) and files" "$out"
fi

# 2. A repository using the shipped hook, with the binary under test as its command.
repo="$t/repo"
git init -q "$repo"
if ! "$venv/python" - "$root/.pre-commit-hooks.yaml" "$bin" "$repo/.pre-commit-config.yaml" <<'PY'
import shlex, sys, yaml
hook = dict(yaml.safe_load(open(sys.argv[1]))[0])
command, rest = hook["entry"].split(" ", 1)
assert command == "schemawatch"
hook["entry"] = shlex.quote(sys.argv[2]) + " " + rest
hook.pop("minimum_pre_commit_version", None)
yaml.safe_dump({"repos": [{"repo": "local", "hooks": [hook]}]}, open(sys.argv[3], "w"), sort_keys=False)
PY
then
  fail "write .pre-commit-config.yaml from the manifest"
  finish
fi
cd "$repo" || exit 2
if out=$(pre-commit install 2>&1); then pass "pre-commit install"; else fail "pre-commit install" "$out"; fi

base_doc='{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1.4.0"}, "paths": {
  "/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}},
  "/owners": {"get": {"operationId": "listOwners", "responses": {"200": {"description": "ok"}}}}}}'
breaking_doc='{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1.4.0"}, "paths": {
  "/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}}}}'
compatible_doc='{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1.5.0"}, "paths": {
  "/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}},
  "/owners": {"get": {"operationId": "listOwners", "responses": {"200": {"description": "ok"}}}},
  "/toys": {"get": {"operationId": "listToys", "responses": {"200": {"description": "ok"}}}}}}'

# commit MESSAGE: `git commit` through the installed hook; sets $rc and $out.
commit() {
  out=$(git commit -qm "$1" 2>&1)
  rc=$?
}
head_is() { [ "$(git log -1 --format=%s)" = "$1" ]; }

# The first commit: HEAD is unborn, every file is new.
printf '%s\n' "$base_doc" >openapi.json
git add openapi.json .pre-commit-config.yaml
commit "base"
if [ "$rc" = 0 ] && head_is base; then
  pass "first commit (unborn HEAD, a new contract file) passes"
else
  fail "first commit (unborn HEAD, a new contract file) passes" "exit $rc: $out"
  # The rest needs a base commit.
  git -c core.hooksPath=/dev/null commit -qm base
fi

# A breaking staged change is refused, naming the rule; nothing is committed.
printf '%s\n' "$breaking_doc" >openapi.json
git add openapi.json
commit "remove /owners"
if [ "$rc" != 0 ] && head_is base && grep -q 'endpoint-removed' <<<"$out" && grep -q 'schemawatch contract gate' <<<"$out"; then
  pass "breaking staged change: commit refused, the hook names endpoint-removed"
else
  fail "breaking staged change: commit refused, the hook names endpoint-removed" "exit $rc: $out"
fi

# A compatible change passes.
printf '%s\n' "$compatible_doc" >openapi.json
git add openapi.json
commit "add /toys"
if [ "$rc" = 0 ] && head_is "add /toys"; then
  pass "compatible staged change: committed"
else
  fail "compatible staged change: committed" "exit $rc: $out"
fi

# A contract file new in the commit passes (in a folder: the path is relative to the root).
mkdir -p api
printf '%s\n' "$breaking_doc" >api/openapi.json
git add api/openapi.json
commit "a second contract"
if [ "$rc" = 0 ] && head_is "a second contract"; then
  pass "new contract file: committed"
else
  fail "new contract file: committed" "exit $rc: $out"
fi

# What is checked is the staged version: an unstaged breaking edit on top of a staged
# compatible one does not count (pre-commit stashes it), and it is still there afterwards.
printf '%s\n' "$compatible_doc" | sed 's/1.5.0/1.6.0/' >openapi.json
git add openapi.json
printf '%s\n' "$breaking_doc" >openapi.json
commit "bump version"
if [ "$rc" = 0 ] && head_is "bump version" && grep -q 'listToys' <<<"$(git show HEAD:openapi.json)" \
  && ! grep -q 'listOwners' openapi.json; then
  pass "staged compatible, unstaged breaking: committed, the unstaged edit kept"
else
  fail "staged compatible, unstaged breaking: committed, the unstaged edit kept" "exit $rc: $out"
fi
git checkout -q -- openapi.json

# A breaking change in the file of a subfolder is refused too.
printf '%s\n' "$base_doc" >api/openapi.json
git add api/openapi.json
commit "api: back to base"
if [ "$rc" = 0 ]; then
  printf '%s\n' "$breaking_doc" >api/openapi.json
  git add api/openapi.json
  commit "api: remove /owners"
  if [ "$rc" != 0 ] && head_is "api: back to base" && grep -q 'endpoint-removed' <<<"$out"; then
    pass "breaking change in api/openapi.json: refused"
  else
    fail "breaking change in api/openapi.json: refused" "exit $rc: $out"
  fi
  git reset -q --hard
else
  fail "api: back to base (compatible) committed" "exit $rc: $out"
fi

# Files outside `files:` are not passed to the hook (this one is not even a contract).
printf 'not a contract\n' >notes.json
git add notes.json
commit "notes"
if [ "$rc" = 0 ] && head_is notes; then
  pass "a file outside files: is not checked"
else
  fail "a file outside files: is not checked" "exit $rc: $out"
fi

finish
