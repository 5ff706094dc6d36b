"""Loopback webhook receiver for this project's notification tests (PyPI `standardwebhooks`).

  python tests/peers/webhook_receiver.py --port-file PATH --log PATH [--port N]
      [--secret whsec_...]... [--control PATH]

Run it with tests/peers/.venv/bin/python (where requirements.txt is installed).

  POST /webhook        Standard Webhooks delivery: verified against each --secret (any one suffices,
                       as a receiver does while rotating); 401 when none verifies. Deduplicated by
                       `webhook-id`: first verified delivery "applied", later ones "duplicate".
  POST /slack, /teams  unsigned; the JSON body is recorded.
  GET  /health         200 "ok" (never affected by, and never consumes, the control file).

--control PATH, read on every delivery (the three POST paths), JSON written atomically by the test:
  {"status": 429, "retry_after": "2", "location": "http://...", "times": N}
answers `status` (with Retry-After / Location when given) for the next N deliveries, then the file
is removed; without "times", forever. A delivery answered with a non-2xx status is "rejected" and
not marked seen, so the sender's retry of the same id is "applied".

--log PATH gets one JSON line per request (flushed at once); every id logged "applied" there counts
as seen on start, so dedup survives a restart. The bound port goes to --port-file (tmp + rename).
Exit codes: 0 on SIGTERM/SIGINT, 2 on bad arguments or a missing library. Nothing on stdout.
"""
import argparse
import base64
import binascii
import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

try:
    from standardwebhooks.webhooks import Webhook, WebhookVerificationError
except ImportError as err:  # tests detect a missing peer by exit code 2 and this message
    sys.stderr.write(f"webhook_receiver: standardwebhooks is not installed ({err}); "
                     "tests/peers/.venv/bin/pip install -r tests/peers/requirements.txt\n")
    sys.exit(2)

DELIVERY_PATHS = ("/webhook", "/slack", "/teams")


def fail(message):
    sys.stderr.write(f"webhook_receiver: {message}\n")
    sys.exit(2)


def atomic_write(path, text):
    tmp = f"{path}.tmp.{os.getpid()}.{threading.get_ident()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def make_webhook(secret):
    # The library base64-decodes leniently (it drops characters outside the alphabet), so a
    # mistyped secret would only show up as 401s: check it strictly here. Never echo the secret.
    if not secret.startswith("whsec_"):
        fail("--secret must start with whsec_")
    raw = secret[len("whsec_"):]
    try:
        if not base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True):
            fail("--secret decodes to an empty key")
    except binascii.Error:
        fail("--secret is not whsec_ followed by base64")
    return Webhook(secret)


