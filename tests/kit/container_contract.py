#!/usr/bin/env python3
"""The container image as shipped agrees with its Kubernetes manifest, the README and the binary.

    tests/peers/.venv/bin/python tests/kit/container_contract.py \\
        deploy/container/Dockerfile deploy/kubernetes/sidecar.yaml README.md [--bin target/debug/schemawatch]

Docker is not available on the build machines (and the distroless base cannot be pulled), so
the Dockerfile is read statically: the final stage's USER, VOLUME, HEALTHCHECK, EXPOSE,
ENTRYPOINT, CMD, ENV and STOPSIGNAL are compared with the sidecar (parsed with PyYAML: its
securityContext, the schemawatch container's args, ports, probes and volumeMounts, and the
schemawatch.toml of its ConfigMap, parsed with tomllib), with what the README promises, and,
with --bin, with the binary's own command line (`run --help`, `healthcheck --help`).
tests/daemon/container.rs runs the binary the way the image does (bubblewrap, PID 1, uid 65532).
Prints `N passed, M failed`; exit 1 on a failure, 2 on bad usage.
"""

import ipaddress
import json
import re
import shlex
import subprocess
import sys
import tomllib

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


def dockerfile_final_stage(text):
    """Instructions of the last stage, continuation lines joined: [(INSTRUCTION, args)]."""
    lines, current = [], ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        lines.append(current + stripped)
        current = ""
    stages, stage = [], []
    for line in lines:
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            stage = []
            stages.append(stage)
        stage.append((word, rest.strip()))
    return stages[-1] if stages else []


def exec_form(args):
    """A JSON exec form (["a", "b"]) or a shell form (split like a shell would)."""
    args = args.strip()
    if args.startswith("["):
        return json.loads(args)
    return shlex.split(args)


