"""The HTTP side of `serve`: /metrics, /api/v1/status, / and /-/healthy, over FastAPI.

The app keeps its own /metrics body (expose/metrics.py; no prometheus_client registry) and starts
and stops its services (the sources, the state keeper, the refresher) in its lifespan, so a test
can run the whole sidecar in-process or as a subprocess alike. Services start and stop in the
order given (serve gives the state keeper last: it saves after every source has stopped). Request bodies are bounded: at most MAX_BODY_BYTES (413 beyond,
read no further) and JSON at most MAX_JSON_DEPTH deep (400).
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from exporter import __version__
from exporter.config import DeriveSettings, ExpositionSettings
from exporter.expose.acknowledge import acknowledge
from exporter.expose.lines import CONTENT_TYPE
from exporter.expose.metrics import MetricsRenderer
from exporter.expose.refresh import Refresher
from exporter.expose.websecurity import OPEN_PATHS, WebSecurity
from exporter.judge.assess import judged_window
from exporter.judge.status import snapshot_report
from exporter.state.store import Store

TIMELINE_POINTS = 180
MAX_BODY_BYTES = 64 << 10  # an acknowledgement is a few labels: far more is a mistake or an attack
MAX_JSON_DEPTH = 32
STATIC_FILES = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}


def _asset(name: str) -> str:
    """A file of the status page, shipped inside the package (no CDN: the page works offline)."""
    return (resources.files("exporter.expose") / "web" / name).read_text(encoding="utf-8")


class Service(Protocol):
    """What runs for the app's lifetime: a source, the state keeper, the refresher."""

    def start(self) -> None: ...
    def stop(self) -> None: ...


