"""`serve`: build the store, the sources and the app from Settings, then run uvicorn.

Signals: SIGTERM and SIGINT stop the sidecar cleanly — every source stops, then the state (read
positions and counters) is saved, last, atomically. SIGHUP reloads: the web config and the
targets file are read again at once (they are also reloaded when they change) and the state is
saved; the sidecar keeps running. The end of stdin (`--log -`) saves the state too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn
from fastapi import FastAPI

from exporter.config import Settings, parse_duration
from exporter.expose.app import Service, create_app
from exporter.expose.connection import BoundedH11Protocol
from exporter.expose.websecurity import WebSecurity
from exporter.intervals.clock import parse_zone
from exporter.intervals.pipeline import pipelines_into
from exporter.intervals.scrapes import ScrapeInterpreter
from exporter.judge.memory import health_memory
from exporter.sources.logsource import LogSource
from exporter.sources.scrape import ScrapeSource
from exporter.sources.stdin import STDIN_UPSTREAM, StdinSource
from exporter.sources.targets import target_from_url
from exporter.state.persist import StateKeeper
from exporter.state.reference import ReferenceRule
from exporter.state.store import Store

log = logging.getLogger(__name__)

# The log follower interprets what it read in batches: when the store is read (every scrape), or
# after this long. Following a busy log then costs one cheap pass per wake-up (benchmarks/: follow).
DEFER_SECONDS = 1.0


def build_app(settings: Settings, security: WebSecurity | None = None) -> FastAPI:
    """The sidecar as an ASGI app (its services — sources, state keeper — start with the app's lifespan)."""
    rule = ReferenceRule.of(settings.reference_hold, settings.reference_window, settings.reference_min_drafts, settings.reference_recovery)
    judged = settings.windows.get(settings.derive.health_window) or parse_duration(settings.derive.health_window)
    store = Store(settings.windows, max_series=settings.max_series, health=health_memory(settings.derive, rule, judged), pairs=settings.pairs)
    services: list[Service] = []
    zone = parse_zone(settings.log_timezone) if settings.log_timezone else None
    pipelines = pipelines_into(store, model_name=settings.model_name, max_line_bytes=settings.max_line_bytes, zone=zone)
    log_source: LogSource | None = None
    paths = [path for path in settings.logs if path != STDIN_UPSTREAM]
    if paths or settings.plugin_dirs:
        log_source = LogSource(
            paths,
            store,
            pipelines,
            from_start=settings.from_start,
            log_format=settings.log_format,
            poll_interval=settings.poll_interval,
            file_events=settings.file_events,
            plugin_dirs=settings.plugin_dirs,
            max_line_bytes=settings.max_line_bytes,
            defer=DEFER_SECONDS,
            retire_after=settings.derive.stale_after,
        )
        store.before_read(log_source.complete)  # readers see every line read, however batched
        services.append(log_source)
    stdin: StdinSource | None = None
    if STDIN_UPSTREAM in settings.logs:
        stdin = StdinSource(store, pipelines, log_format=settings.log_format)
        services.append(stdin)
    scrape: ScrapeSource | None = None
    interpreter: ScrapeInterpreter | None = None
    if settings.targets or settings.targets_file:
        interpreter = ScrapeInterpreter(store, engine=settings.engine)
        scrape = ScrapeSource(
            store,
            interpreter,
            targets=[target_from_url(url) for url in settings.targets],
            targets_file=settings.targets_file,
            interval=settings.scrape_interval,
            timeout=settings.scrape_timeout,
            max_bytes=settings.max_scrape_bytes,
            forget_after=settings.derive.stale_after,
        )
        services.append(scrape)
    keeper: StateKeeper | None = None
    if settings.state_dir:
        # last: it restores before anything starts and saves after every other source has stopped
        keeper = StateKeeper(store, settings.state_dir, logs=log_source, scrapes=interpreter, cycles=scrape)
        services.append(keeper)
        if stdin is not None:
            stdin.on_end = keeper.save_soon
    app = create_app(store, settings.derive, services, security, settings.exposition)

    def reload() -> None:
        log.info("SIGHUP: reloading the web config and the targets file, saving the state")
        if security is not None:
            security.refresh(force=True)
        if scrape is not None:
            scrape.reload_targets()
        if keeper is not None:
            keeper.save_soon()

    app.state.reload = reload
    return app


def run(settings: Settings) -> None:
    """Serve until SIGINT/SIGTERM (uvicorn handles both and runs the lifespan's shutdown)."""
    host, port = settings.host_port
    # the scrape source and the refresher run Python in threads beside uvicorn's loop: hand the GIL
    # over every 1 ms (not 5) so that a GET of /metrics, which only sends bytes, waits less behind them
    sys.setswitchinterval(0.001)
    security = WebSecurity(settings.web_config_file) if settings.web_config_file else None
    tls: dict[str, Any] = {}
    if security is not None and security.config.tls is not None:
        context = security.ssl_context()  # bad TLS files: one clear error now, not a traceback after "serving"
        tls = {"ssl_context_factory": lambda config, default: context}
        security.on_trust_change = BoundedH11Protocol.trust_changed  # a removed client CA: the connections and sessions it let in end too
    app = build_app(settings, security)
    log.info(
        "serving metrics url=%s://%s:%d/metrics logs=%s targets=%s",
        "https" if tls else "http", host, port, ",".join(settings.logs) or "-", ",".join(settings.targets) or settings.targets_file or "-",
    )
    # keep-alive past a scrape interval (Prometheus reuses its connection); with uvicorn's 5 s, a loop
    # busy for seconds under a storm of status requests closed connections whose next request was
    # already in their buffer ("Server disconnected without sending a response")
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on", timeout_keep_alive=75,
                            http=BoundedH11Protocol, **tls)
    try:
        _CalmServer(config, on_hangup=app.state.reload).run()
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it handled, after a clean shutdown
        pass


