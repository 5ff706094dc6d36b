#!/usr/bin/env python3
"""action.yml declares exactly what scripts/github-action reads and writes.

    tests/peers/.venv/bin/python tests/kit/action_contract.py [ACTION_YML [SCRIPT]]

PyYAML (pinned in tests/peers/requirements.txt) parses action.yml. Checked: the inputs are the
INPUT_* variables the script reads, each passed through the gate step's `env:` under GitHub's
name (`fail-on` -> INPUT_FAIL_ON); the outputs are the ones the script writes to GITHUB_OUTPUT,
each wired to the gate step; no `run:` holds a `${{ }}` expression (script injection); the
script reads no environment variable outside its documented list; the defaults agree.
Prints `N passed, M failed`; exit 1 on a failure, 2 on bad usage or a missing PyYAML.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What the script may read from its environment (scripts/github-action's header).
ALLOWED_ENV = {
    "GITHUB_BASE_REF",
    "GITHUB_OUTPUT",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_ACTION_PATH",
    "SCHEMAWATCH_BIN",
    "TMPDIR",
}

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


def code_lines(text):
    """The script without comment lines (its header documents the variables too)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def env_name(input_name):
    return "INPUT_" + input_name.upper().replace("-", "_").replace(" ", "_")


def main():
    try:
        import yaml
    except ImportError:
        print("PyYAML is missing: tests/peers/.venv/bin/pip install -r tests/peers/requirements.txt")
        return 2
    args = sys.argv[1:]
    if len(args) > 2:
        print(__doc__)
        return 2
    action_path = args[0] if args else os.path.join(ROOT, "action.yml")
    script_path = args[1] if len(args) > 1 else os.path.join(ROOT, "scripts", "github-action")
    with open(action_path, encoding="utf-8") as f:
        try:
            action = yaml.safe_load(f)
        except yaml.YAMLError as e:
            check(f"{action_path} is YAML", False, str(e).replace("\n", " "))
            print(f"{passed} passed, {failed} failed")
            return 1
    with open(script_path, encoding="utf-8") as f:
        script = code_lines(f.read())

    inputs = action.get("inputs") or {}
    outputs = action.get("outputs") or {}
    runs = action.get("runs") or {}
    steps = runs.get("steps") or []
    check("runs.using is composite", runs.get("using") == "composite", repr(runs.get("using")))

    gate = [s for s in steps if s.get("id") == "gate"]
    check("one step with id gate", len(gate) == 1, f"{len(gate)} found")
    gate = gate[0] if gate else {}
    check(
        "the gate step runs scripts/github-action from the action's checkout",
        str(gate.get("run", "")).strip() == '"$GITHUB_ACTION_PATH/scripts/github-action"',
        repr(gate.get("run")),
    )

    # Inputs: declared == read by the script == passed through env.
    read = set(re.findall(r"\$\{?(INPUT_[A-Z0-9_]+)", script))
    declared = {env_name(name): name for name in inputs}
    check(
        "inputs declared are exactly the INPUT_* the script reads",
        set(declared) == read,
        f"declared only: {sorted(set(declared) - read)}; read only: {sorted(read - set(declared))}",
    )
    env = gate.get("env") or {}
    for var, name in sorted(declared.items()):
        want = "${{ inputs.%s }}" % name
        check(f"env {var} is {want}", env.get(var) == want, repr(env.get(var)))
    check(
        "the gate step's env holds only the inputs",
        set(env) == set(declared),
        f"extra: {sorted(set(env) - set(declared))}",
    )

    # Outputs: declared == written by the script, each from the gate step.
    written = set(re.findall(r"write_output\s+([a-z_]+)", script))
    check(
        "outputs declared are exactly the ones the script writes",
        set(outputs) == written,
        f"declared: {sorted(outputs)}; written: {sorted(written)}",
    )
    for name, spec in sorted(outputs.items()):
        value = (spec or {}).get("value")
        check(
            f"output {name} is the gate step's",
            value == "${{ steps.gate.outputs.%s }}" % name,
            repr(value),
        )
    check(
        "the script writes outputs only through write_output (GITHUB_OUTPUT appended once)",
        script.count("$GITHUB_OUTPUT") == 1 and script.count(">>\"$GITHUB_OUTPUT\"") == 1,
        "",
    )

    # Script injection: no expression is expanded inside a shell script.
    for i, step in enumerate(steps):
        if "run" in step:
            check(
                f"step {step.get('id', i)}: no ${{{{ }}}} inside run:",
                "${{" not in str(step["run"]),
                str(step["run"])[:200],
            )

    # The environment the script reads.
    upper = set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", script))
    stray = sorted(v for v in upper - ALLOWED_ENV if not v.startswith("INPUT_"))
    check("the script reads no other environment variable", not stray, f"{stray}")

    # Defaults and requiredness agree with the script's.
    script_defaults = dict(re.findall(r"^\s*([a-z_]+)=\$\{INPUT_[A-Z_]+:-([^}]*)\}", script, re.M))
    for name, spec in sorted(inputs.items()):
        spec = spec or {}
        var = name.replace("-", "_")
        check(f"input {name} has a description", bool(spec.get("description")))
        if name == "path":
            check("input path is required", spec.get("required") is True, repr(spec.get("required")))
            continue
        check(f"input {name} is optional", spec.get("required") is False, repr(spec.get("required")))
        check(
            f"input {name}: default {spec.get('default')!r} is the script's",
            str(spec.get("default", "")) == script_defaults.get(var, ""),
            f"script: {script_defaults.get(var, '')!r}",
        )

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
