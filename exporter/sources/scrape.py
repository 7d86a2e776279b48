"""The scrape source: poll the /metrics of every target with httpx, in its own thread and event loop.

Each cycle scrapes all targets concurrently, each on its own: a target still waiting for its
answer (up to the timeout) is skipped, and a cycle waits no longer than the interval for any. A scrape is bounded in time (`timeout`, the whole
request, not per read) and size (`max_bytes`, checked while streaming); redirects are not followed
and proxy variables are ignored, so no request goes anywhere but the configured target (and its
`/version`, once, for vLLM). A failed scrape marks the target down with its reason — refused,
timeout, http_status, too_large, unparsable, no_spec_families, transport, drained_endpoint — and
never produces an acceptance value. A target whose reading does harm (TensorRT-LLM's JSON /metrics,
drained by every read) is fetched once, reported down with its reason and never fetched again.
What a body means is not this module's business: it goes to a ScrapeConsumer (the interval
stage's ScrapeInterpreter, wired by the CLI), which may still call it unparsable.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx

from exporter import __version__
from exporter.records import HealthBoard, SourceHealth
from exporter.sources.targets import Target, TargetsFile
from exporter.vocabulary import ScrapeProblem, SourceKind

log = logging.getLogger(__name__)

SOURCE_KIND: SourceKind = "metrics"
ACCEPT = "text/plain;version=0.0.4;q=1.0,*/*;q=0.1"
READ_BYTES = 64 << 10  # raw bytes per step while streaming
VERSION_BYTES = 64 << 10  # vLLM's /version is {"version": "0.24.0"}: a body far larger is not one


class ScrapeFailure(Exception):
    def __init__(self, reason: ScrapeProblem, detail: str = "") -> None:
        super().__init__(detail or reason)
        self.reason: ScrapeProblem = reason


class ScrapeOutcome(Protocol):
    """What the consumer made of a body (exporter.intervals.scrapes.ScrapeResult)."""

    @property
    def failure(self) -> tuple[str, str] | None: ...
    @property
    def wants_version(self) -> bool: ...
    @property
    def stop(self) -> bool: ...


class ScrapeConsumer(Protocol):
    """Takes the bodies the source fetched, one target at a time."""

    def accept(self, url: str, text: str, now: float) -> ScrapeOutcome: ...

    def set_version(self, url: str, version: str | None) -> None: ...

    def forget(self, url: str) -> None: ...


class ScrapeSource:
    """Scrapes the configured targets every `interval` seconds until stopped."""

    def __init__(
        self,
        health: HealthBoard,
        consumer: ScrapeConsumer,
        *,
        targets: Sequence[Target] = (),
        targets_file: str | None = None,
        interval: float = 5.0,
        timeout: float = 3.0,
        max_bytes: int = 16 << 20,
        concurrency: int = 64,
        wall: Callable[[], float] = time.time,  # the wall: when each body arrived
        forget_after: float = 300.0,
    ) -> None:
        self.health = health
        self.consumer = consumer
        self.static_targets = list(targets)
        self.targets_file = TargetsFile(targets_file) if targets_file else None
        self.interval = interval
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.concurrency = concurrency
        self.wall = wall
        self._labels: dict[str, dict[str, str]] = {}  # per target, from a file_sd targets file
        # targets that left the targets file, since when (monotonic): forgotten only after
        # `forget_after`, so a file emptied and restored by config management changes no counter
        self.forget_after = forget_after
        self._departed: dict[str, float] = {}
        self._clients: dict[str, httpx.AsyncClient] = {}  # one small pool per target (see client())
        self._stopped: set[str] = set()  # targets never fetched again (ScrapeOutcome.stop)
        self._tls: ssl.SSLContext | None = None  # built once: each client would load the CA bundle again
        self._thread: threading.Thread | None = None
        self._posted: dict[str, SourceHealth] = {}  # the health last posted per target: its failures add up here
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._after_cycle: Callable[[], None] | None = None
        self._first_cycle = threading.Event()
        self._inflight: dict[str, asyncio.Task[None]] = {}  # scrapes still waiting for an answer, by target

    def on_cycle(self, callback: Callable[[], None]) -> None:
        """Call `callback` after each cycle, from the scrape thread (the state keeper saves then)."""
        self._after_cycle = callback

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start scraping; return after the first cycle (at most the timeout), so the first /metrics
        served has every target's counters as they are now — after a restart too, when the restored
        counters are older than what was served before it: they never show as falling."""
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), name="scrape-source", daemon=True)
        self._thread.start()
        self._first_cycle.wait(self.timeout + 2)

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 5)
        if self.targets_file is not None:
            self.targets_file.close()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        try:
            while not self._stopping.is_set():
                started = time.monotonic()
                try:
                    await self.scrape_all()
                    if self._after_cycle is not None:
                        self._after_cycle()
                except Exception:  # a bug must not end scraping: log it and go on
                    log.exception("scrape cycle failed")
                self._first_cycle.set()
                remaining = self.interval - (time.monotonic() - started)
                with contextlib.suppress(TimeoutError):  # the interval passed without a stop: scrape again
                    await asyncio.wait_for(self._stopping.wait(), timeout=max(remaining, 0.0))
        finally:
            for task in list(self._inflight.values()):
                task.cancel()
            for client in self._clients.values():
                await client.aclose()
            self._clients.clear()

    def client(self, url: str) -> httpx.AsyncClient:
        """The target's own client, keeping one connection alive to it.

        One shared pool for many hosts scans all its connections on every request and, smaller than
        the fleet, reconnects to most targets every cycle: at 1,000 targets that alone filled a core.
        """
        client = self._clients.get(url)
        if client is None:
            if self._tls is None:
                self._tls = ssl.create_default_context()
            client = self._clients[url] = httpx.AsyncClient(
                verify=self._tls,
                timeout=httpx.Timeout(self.timeout),
                follow_redirects=False,
                trust_env=False,  # no proxy from the environment: requests go to the target itself
                headers={"Accept": ACCEPT, "Accept-Encoding": "gzip", "User-Agent": f"specdecode-exporter/{__version__}"},
                limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            )
        return client

    def reload_targets(self) -> None:
        """Read the targets file again at the next cycle, changed or not (SIGHUP)."""
        if self.targets_file is not None:
            self.targets_file.reload()

    # --- one cycle ---------------------------------------------------------------------------

    def current_targets(self) -> list[Target]:
        targets = list(self.static_targets)
        if self.targets_file is not None:
            targets += self.targets_file.current()
        unique: dict[str, Target] = {}
        for target in targets:
            unique.setdefault(target.url, target)
        return list(unique.values())

    async def scrape_all(self) -> None:
        targets = self.current_targets()
        wanted = {target.url for target in targets}
        self._stopped &= wanted  # a target that leaves and comes back is looked at afresh
        now = time.monotonic()
        for url in wanted:
            self._departed.pop(url, None)  # back (a targets file restored): it continues where it was
        for url in [url for url in self._labels if url not in wanted]:
            if now - self._departed.setdefault(url, now) < self.forget_after:
                continue
            del self._labels[url], self._departed[url]
            self.consumer.forget(url)
            self._posted.pop(url, None)
            self.health.forget(url)  # left the targets file for good: no longer ours to report
            log.info("target left the targets file, its series retired target=%s", url)
        for url in [url for url in self._clients if url not in wanted and url not in self._inflight]:
            await self._clients.pop(url).aclose()
        limit = asyncio.Semaphore(self.concurrency)

        async def bounded(target: Target) -> None:
            if target.url in self._stopped:
                return  # down with its reason since the one read that showed it must not be read
            async with limit:
                try:
                    await self.scrape_target(self.client(target.url), target)
                except Exception as error:  # one target's surprise must not cost the others their scrape
                    log.exception("scrape failed unexpectedly target=%s", target.url)
                    if target.url in self._labels:
                        self._failed(target.url, "internal_error", repr(error), 0.0)

        # every target on its own: one whose last scrape is still waiting (up to its timeout) is not
        # asked again, and the cycle waits for none beyond the interval — a hanging target no longer
        # stretches the others' cycle to its timeout
        for target in targets:
            if target.url not in self._inflight:
                task = asyncio.create_task(bounded(target))
                self._inflight[target.url] = task
                task.add_done_callback(lambda done, url=target.url: self._inflight.pop(url, None))  # type: ignore[misc]
        if self._inflight:
            first = not self._first_cycle.is_set()
            await asyncio.wait(list(self._inflight.values()), timeout=self.timeout if first else self.interval)

    async def scrape_target(self, client: httpx.AsyncClient, target: Target) -> None:
        self._labels[target.url] = dict(target.labels)
        started, now = time.monotonic(), self.wall()
        try:
            text = await asyncio.wait_for(self._fetch(client, target.url), self.timeout)
        except ScrapeFailure as failure:
            self._failed(target.url, failure.reason, str(failure), time.monotonic() - started)
            return
        except (TimeoutError, httpx.TimeoutException):
            self._failed(target.url, "timeout", f"no complete answer within {self.timeout}s", time.monotonic() - started)
            return
        except httpx.ConnectError as error:
            self._failed(target.url, "refused", str(error) or "connection refused", time.monotonic() - started)
            return
        except httpx.HTTPError as error:
            self._failed(target.url, "transport", str(error) or type(error).__name__, time.monotonic() - started)
            return
        outcome = self.consumer.accept(target.url, text, now)
        if outcome.stop:
            self._stopped.add(target.url)
            log.warning("target not scraped again target=%s reason=%s", target.url, outcome.failure[0] if outcome.failure else "")
        if outcome.failure is not None:
            reason, detail = outcome.failure
            self._failed(target.url, reason, detail, time.monotonic() - started)
            return
        if outcome.wants_version:
            self.consumer.set_version(target.url, await self._version(client, target.url))
        self._succeeded(target.url, time.monotonic() - started)

    async def _fetch(self, client: httpx.AsyncClient, url: str, max_bytes: int | None = None) -> str:
        """The body of a 200 answer, at most `max_bytes` (default: the /metrics cap) after decoding."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        async with client.stream("GET", url) as response:
            if response.status_code != 200:
                raise ScrapeFailure("http_status", f"HTTP {response.status_code}")
            if "text/html" in response.headers.get("content-type", ""):
                raise ScrapeFailure("unparsable", "an HTML page, not metrics")
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise ScrapeFailure("too_large", f"{declared} bytes > {limit}")
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("identity", "", "gzip", "x-gzip"):
                raise ScrapeFailure("unparsable", f"Content-Encoding {encoding!r} (asked for gzip or none)")
            # gunzipped here, never more than the cap allows: httpx's decoder unpacks each network read
            # whole, and a gzip bomb's 64 KiB read is 64 MiB unpacked (13 of them peaked at 349 MB)
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding in ("gzip", "x-gzip") else None
            size, chunks = 0, list[bytes]()
            async for raw in response.aiter_raw(READ_BYTES):
                data = raw
                while data:
                    if inflate is None:
                        piece, data = data, b""
                    else:
                        piece = inflate.decompress(data, limit - size + 1)
                        data = inflate.unconsumed_tail
                        if inflate.eof:
                            data = b""
                    size += len(piece)
                    if size > limit:
                        # let go of the body before raising: the traceback keeps this frame alive in a
                        # reference cycle (through asyncio's task) until the cyclic GC runs, and 13
                        # bombs × 16 MiB kept that way passed the pod limit
                        chunks.clear()
                        del piece
                        raise ScrapeFailure("too_large", f"more than {limit} bytes")
                    chunks.append(piece)
        return b"".join(chunks).decode("utf-8", errors="replace")

    def _failed(self, url: str, reason: str, detail: str, duration: float) -> None:
        log.debug("scrape failed target=%s reason=%s detail=%s", url, reason, detail)
        last = self._posted.get(url, SourceHealth())
        failures = {**last.failures, reason: last.failures.get(reason, 0) + 1}
        self._post(url, SourceHealth(up=False, failures=failures, last_error=f"{reason}: {detail}", scrape_duration=duration,
                                     extra_labels=self._labels.get(url, {})))

    def _succeeded(self, url: str, duration: float) -> None:
        """Up (what the body counted, the interval stage posts: ScrapeInterpreter)."""
        last = self._posted.get(url, SourceHealth())
        self._post(url, SourceHealth(up=True, failures=last.failures, scrape_duration=duration, extra_labels=self._labels.get(url, {})))

    def _post(self, url: str, health: SourceHealth) -> None:
        self._posted[url] = health
        self.health.post_health(url, health, kind=SOURCE_KIND)

    async def _version(self, client: httpx.AsyncClient, url: str) -> str | None:
        """vLLM's `GET /version` on the target's own host and port."""
        parts = urlsplit(url)
        try:  # bounded like /metrics, in time and in size (a gzip bomb here cost 1.3 GB)
            text = await asyncio.wait_for(self._fetch(client, urlunsplit((parts.scheme, parts.netloc, "/version", "", "")), VERSION_BYTES),
                                          self.timeout)
            version = json.loads(text).get("version")
        except (TimeoutError, ScrapeFailure, httpx.HTTPError, ValueError, AttributeError, RecursionError):
            return None
        return str(version) if version else None

