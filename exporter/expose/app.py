"""The HTTP side of `serve`: /metrics, /api/v1/status, / and /-/healthy, over FastAPI.

The app owns its CollectorRegistry (never the global one) and starts and stops the sources in
its lifespan, so a test can run the whole sidecar in-process or as a subprocess alike.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from exporter import __version__
from exporter.config import DeriveSettings
from exporter.expose.acknowledge import acknowledge
from exporter.expose.metrics import CONTENT_TYPE, MetricsRenderer
from exporter.expose.websecurity import OPEN_PATHS, WebSecurity
from exporter.judge.assess import judged_window
from exporter.judge.status import snapshot_report
from exporter.state.store import Store

TIMELINE_POINTS = 180
STATIC_FILES = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}


def _asset(name: str) -> str:
    """A file of the status page, shipped inside the package (no CDN: the page works offline)."""
    return (resources.files("exporter.expose") / "web" / name).read_text(encoding="utf-8")


class Source(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


def create_app(
    store: Store, settings: DeriveSettings, sources: Sequence[Source] = (), security: WebSecurity | None = None
) -> FastAPI:
    """Build the sidecar's ASGI app over `store`; `sources` run for the app's lifetime."""
    renderer = MetricsRenderer(store, settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        for source in sources:
            source.start()
        try:
            yield
        finally:
            for source in sources:
                source.stop()

    app = FastAPI(title="specdecode-exporter", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.store = store
    app.state.renderer = renderer

    if security is not None:

        @app.middleware("http")
        async def basic_auth(request: Request, call_next):  # type: ignore[no-untyped-def]
            security.refresh()
            if request.url.path not in OPEN_PATHS and not security.authorized(request.headers.get("authorization")):
                return PlainTextResponse(
                    "Unauthorized\n", status_code=401, headers={"WWW-Authenticate": 'Basic realm="specdecode-exporter"'}
                )
            return await call_next(request)

    @app.get("/metrics")
    def metrics() -> Response:
        # text format 0.0.4 for every client: Prometheus accepts it whatever it asks for first
        return Response(renderer.render(), media_type=CONTENT_TYPE)

    @app.get("/api/v1/status")
    def status() -> JSONResponse:
        return JSONResponse(_status(store, settings))

    @app.post("/api/v1/acknowledge")
    async def acknowledge_route(request: Request) -> JSONResponse:
        try:
            body = await request.json()
        except ValueError:
            body = None
        status_code, answer = acknowledge(store, settings, body, _who(request))
        return JSONResponse(answer, status_code=status_code)

    @app.get("/-/healthy")
    def healthy() -> PlainTextResponse:
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


def _status(store: Store, settings: DeriveSettings) -> dict[str, Any]:
    report = snapshot_report(store.snapshot(timeline_points=TIMELINE_POINTS), settings, store.window_seconds, store.pairs)
    report["health_window"] = judged_window(settings, store.window_seconds)
    report["version"] = __version__
    return report
