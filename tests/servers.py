"""Real HTTP servers on loopback that play scrape targets: captured /metrics in sequence, and faults.

They stand in for a GPU vLLM, which cannot run here, by serving its captured payloads byte for
byte (gzipped when the client asks, as prometheus_client does).
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Responder = Callable[[BaseHTTPRequestHandler], None]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    responder: Responder


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self.server.responder(self)

    def do_POST(self) -> None:
        self.server.responder(self)

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def http_server(responder: Responder) -> Iterator[str]:
    """Serve `responder` on a free loopback port; yield the base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.responder = responder
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str) -> None:
    if "gzip" in handler.headers.get("Accept-Encoding", "") and status == 200:
        body = gzip.compress(body)
        encoding = "gzip"
    else:
        encoding = ""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    if encoding:
        handler.send_header("Content-Encoding", encoding)
    handler.end_headers()
    handler.wfile.write(body)


class MetricsSequence:
    """GET /metrics answers the next payload each time (the last one repeats); /version like vLLM."""

    def __init__(self, payloads: list[str], version: str = "0.24.0") -> None:
        self.payloads = payloads
        self.version = version
        self.served = 0
        self.lock = threading.Lock()

    @property
    def exhausted(self) -> bool:
        return self.served >= len(self.payloads)

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        if handler.path == "/version":
            send(handler, 200, json.dumps({"version": self.version}).encode(), "application/json")
            return
        with self.lock:
            payload = self.payloads[min(self.served, len(self.payloads) - 1)]
            self.served += 1
        send(handler, 200, payload.encode(), "text/plain; version=0.0.4; charset=utf-8")


def status(code: int) -> Responder:
    return lambda handler: send(handler, code, b"internal error\n", "text/plain")


def html_page(handler: BaseHTTPRequestHandler) -> None:
    send(handler, 200, b"<!DOCTYPE html><html><body>Sign in</body></html>", "text/html; charset=utf-8")


def huge(size: int) -> Responder:
    """A body over the size cap, compressed once here: gzipping 50 MB per request took longer than
    the scrape timeout on a loaded machine, and the target showed as a timeout, not as too large."""
    body = (b"# filler comment line to make the payload large\n" * (size // 48 + 1))[:size]
    compressed = gzip.compress(body, compresslevel=1)

    def answer(handler: BaseHTTPRequestHandler) -> None:
        gzipped = "gzip" in handler.headers.get("Accept-Encoding", "")
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain; version=0.0.4")
        handler.send_header("Content-Length", str(len(compressed if gzipped else body)))
        if gzipped:
            handler.send_header("Content-Encoding", "gzip")
        handler.end_headers()
        handler.wfile.write(compressed if gzipped else body)

    return answer


def hanging(release: threading.Event) -> Responder:
    """Accept the request and answer nothing until the test ends."""
    return lambda handler: release.wait(timeout=60)


class Webhook:
    """Alertmanager's webhook receiver: keeps every posted notification."""

    def __init__(self) -> None:
        self.notifications: list[dict] = []  # type: ignore[type-arg]
        self.lock = threading.Lock()

    def __call__(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length", "0"))
        body = handler.rfile.read(length)
        with self.lock:
            self.notifications.append(json.loads(body))
        send(handler, 200, b"ok\n", "text/plain")

    def alerts(self) -> list[dict]:  # type: ignore[type-arg]
        with self.lock:
            return [alert for n in self.notifications for alert in n.get("alerts", [])]


def truncated(handler: BaseHTTPRequestHandler) -> None:
    """Promise 100 KB, send 20 bytes, hang up."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain; version=0.0.4")
    handler.send_header("Content-Length", "100000")
    handler.end_headers()
    handler.wfile.write(b"# HELP vllm:spec_dec")
    handler.close_connection = True


def trickling(release: threading.Event) -> Responder:
    """Slow-loris: a valid start, then one byte every half second, forever."""

    def respond(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain; version=0.0.4")
        handler.end_headers()
        while not release.wait(0.5):
            try:
                handler.wfile.write(b"#")
                handler.wfile.flush()
            except OSError:
                return

    return respond
