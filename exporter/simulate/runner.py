"""Run a SimulatedServer in real time (or faster): a log file written as vLLM writes it, and HTTP.

HTTP serves `/metrics`, `/version` and `/health` like vLLM's API server, and every request gets a
uvicorn-style access line in the log, as in the real capture.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import IO

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from exporter.simulate import vllm_format
from exporter.simulate.server import TICK_SECONDS, SimulatedServer

log = logging.getLogger(__name__)


class LogWriter:
    """Appends whole lines to the log (or stdout) from any thread, flushed at once like vLLM's."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._handle: IO[str] = open(path, "a", encoding="utf-8") if path else sys.stdout  # noqa: SIM115
        self._lock = threading.Lock()

    def write(self, lines: list[str]) -> None:
        if not lines:
            return
        with self._lock:
            self._handle.write("".join(line + "\n" for line in lines))
            self._handle.flush()

    def close(self) -> None:
        if self.path:
            self._handle.close()


def create_sim_app(server: SimulatedServer, writer: LogWriter) -> FastAPI:
    app = FastAPI(title="simulated vLLM", docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def access_log(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        response = await call_next(request)
        client = f"{request.client.host}:{request.client.port}" if request.client else "-"
        writer.write([vllm_format.access_line(server, client, request.method, request.url.path, response.status_code)])
        return response

    @app.get("/metrics")
    def metrics() -> Response:
        return PlainTextResponse(server.metrics_text(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/version")
    def version() -> JSONResponse:
        return JSONResponse({"version": server.layout.version})

    @app.get("/health")
    def health() -> Response:
        return Response(status_code=200)

    @app.get("/ground-truth")
    def ground_truth() -> JSONResponse:
        """Not in vLLM: the simulator's exact counts, for tests and curious users."""
        return JSONResponse({"elapsed": server.elapsed, "engines": server.totals()})

    return app


class Simulation:
    """Ticks the server in a thread (`speed` × real time) and serves its HTTP side."""

    def __init__(
        self, server: SimulatedServer, *, log_path: str | None, host: str, port: int, speed: float = 1.0, duration: float | None = None
    ) -> None:
        self.server = server
        self.writer = LogWriter(log_path)
        self.speed = speed
        self.duration = duration
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        config = uvicorn.Config(create_sim_app(server, self.writer), host=host, port=port, log_level="warning", access_log=False)
        self.http = uvicorn.Server(config)
        self._http_thread: threading.Thread | None = None
        self.finished = threading.Event()

    @property
    def port(self) -> int:
        """The bound port (useful when asked for port 0)."""
        servers = getattr(self.http, "servers", [])
        for server in servers:
            for sock in server.sockets:
                return int(sock.getsockname()[1])
        return int(self.http.config.port)

    def start(self) -> None:
        """Start ticking and serving in background threads; returns once HTTP is listening."""
        self.writer.write(self.server.advance(0.0) if self.server.elapsed == 0 else [])
        self._ticker = threading.Thread(target=self._tick_forever, name="simulator", daemon=True)
        self._ticker.start()
        self._http_thread = threading.Thread(target=self.http.run, name="simulator-http", daemon=True)
        self._http_thread.start()
        deadline = time.monotonic() + 15
        while not self.http.started:
            if time.monotonic() > deadline or not self._http_thread.is_alive():
                raise RuntimeError(f"simulator could not listen on {self.http.config.host}:{self.http.config.port}")
            time.sleep(0.02)

    def _tick_forever(self) -> None:
        step = TICK_SECONDS / self.speed
        next_at = time.monotonic()
        while not self._stop.is_set():
            next_at += step
            self.writer.write(self.server.advance(TICK_SECONDS))
            if self.duration is not None and self.server.elapsed >= self.duration:
                break
            self._stop.wait(max(0.0, next_at - time.monotonic()))
        self.finished.set()

    def stop(self) -> None:
        self._stop.set()
        self.http.should_exit = True
        for thread in (self._ticker, self._http_thread):
            if thread is not None:
                thread.join(timeout=10)
        self.writer.close()

    def run_until_interrupted(self) -> None:
        """For `simulate`: run until Ctrl-C / SIGTERM or the duration ends."""
        self.start()
        try:
            while not self.finished.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()
