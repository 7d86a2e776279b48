"""`serve --from-start` catching up: the backlog takes the batch path and counts what streaming counts.

The follower reads a backlog in chunks of up to 1 MiB (sources/logfile.py), and serve's pipelines
take a block that large through the batch path (intervals/batch.py) while the few lines of live
following stay on the streaming path. The same log, appended in pieces both larger and smaller
than a catch-up block with the clock moving between passes, is followed twice — once as serve
follows it, once with the batch path off — and the two stores must end equal: counters, the
verdict's memory and the whole /metrics text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.config import DeriveSettings
from exporter.expose.metrics import MetricsRenderer
from exporter.intervals import batch
from exporter.intervals.pipeline import BATCH_BLOCK_BYTES, LogPipeline, pipelines_into
from exporter.judge.memory import health_memory
from exporter.simulate.longlog import LongLog, Phase
from exporter.simulate.scenarios import SCENARIOS
from exporter.sources.logsource import LogSource
from exporter.state.persist import counters_json, memories_json
from exporter.state.reference import ReferenceRule
from exporter.state.store import Store

START = 1795000000.0  # 2026-11-18
HOUR = 3600.0
WINDOW = 300.0  # serve's default health window
# the log's bytes appended per pass, then the rest (1.4 MB): catch-up blocks and live-sized ones
PIECES = (300_000, 3_000, 200_000, 40_000, 60_000, 400_000, 3_000)


def pieces(path: Path) -> list[bytes]:
    """Six hours of a server whose acceptance drops after 1.5 h (about 600 KB in), restarting after
    3 h, cut at line ends into PIECES and the rest."""
    scenario = SCENARIOS["drop-off"]
    LongLog([Phase(0, scenario), Phase(1.5 * HOUR, scenario, factor=0.6), Phase(3 * HOUR, scenario, restart=True)],
            hours=6, start_time=START, log_interval=5.0).write(str(path))
    data, out = path.read_bytes(), []
    for size in PIECES:
        cut = data.find(b"\n", size) + 1 or len(data)
        out.append(data[:cut])
        data = data[cut:]
    return [*out, data] if data else out


def follow(pieces: list[bytes], log: Path, *, batch_path: bool) -> Store:
    """Append each piece and run one follower pass, the clock a health window on each time (serve's wiring)."""
    now = [START]
    store = Store({"5m": WINDOW}, clock=lambda: now[0], health=health_memory(DeriveSettings(), ReferenceRule(), WINDOW))
    serve_pipelines = pipelines_into(store)

    def pipelines(upstream: str, *, kind: str, log_format: str) -> LogPipeline:
        pipeline = serve_pipelines(upstream, kind=kind, log_format=log_format)
        if not batch_path:
            pipeline.batch = False
        return pipeline

    log.write_bytes(b"")
    source = LogSource([str(log)], store, pipelines, from_start=True, wall=lambda: now[0])
    for piece in pieces:
        now[0] += WINDOW
        with open(log, "ab") as out:
            out.write(piece)
        source.poll_once()
    source.stop()
    return store


def test_a_catch_up_through_the_batch_path_ends_as_streaming_does(tmp_path, monkeypatch):
    log = tmp_path / "vllm.log"
    parts = pieces(tmp_path / "generated.log")
    assert max(map(len, parts)) > 1 << 20 and min(map(len, parts)) < BATCH_BLOCK_BYTES
    streamed = follow(parts, log, batch_path=False)
    blocks: list[int] = []
    interpret_block = batch.interpret_block

    def counted(interpreter, texts, read_at, *rest):  # type: ignore[no-untyped-def]
        blocks.append(len(texts))
        return interpret_block(interpreter, texts, read_at, *rest)

    monkeypatch.setattr(batch, "interpret_block", counted)
    batched = follow(parts, log, batch_path=True)
    assert len(blocks) == 4  # 300 KB, 400 KB, and the rest in two reads (1 MiB, 0.4 MB); the small pieces streamed
    assert counters_json(batched) == counters_json(streamed)
    assert memories_json(batched) == memories_json(streamed)
    renders = [MetricsRenderer(store, DeriveSettings()).render() for store in (batched, streamed)]
    assert renders[0] == renders[1]
    labels = f'engine="0",model_name="llama-3.1-8b",source="log",state="degraded",upstream="{log}"'
    assert f"specdecode_health{{{labels}}} 1.0" in renders[0]  # the drop was judged (a memory with something in it)


@pytest.mark.parametrize("size", [BATCH_BLOCK_BYTES - 1, BATCH_BLOCK_BYTES])
def test_only_a_block_of_a_catch_ups_size_takes_the_batch_path(size, monkeypatch):
    store = Store({"5m": WINDOW})
    pipeline = pipelines_into(store)("u", kind="log", log_format="plain")
    taken: list[int] = []
    monkeypatch.setattr(batch, "interpret_block", lambda interpreter, texts, read_at, *rest: taken.append(1) or batch.BlockResult())
    pipeline.consume_block(b"x" * (size - 1) + b"\n", 0.0)
    assert taken == ([1] if size >= BATCH_BLOCK_BYTES else [])
