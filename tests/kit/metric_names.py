#!/usr/bin/env python3
"""Every metric a dashboard or alert rule queries is one the daemon exports.

    tests/peers/.venv/bin/python tests/kit/metric_names.py DASHBOARD ALERTS SCRAPE_FILE
    # e.g. deploy/grafana/dashboard.json deploy/prometheus/alerts.yml metrics.txt

SCRAPE_FILE is the text of `GET /metrics` from a running daemon with per-watch metrics on
(`[server] per_watch_metrics = true`), a failing watch (so `refresh_errors_total` has a series)
and a notification sink (so the `notifications_*` families have one). Metric names are taken
from every PromQL expression (dashboard panel targets and template queries, alert `expr`s) and
compared with the scrape's sample and family names modulo the suffixes Prometheus adds
(`_total`, `_bucket`, `_sum`, `_count`, `_created`). Series Prometheus makes itself (`up`)
are not in a scrape and are accepted by name. PyYAML (tests/peers/requirements.txt) reads the
rules. Prints `N passed, M failed`; exit 1 on a failure, 2 on bad usage.
"""

import json
import re
import sys

SUFFIXES = ("_total", "_bucket", "_sum", "_count", "_created")
# Synthesized by Prometheus for every target, never exposed by one.
SYNTHETIC = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "atan2", "inf", "nan", "start", "end",
}
IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}")
        if detail:
            print(f"     | {detail}")


def metric_names(expr):
    """The metric names in one PromQL expression (or a Grafana label_values() query)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)  # strings
    text = re.sub(r"\$\{?\w+\}?", "1", text)  # Grafana variables ($__rate_interval, $job)
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges and subqueries
    # Label lists of grouping and matching clauses.
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    # label_values(metric, label): the second argument is a label.
    text = re.sub(r"\blabel_values\s*\(([^,()]*),[^)]*\)", r"(\1)", text)
    names = set()
    for m in IDENT.finditer(text):
        word = m.group(0)
        rest = text[m.end():].lstrip()
        if rest.startswith("("):  # a function call
            continue
        if word.lower() in KEYWORDS or re.fullmatch(r"\d+[smhdwy]", word):
            continue
        names.add(word)
    return names


def base(name):
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def dashboard_exprs(path):
    with open(path, encoding="utf-8") as f:
        dashboard = json.load(f)
    exprs = []

    def panels(items):
        for p in items or []:
            yield p
            yield from panels(p.get("panels"))

    for p in panels(dashboard.get("panels")):
        for t in p.get("targets") or []:
            if t.get("expr"):
                exprs.append((f"panel {p.get('title')!r} {t.get('refId')}", t["expr"]))
    for v in (dashboard.get("templating") or {}).get("list") or []:
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query") if isinstance(q, dict) else q
            if q:
                exprs.append((f"variable ${v.get('name')}", q))
    return exprs


def alert_exprs(path):
    import yaml

    with open(path, encoding="utf-8") as f:
        rules = yaml.safe_load(f)
    exprs = []
    for g in rules.get("groups") or []:
        for r in g.get("rules") or []:
            exprs.append((f"rule {r.get('alert') or r.get('record')}", str(r.get("expr", ""))))
    return exprs


def scrape_names(path):
    names = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            if line.startswith("#"):
                parts = line.split()
                if len(parts) >= 3 and parts[1] in ("TYPE", "HELP"):
                    names.add(parts[2])
                continue
            m = IDENT.match(line)
            if m:
                names.add(m.group(0))
    return names


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    dashboard, alerts, scrape = sys.argv[1:]
    try:
        import yaml  # noqa: F401
    except ImportError:
        print("PyYAML is missing: tests/peers/.venv/bin/pip install -r tests/peers/requirements.txt")
        return 2
    exported = scrape_names(scrape)
    exported_bases = {base(n) for n in exported}
    check(f"{scrape} holds schemawatch_ metrics", any(n.startswith("schemawatch_") for n in exported),
          f"{len(exported)} names")
    for label, path, exprs in (
        ("dashboard", dashboard, dashboard_exprs(dashboard)),
        ("alerts", alerts, alert_exprs(alerts)),
    ):
        check(f"{path}: has PromQL expressions", bool(exprs), "none found")
        used = {}
        for where, expr in exprs:
            names = metric_names(expr)
            if not names:
                check(f"{path}: {where} queries a metric", False, expr)
            for n in names:
                used.setdefault(n, where)
        for name in sorted(used):
            if name in SYNTHETIC:
                check(f"{label}: {name} (made by Prometheus)", True)
                continue
            check(
                f"{label}: {name} is exported",
                name in exported or base(name) in exported_bases,
                f"first used in {used[name]}; not in {scrape}",
            )
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
