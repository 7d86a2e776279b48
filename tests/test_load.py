"""Load: 200 concurrent clients on /metrics and /api/v1/status of a sidecar holding 1,000 series.

Zero errors is the assertion; latencies are reported, never asserted (timing belongs to benchmarks).
CI runs it for a few seconds; SPECDECODE_LOAD_SECONDS=60 runs the full version:

    SPECDECODE_LOAD_SECONDS=60 python -m pytest -s tests/test_load.py
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections import Counter

import httpx
import pytest
from helpers import running_exporter, value

pytestmark = pytest.mark.slow  # 200 HTTP clients against a running sidecar

SECONDS = float(os.environ.get("SPECDECODE_LOAD_SECONDS", "3"))
CLIENTS = 200
SERIES = 1000


def log_with_series(count: int) -> str:
    lines = []
    for engine in range(count):
        lines.append(f"(APIServer pid=1) INFO 12-02 08:19:42 [loggers.py:273] Engine {engine:03d}: Avg prompt throughput: 1.0 tokens/s")
        lines.append(
            "(APIServer pid=1) INFO 12-02 08:19:42 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: 2.20, "
            "Accepted throughput: 12.00 tokens/s, Drafted throughput: 20.00 tokens/s, Accepted: 120 tokens, Drafted: 200 tokens, "
            "Per-position acceptance rate: 0.700, 0.500, Avg Draft acceptance rate: 60.0%"
        )
    return "\n".join(lines) + "\n"


async def hammer(base: str) -> tuple[list[float], Counter[str], int]:
    latencies: list[float] = []
    errors: Counter[str] = Counter()  # what went wrong, so a failure says it
    deadline = time.monotonic() + SECONDS
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=base, timeout=300, limits=limits) as client:

        async def one_client(index: int) -> None:
            paths = ("/metrics", "/api/v1/status")
            turn = index
            while time.monotonic() < deadline:
                started = time.monotonic()
                try:
                    response = await client.get(paths[turn % 2])
                    if response.status_code != 200:
                        errors[f"{paths[turn % 2]} answered {response.status_code}"] += 1
                except httpx.HTTPError as error:
                    errors[f"{paths[turn % 2]}: {type(error).__name__} {error}"] += 1
                latencies.append(time.monotonic() - started)
                turn += 1

        await asyncio.gather(*(one_client(i) for i in range(CLIENTS)))
    return latencies, errors, len(latencies)


def test_200_clients_against_1000_series_get_no_errors(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(log_with_series(SERIES))
    with running_exporter("--log", str(log), "--from-start", "--window", "5m", "--health-window", "5m") as exporter:
        exporter.wait_for(lambda s: value(s, "specdecode_log_spec_lines_total") == SERIES, f"{SERIES} series")
        latencies, errors, requests = asyncio.run(hammer(exporter.base_url))
    latencies.sort()
    print(
        f"\nload: {CLIENTS} clients for {SECONDS:.0f} s against {SERIES} series: {requests} requests, {sum(errors.values())} errors, "
        f"p50 {statistics.median(latencies) * 1000:.0f} ms, p99 {latencies[int(len(latencies) * 0.99) - 1] * 1000:.0f} ms"
    )
    assert not errors, dict(errors)
    assert requests >= CLIENTS