def duration_seconds(text):
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|h)?\s*", str(text))
    if not m:
        return None
    n, unit = int(m.group(1)), m.group(2) or "s"
    return n * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def main():
    args = sys.argv[1:]
    binary = None
    if "--bin" in args:
        i = args.index("--bin")
        if i + 1 >= len(args):
            print(__doc__)
            return 2
        binary = args[i + 1]
        del args[i : i + 2]
    if len(args) != 3:
        print(__doc__)
        return 2
    dockerfile_path, sidecar_path, readme_path = args
    try:
        import yaml
    except ImportError:
        print("PyYAML is missing: tests/peers/.venv/bin/pip install -r tests/peers/requirements.txt")
        return 2

    with open(dockerfile_path, encoding="utf-8") as f:
        stage = dockerfile_final_stage(f.read())
    with open(sidecar_path, encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read()

    def one(word):
        found = [a for w, a in stage if w == word]
        return found[-1] if found else None

    # --- The image.
    user = one("USER")
    check("Dockerfile: USER is set", user is not None)
    uid, _, gid = (user or "").partition(":")
    check("Dockerfile: USER is numeric uid:gid (runAsNonRoot can verify it)",
          uid.isdigit() and (gid == "" or gid.isdigit()), repr(user))
    volume = exec_form(one("VOLUME") or "[]")
    check("Dockerfile: one VOLUME", len(volume) == 1, repr(volume))
    volume = volume[0] if volume else None
    expose = (one("EXPOSE") or "").split()
    check("Dockerfile: one EXPOSE (tcp)", len(expose) == 1 and re.fullmatch(r"\d+(/tcp)?", expose[0] or ""), repr(expose))
    port = int(expose[0].split("/")[0]) if expose and expose[0].split("/")[0].isdigit() else None
    entrypoint = exec_form(one("ENTRYPOINT") or "[]")
    cmd = exec_form(one("CMD") or "[]")
    check("Dockerfile: ENTRYPOINT is the binary alone (exec form)",
          len(entrypoint) == 1 and entrypoint[0].endswith("/schemawatch"), repr(entrypoint))
    check("Dockerfile: CMD runs the daemon with JSON logs", cmd[:1] == ["run"] and "--log-format" in cmd
          and cmd[cmd.index("--log-format") + 1 : cmd.index("--log-format") + 2] == ["json"], repr(cmd))
    hc = one("HEALTHCHECK") or ""
    hc_opts = dict(re.findall(r"--([a-z-]+)=(\S+)", hc.partition(" CMD ")[0]))
    hc_cmd = exec_form(hc.partition("CMD ")[2]) if "CMD " in hc else []
    check("Dockerfile: HEALTHCHECK runs `<entrypoint> healthcheck` (no shell, no curl)",
          hc_cmd == entrypoint + ["healthcheck"], repr(hc_cmd))
    env = {}
    for e in [a for w, a in stage if w == "ENV"]:
        for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', e):
            env[k] = v.strip('"')
    config_path = env.get("SCHEMAWATCH_CONFIG")
    check("Dockerfile: ENV SCHEMAWATCH_CONFIG names the config (the healthcheck has no --config)",
          bool(config_path), repr(env))
    check("Dockerfile: STOPSIGNAL SIGTERM (the daemon drains on it)", one("STOPSIGNAL") == "SIGTERM", repr(one("STOPSIGNAL")))

    # --- The sidecar.
    deployment = next((d for d in docs if d.get("kind") == "Deployment"), {})
    configmap = next((d for d in docs if d.get("kind") == "ConfigMap"), {})
    pod = deployment.get("spec", {}).get("template", {}).get("spec", {})
    containers = (pod.get("initContainers") or []) + (pod.get("containers") or [])
    sw = next((c for c in containers if c.get("name") == "schemawatch"), None)
    check("sidecar: a schemawatch container", sw is not None)
    sw = sw or {}
    psc = pod.get("securityContext") or {}
    csc = sw.get("securityContext") or {}
    run_as_user = csc.get("runAsUser", psc.get("runAsUser"))
    run_as_group = csc.get("runAsGroup", psc.get("runAsGroup"))
    check("sidecar: runAsUser is the image's USER uid", str(run_as_user) == uid, f"{run_as_user} vs {uid}")
    check("sidecar: runAsGroup is the image's USER gid", not gid or str(run_as_group) == gid, f"{run_as_group} vs {gid}")
    check("sidecar: fsGroup lets that group write the volume", not gid or str(psc.get("fsGroup")) == gid, repr(psc.get("fsGroup")))
    check("sidecar: runAsNonRoot", psc.get("runAsNonRoot") is True or csc.get("runAsNonRoot") is True)
    check("sidecar: read-only root filesystem (the image writes only its volume)", csc.get("readOnlyRootFilesystem") is True)
    mounts = {m.get("mountPath"): m for m in sw.get("volumeMounts") or []}
    check("sidecar: the image's VOLUME is mounted writable", volume in mounts and not mounts[volume].get("readOnly"),
          f"{volume} in {sorted(mounts)}")
    check("sidecar: /tmp is mounted (read-only root)", "/tmp" in mounts, sorted(mounts))
    check("sidecar: no `command:` (the image's ENTRYPOINT runs)", "command" not in sw, repr(sw.get("command")))
    sw_args = sw.get("args") or []
    check("sidecar: args run the daemon like the image's CMD", sw_args[:1] == cmd[:1], f"{sw_args} vs {cmd}")
    check("sidecar: args keep the CMD's --log-format json",
          "--log-format" in sw_args and sw_args[sw_args.index("--log-format") + 1 : sw_args.index("--log-format") + 2] == ["json"],
          repr(sw_args))
    if "--config" in sw_args:
        given = sw_args[sw_args.index("--config") + 1 : sw_args.index("--config") + 2]
        check("sidecar: --config is the image's SCHEMAWATCH_CONFIG", given == [config_path], f"{given} vs {config_path}")
    config_dir, _, config_file = (config_path or "").rpartition("/")
    check("sidecar: the ConfigMap is mounted where SCHEMAWATCH_CONFIG points",
          config_dir in mounts and config_file in (configmap.get("data") or {}),
          f"{config_dir} in {sorted(mounts)}, {config_file} in {sorted(configmap.get('data') or {})}")
    ports = {p.get("name"): p.get("containerPort") for p in sw.get("ports") or []}
    check("sidecar: containerPort is the image's EXPOSE", port in ports.values(), f"{ports} vs {port}")
    probes = {}
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = (sw.get(kind) or {}).get("httpGet") or {}
        p = probe.get("port")
        probes[kind] = (probe.get("path"), ports.get(p, p))
    check("sidecar: readiness probe GET /readyz on the exposed port", probes["readinessProbe"] == ("/readyz", port), repr(probes))
    check("sidecar: startup probe GET /readyz on the exposed port", probes["startupProbe"] == ("/readyz", port), repr(probes))
    check("sidecar: liveness probe GET /healthz on the exposed port", probes["livenessProbe"] == ("/healthz", port), repr(probes))
    annotations = deployment.get("spec", {}).get("template", {}).get("metadata", {}).get("annotations") or {}
    check("sidecar: the Prometheus scrape annotation names the exposed port and /metrics",
          str(annotations.get("prometheus.io/port")) == str(port) and annotations.get("prometheus.io/path") == "/metrics",
          repr(annotations))

    # --- The config the sidecar gives the binary.
    try:
        config = tomllib.loads((configmap.get("data") or {}).get(config_file, ""))
    except tomllib.TOMLDecodeError as e:
        config = {}
        check("sidecar: the ConfigMap's schemawatch.toml is TOML", False, str(e))
    storage = (config.get("storage") or {}).get("path", "")
    check("config: storage.path is on the image's VOLUME", bool(volume) and storage.startswith(volume.rstrip("/") + "/"),
          f"{storage} vs {volume}")
    listen = (config.get("server") or {}).get("listen")
    default_listen = re.search(r"\| `\[server\] listen`, `admin_token_env` \| `([^`]+)`", readme)
    check("README: the binary's default listen address is documented", default_listen is not None)
    effective = listen or (default_listen.group(1) if default_listen else "")
    host, _, lport = effective.rpartition(":")
    check("config: the daemon listens on the exposed port", lport == str(port), f"{effective} vs EXPOSE {port}")
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = True
    check("config: the daemon listens beyond loopback (the kubelet's probes come over the pod IP)",
          not loopback, f"listen = {effective!r} (default {default_listen.group(1) if default_listen else '?'})")
    if host in ("0.0.0.0", "[::]", "::"):
        check("config: a wildcard listen address has an admin token (else the daemon refuses to start)",
              bool((config.get("server") or {}).get("admin_token_env")))
    drain = duration_seconds((config.get("daemon") or {}).get("drain_timeout", "20s"))
    grace = pod.get("terminationGracePeriodSeconds", 30)
    check("sidecar: terminationGracePeriodSeconds is above drain_timeout", drain is not None and grace > drain,
          f"{grace} vs {drain}")

    # --- What the README promises.
    check("README: uid", f"uid {uid}" in readme, f"'uid {uid}' not found")
    check("README: the volume", f"`{volume}` volume" in readme, f"'`{volume}` volume' not found")
    check("README: HEALTHCHECK through `schemawatch healthcheck`",
          "`HEALTHCHECK` through `schemawatch healthcheck`" in readme)
    check("README: the container listen address", f"`0.0.0.0:{port}`" in readme, f"'0.0.0.0:{port}' not found")
    check("README: /healthz and /readyz are documented", "`GET /healthz`" in readme and "`GET /readyz`" in readme)
    check("README: names the Dockerfile and the sidecar",
          "deploy/container/Dockerfile" in readme and "deploy/kubernetes/sidecar.yaml" in readme)

    # --- The binary itself.
    if binary:
        def help_of(*words):
            r = subprocess.run([binary, *words, "--help"], capture_output=True, text=True, timeout=60)
            return r.returncode, r.stdout + r.stderr
        code, text = help_of(*cmd[:1])
        check(f"binary: `{cmd[0]} --help` (the CMD's subcommand) exists", code == 0, text[:300])
        for flag in sorted({a for a in cmd[1:] + sw_args[1:] if a.startswith("--")}):
            check(f"binary: `{cmd[0]}` takes {flag}", flag in text, text[:300])
        code, text = help_of(*hc_cmd[1:])
        check("binary: `healthcheck --help` (the HEALTHCHECK) exists", code == 0, text[:300])
        check("binary: healthcheck reads SCHEMAWATCH_CONFIG (the image's ENV)",
              "SCHEMAWATCH_CONFIG" in text, text[:300])

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
