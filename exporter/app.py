"""The HTTP side of `serve`: /metrics, /api/v1/status, / and /-/healthy, over FastAPI.

The app owns its CollectorRegistry (never the global one) and starts and stops the sources in
its lifespan, so a test can run the whole sidecar in-process or as a subprocess alike.
"""

from __future__ import annotations

import html
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from exporter.config import DeriveSettings
from exporter.export import VERSION, SpecDecodeCollector
from exporter.report import snapshot_report
from exporter.store import Store


class Source(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


def create_app(store: Store, settings: DeriveSettings, sources: Sequence[Source] = ()) -> FastAPI:
    """Build the sidecar's ASGI app over `store`; `sources` run for the app's lifetime."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(SpecDecodeCollector(store, settings))

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        for source in sources:
            source.start()
        try:
            yield
        finally:
            for source in sources:
                source.stop()

    app = FastAPI(title="specdecode-exporter", version=VERSION, lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.store = store
    app.state.registry = registry

    @app.get("/metrics")
    def metrics(request: Request) -> Response:
        encoder, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encoder(registry), media_type=content_type)

    @app.get("/api/v1/status")
    def status() -> JSONResponse:
        return JSONResponse(_status(store, settings))

    @app.get("/-/healthy")
    def healthy() -> PlainTextResponse:
        return PlainTextResponse("OK\n")

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return HTMLResponse(_index_page(_status(store, settings)))

    return app


def _status(store: Store, settings: DeriveSettings) -> dict[str, Any]:
    report = snapshot_report(store.snapshot(), settings, store.window_seconds, store.pairs)
    report["version"] = VERSION
    return report


def _index_page(status: dict[str, Any]) -> str:
    """A plain page until the status-page issue lands: per series and window, the key numbers."""
    rows = []
    for s in status["series"]:
        length = s["mean_acceptance_length"]
        rates = ", ".join(f"{r:.2f}" for r in s["position_acceptance"])
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(cell))}</td>"
                for cell in (
                    s["model_name"], s["engine"], s["upstream"], s["window"], s["health"],
                    "—" if length is None else f"{length:.2f}", rates or "—",
                    s["recommended_speculative_tokens"] if s["recommended_speculative_tokens"] is not None else "—",
                )
            )
            + "</tr>"
        )
    body = "".join(rows) or '<tr><td colspan="8">no spec-decode data yet</td></tr>'
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>specdecode-exporter</title></head><body>"
        f"<h1>specdecode-exporter {html.escape(VERSION)}</h1>"
        "<p><a href='/metrics'>/metrics</a> · <a href='/api/v1/status'>/api/v1/status</a></p>"
        "<table border='1' cellpadding='4'><tr><th>model</th><th>engine</th><th>upstream</th><th>window</th>"
        "<th>health</th><th>L</th><th>per-position</th><th>recommended k</th></tr>"
        f"{body}</table></body></html>"
    )