class _CalmServer(uvicorn.Server):
    """uvicorn's server, ticking once a second instead of ten times; TLS handshakes under the request
    head's deadline; SIGHUPs coalesced into one reload at a time.

    Each tick only refreshes the Date header and checks for a shutdown request, yet ten of them a
    second cost an idle sidecar 0.4% of a core, more than following ten idle logs. Shutdown on
    SIGTERM waits at most a second longer.
    """

    def __init__(self, config: uvicorn.Config, on_hangup: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_hangup = on_hangup
        self._hangups = threading.Event()  # set by SIGHUP; one thread reloads, once more if more came meanwhile
        self._reloader: threading.Thread | None = None

    async def startup(self, sockets: list[Any] | None = None) -> None:
        """uvicorn's startup, its listener given a TLS handshake deadline: asyncio's default of 60 s let
        a client hold a socket a minute without a byte of its request (plain HTTP: HEADER_SECONDS)."""
        loop = asyncio.get_running_loop()
        create_server = loop.create_server

        async def bounded(*args: Any, **kwargs: Any) -> asyncio.Server:
            if kwargs.get("ssl") is not None:
                kwargs.setdefault("ssl_handshake_timeout", BoundedH11Protocol.header_seconds)
            return await create_server(*args, **kwargs)

        loop.create_server = bounded  # type: ignore[method-assign]
        try:
            await super().startup(sockets)
        finally:
            del loop.create_server  # the loop's own method again

    def _hangup(self) -> None:
        self._hangups.set()
        if self._reloader is None:
            self._reloader = threading.Thread(target=self._reload_on_hangup, name="sighup", daemon=True)
            self._reloader.start()

    def _reload_on_hangup(self) -> None:
        """50 SIGHUPs in a row are a reload or two, not 50 threads reloading at once."""
        while True:
            self._hangups.wait()
            self._hangups.clear()
            try:
                self.on_hangup()
            except Exception:  # a bug must not end reloading: log it and keep going
                log.exception("reload on SIGHUP failed")

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's SIGINT/SIGTERM handling, plus SIGHUP as a reload (its default action kills at once, saving nothing)."""
        if threading.current_thread() is not threading.main_thread():
            with super().capture_signals():
                yield
            return

        def hangup(signum: int, frame: object) -> None:
            self._hangup()  # a handler interrupts the loop anywhere: the work is done in a thread of its own

        previous = signal.signal(signal.SIGHUP, hangup)
        try:
            with super().capture_signals():
                yield
        finally:
            signal.signal(signal.SIGHUP, previous)

    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000  # a multiple of 10: on_tick refreshes the Date header each time
            await asyncio.sleep(1.0)
            should_exit = await self.on_tick(counter)
