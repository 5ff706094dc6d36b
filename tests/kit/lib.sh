# shellcheck shell=bash
# Shared by the tests/kit/*.sh scripts (sourced): counters, checks and the closing line.
# Each script prints `N passed, M failed` last and exits 1 when anything failed.

kit_passed=0
kit_failed=0
kit_skipped=0

pass() {
  kit_passed=$((kit_passed + 1))
  printf 'ok   %s\n' "$1"
}

fail() {
  kit_failed=$((kit_failed + 1))
  printf 'FAIL %s\n' "$1"
  if [ $# -gt 1 ] && [ -n "$2" ]; then
    printf '%s\n' "$2" | sed 's/^/     | /'
  fi
}

# check NAME COMMAND...: passes when COMMAND exits 0.
check() {
  local name=$1
  shift
  if "$@"; then pass "$name"; else fail "$name"; fi
}

# A missing peer (pre-commit, promtool, the binary): a skip, or a failure under
# SCHEMAWATCH_REQUIRE_PEERS=1 (CI).
missing_peer() {
  if [ "${SCHEMAWATCH_REQUIRE_PEERS:-}" = 1 ]; then
    fail "peer available: $1"
  else
    kit_skipped=$((kit_skipped + 1))
    printf 'skip %s (missing; SCHEMAWATCH_REQUIRE_PEERS=1 makes this a failure)\n' "$1"
  fi
}

# The closing line; call last (`finish` exits).
finish() {
  if [ "$kit_skipped" -gt 0 ]; then
    printf '%d passed, %d failed, %d skipped\n' "$kit_passed" "$kit_failed" "$kit_skipped"
  else
    printf '%d passed, %d failed\n' "$kit_passed" "$kit_failed"
  fi
  [ "$kit_failed" -eq 0 ]
  exit $?
}