def load_seen(log_path):
    """Ids logged as applied by earlier runs; ends a torn last line so new lines stay whole."""
    seen = set()
    try:
        with open(log_path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return seen
    for line in data.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a line torn by a kill mid-write
        if isinstance(entry, dict) and entry.get("outcome") == "applied" and entry.get("webhook_id"):
            seen.add(entry["webhook_id"])
    if data and not data.endswith(b"\n"):
        with open(log_path, "ab") as f:
            f.write(b"\n")
    return seen


class Control:
    """The --control file: None when absent, else (status, headers) for this delivery."""

    def __init__(self, path):
        self.path = path

    def take(self):
        if not self.path:
            return None
        try:
            with open(self.path, encoding="utf-8") as f:
                spec = json.load(f)
        except FileNotFoundError:
            return None
        if not isinstance(spec, dict):
            raise ValueError("expected a JSON object")
        status, times = spec.get("status"), spec.get("times")
        if not isinstance(status, int) or not 100 <= status <= 599:
            raise ValueError(f"status must be an integer 100-599, got {status!r}")
        if times is not None and (not isinstance(times, int) or isinstance(times, bool)):
            raise ValueError(f"times must be an integer, got {times!r}")
        if times is not None and times <= 0:
            os.remove(self.path)
            return None
        headers = {}
        if spec.get("retry_after") is not None:
            headers["Retry-After"] = str(spec["retry_after"])
        if spec.get("location") is not None:
            headers["Location"] = str(spec["location"])
        if times == 1:
            os.remove(self.path)
        elif times is not None:
            spec["times"] = times - 1
            atomic_write(self.path, json.dumps(spec))
        return status, headers


class Receiver:
    def __init__(self, args):
        self.webhooks = [make_webhook(s) for s in args.secret]
        self.control = Control(args.control)
        self.seen = load_seen(args.log)
        self.log = open(args.log, "a", encoding="utf-8")
        # One lock for control, dedup and log: each request's decision and its line are atomic.
        self.lock = threading.Lock()

    def verify(self, body, headers):
        # json_parse=False: with the default, a correctly signed non-JSON body raises
        # JSONDecodeError instead of verifying.
        for wh in self.webhooks:
            try:
                wh.verify(body, headers, json_parse=False)
                return True
            except WebhookVerificationError:
                continue
        return False

    def handle(self, method, path, headers, body):
        """Returns (status, extra response headers, response body) and logs the request."""
        verified = outcome = None
        extra = {}
        with self.lock:
            if path == "/health" and method == "GET":
                status, text = 200, "ok"
            elif path not in DELIVERY_PATHS and path != "/health":
                status, text, outcome = 404, "not found", "rejected"
            elif method != "POST":
                status, text, outcome = 405, "method not allowed", "rejected"
            else:
                if path == "/webhook":
                    verified = self.verify(body, headers)
                try:
                    forced = self.control.take()
                except (ValueError, OSError) as err:
                    sys.stderr.write(f"webhook_receiver: control file {self.control.path}: {err}\n")
                    forced = (500, {})
                wid = headers.get("webhook-id")
                if forced is not None and not 200 <= forced[0] < 300:
                    (status, extra), text, outcome = forced, "controlled", "rejected"
                else:
                    status, text = (forced[0], "ok") if forced else (200, "ok")
                    if path != "/webhook":
                        outcome = "recorded"
                    elif not verified:
                        status, text, outcome = 401, "signature not verified", "rejected"
                    elif wid in self.seen:
                        outcome = "duplicate"
                    else:
                        self.seen.add(wid)
                        outcome = "applied"
                    if forced:
                        extra = forced[1]
            self.write_log(path, status, verified, outcome, headers, body)
        return status, extra, text

    def write_log(self, path, status, verified, outcome, headers, body):
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        sig = headers.get("webhook-signature") or ""
        entry = {
            "path": path,
            "status": status,
            "verified": verified,
            "outcome": outcome,
            "webhook_id": headers.get("webhook-id"),
            "webhook_timestamp": headers.get("webhook-timestamp"),
            "signature_count": sum(1 for s in sig.split(" ") if s.startswith("v1,")),
            "body": parsed,
            "headers": headers,
        }
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()


class Server(ThreadingHTTPServer):
    # socketserver's default listen backlog of 5 resets concurrent connections (seen with 20).
    request_queue_size = 128


class Handler(BaseHTTPRequestHandler):
    receiver = None  # set in main

    def log_message(self, *args):  # no per-request chatter; errors go through log_error
        pass

    def log_error(self, fmt, *args):
        sys.stderr.write("webhook_receiver: " + (fmt % args) + "\n")

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def serve(self, method):
        try:
            body = self.read_body() if method == "POST" else b""
            headers = {}
            for name, value in self.headers.items():
                name = name.lower()
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
            path = self.path.split("?", 1)[0]
            status, extra, text = self.receiver.handle(method, path, headers, body)
        except Exception as err:  # a peer bug must show, not hang the test
            self.log_error("internal error: %r", err)
            status, extra, text = 500, {}, "internal error"
        data = b"" if status in (204, 304) else text.encode()  # these carry no body
        self.send_response(status)
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.serve("GET")

    def do_POST(self):
        self.serve("POST")


def main():
    p = argparse.ArgumentParser(description="Loopback Standard Webhooks receiver for tests.")
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--secret", action="append", default=[])
    p.add_argument("--control")
    args = p.parse_args()

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    Handler.receiver = Receiver(args)
    try:
        server = Server(("127.0.0.1", args.port), Handler)
    except (OSError, OverflowError) as err:
        fail(f"cannot listen on 127.0.0.1:{args.port}: {err}")
    try:
        atomic_write(args.port_file, f"{server.server_address[1]}\n")
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
