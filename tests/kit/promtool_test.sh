#!/usr/bin/env bash
# deploy/prometheus/alerts.yml: `promtool check rules` and the unit tests of
# deploy/prometheus/alerts_test.yml (`promtool test rules`), promtool from scripts/promtool
# (PATH, else Debian's prometheus package unpacked with dpkg -x; no server).
#
#   tests/kit/promtool_test.sh
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/kit/lib.sh
. "$here/lib.sh"

if ! promtool=$("$root/scripts/promtool"); then
  missing_peer "promtool (scripts/promtool)"
  finish
fi
echo "promtool: $promtool ($("$promtool" --version 2>&1 | head -n 1))"

if out=$("$promtool" check rules "$root/deploy/prometheus/alerts.yml" 2>&1); then
  pass "promtool check rules deploy/prometheus/alerts.yml"
else
  fail "promtool check rules deploy/prometheus/alerts.yml" "$out"
fi
# Every alert of alerts.yml has a test in alerts_test.yml, both firing and not firing.
while read -r alert; do
  tests=$(grep -c "alertname: $alert\$" "$root/deploy/prometheus/alerts_test.yml")
  silent=$(grep -A1 "alertname: $alert\$" "$root/deploy/prometheus/alerts_test.yml" | grep -c 'exp_alerts: \[\]')
  if [ "$tests" -gt "$silent" ] && [ "$silent" -gt 0 ]; then
    pass "alerts_test.yml covers $alert firing and not firing"
  else
    fail "alerts_test.yml covers $alert firing and not firing" "$tests evaluations, $silent expecting no alert"
  fi
done < <(sed -n 's/^ *- alert: *\([A-Za-z0-9_]*\).*/\1/p' "$root/deploy/prometheus/alerts.yml")
# promtool resolves rule_files relative to the test file.
if out=$("$promtool" test rules "$root/deploy/prometheus/alerts_test.yml" 2>&1); then
  pass "promtool test rules deploy/prometheus/alerts_test.yml"
else
  fail "promtool test rules deploy/prometheus/alerts_test.yml" "$out"
fi
finish