def create_app(
    store: Store,
    settings: DeriveSettings,
    services: Sequence[Service] = (),
    security: WebSecurity | None = None,
    exposition: ExpositionSettings | None = None,
) -> FastAPI:
    """Build the sidecar's ASGI app over `store`; `services` run for the app's lifetime.

    With the exposition's `max_age`, /metrics answers with a body at most that many seconds old,
    kept young by a refresher (expose/refresh.py) so that a scrape does not wait for a render; 0:
    built per request.
    """
    max_age = exposition.max_age if exposition is not None else 0.0
    renderer = MetricsRenderer(store, settings, exposition)
    if max_age > 0:
        # every max_age, not more often: each rebuild of a busy store pays a snapshot of every series
        services = [*services, Refresher(renderer, period=max_age)]

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        for service in services:
            service.start()
        try:
            yield
        finally:
            for service in services:  # in order: serve puts the state keeper last, so it saves last
                service.stop()

    app = FastAPI(title="specdecode-exporter", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store = store
    app.state.renderer = renderer

    if security is not None:

        @app.middleware("http")
        async def basic_auth(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
            security.refresh()
            header = request.headers.get("authorization")
            allowed = request.url.path in OPEN_PATHS or security.quick(header)
            if allowed is None:  # bcrypt in a worker thread: a check never stalls the loop, other requests or /-/healthy
                client = request.client.host if request.client else "?"
                refused = security.logins.admit(client)  # one check at a time per client, wrong ones rationed (expose/logins.py)
                if refused is not None:
                    return PlainTextResponse(f"{refused[1]}\n", status_code=refused[0], headers={"Retry-After": "1"})
                try:
                    allowed = await asyncio.get_running_loop().run_in_executor(security.checks, security.authorized, header)
                finally:
                    security.logins.done(client, allowed is True)
            if not allowed:
                return PlainTextResponse(
                    "Unauthorized\n", status_code=401, headers={"WWW-Authenticate": 'Basic realm="specdecode-exporter"'}
                )
            return await call_next(request)

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        # text format 0.0.4 for every client: Prometheus accepts it whatever it asks for first
        gzip = accepts_gzip(request.headers.get("accept-encoding", ""))
        # a young body is sent from the event loop; building one goes to a worker thread
        body = renderer.cached(gzip, max_age) or await run_in_threadpool(renderer.latest, gzip, max_age)
        headers = {"Content-Encoding": "gzip", "Vary": "Accept-Encoding"} if gzip else {"Vary": "Accept-Encoding"}
        return Response(body, media_type=CONTENT_TYPE, headers=headers)

    status_body = StatusBody(store, lambda: bytes(JSONResponse(_status(store, settings)).body))

    @app.get("/api/v1/status")
    def status() -> Response:
        return Response(status_body.latest(), media_type="application/json")

    @app.post("/api/v1/acknowledge")
    async def acknowledge_route(request: Request) -> JSONResponse:
        raw = await bounded_body(request, MAX_BODY_BYTES)
        if raw is None:
            return JSONResponse({"error": f"request body over {MAX_BODY_BYTES} bytes"}, status_code=413)
        body = parse_json(raw, MAX_JSON_DEPTH)
        status_code, answer = acknowledge(store, settings, body, _who(request))
        return JSONResponse(answer, status_code=status_code)

    @app.get("/-/healthy")
    async def healthy() -> PlainTextResponse:  # on the loop: no thread pool, however busy, delays a liveness probe
        return PlainTextResponse("OK\n")

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return HTMLResponse(_asset("index.html"))

    @app.get("/static/{name}")
    def static(name: str) -> Response:
        media_type = STATIC_FILES.get(name)
        if media_type is None:
            return PlainTextResponse("not found\n", status_code=404)
        return Response(_asset(name), media_type=media_type, headers={"Cache-Control": "no-cache"})

    return app


async def bounded_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None as soon as it is longer than `limit` (declared or sent): never buffered whole."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(raw: bytes, max_depth: int) -> Any:
    """JSON no deeper than `max_depth` (None if not JSON, or deeper: the parser recurses per level)."""
    depth = deepest = 0
    quoted = escaped = False
    for byte in raw:  # brackets outside strings: a bounded, linear pre-check
        if quoted:
            escaped, quoted = (False, True) if escaped else (byte == 0x5C, byte != 0x22)
        elif byte == 0x22:
            quoted = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > max_depth:
                return None
        elif byte in (0x5D, 0x7D):
            depth -= 1
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _who(request: Request) -> str:
    """Who asked, for the log: the client's address and the basic-auth user when there is one."""
    client = request.client.host if request.client else "?"
    header = request.headers.get("authorization", "")
    if header.lower().startswith("basic "):
        try:
            user = base64.b64decode(header[6:]).decode("utf-8", "replace").partition(":")[0]
        except ValueError:
            user = "?"
        return f"{user}@{client}"
    return client


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header allows gzip (RFC 9110 §12.5.3: `gzip;q=0` refuses it)."""
    for item in accept_encoding.lower().split(","):
        coding, _, params = item.partition(";")
        if coding.strip() not in ("gzip", "x-gzip", "*"):
            continue
        quality = params.strip()
        if not quality.startswith("q="):
            return True
        try:
            return float(quality[2:]) > 0
        except ValueError:
            return False
    return False


class StatusBody:
    """The status JSON, rendered at most once per second of the store's wall clock and per store version:
    requests that come together share one render (each is a report of every series, and 200 pages
    polling at once rendered it 200 times), and a changed store or a new second renders afresh."""

    def __init__(self, store: Store, render: Callable[[], bytes]) -> None:
        self.store, self.render = store, render
        self._lock = threading.Lock()  # one render at a time; the others wait for it and share it
        self._key: tuple[int, int] | None = None
        self._body = b""

    def latest(self) -> bytes:
        self.store.complete()  # lines read but not yet counted reach the store before its version is compared
        key = (self.store.version, int(self.store.clock()))
        with self._lock:
            if key != self._key:
                self._body, self._key = self.render(), key
            return self._body


def _status(store: Store, settings: DeriveSettings) -> dict[str, Any]:
    report = snapshot_report(store.snapshot(timeline_points=TIMELINE_POINTS), settings, store.window_seconds, store.pairs)
    report["health_window"] = judged_window(settings, store.window_seconds)
    report["version"] = __version__
    return report
