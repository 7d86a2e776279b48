"""Two vLLM servers writing one log are said once, whichever path reads it (intervals/writers.py):
line by line (serve's live edge) or a block at once (analyze, serve's catch-up)."""

from __future__ import annotations

import logging

import pytest
from workload import SPEC_LINES

from exporter.config import DeriveSettings
from exporter.intervals.pipeline import LogPipeline
from exporter.report.analyze import AnalyzeOptions, analyze
from exporter.state.store import Store

WARNING = "two vLLM servers seem to write one log"


def interleaved(servers: int) -> list[str]:
    """The capture's spec lines, written by `servers` API-server processes in turn."""
    return [line.replace("pid=", f"pid={7 + index % servers}", 1) if servers > 1 else line for index, line in enumerate(SPEC_LINES * 2)]


@pytest.mark.parametrize("servers", [1, 2])
def test_the_block_path_says_so_once(tmp_path, caplog, servers):
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(interleaved(servers)) + "\n")
    with caplog.at_level(logging.WARNING, logger="exporter.intervals.writers"):
        analyze([str(path)], DeriveSettings(), AnalyzeOptions(progress=False))
    assert sum(WARNING in record.getMessage() for record in caplog.records) == (servers > 1)


def test_the_line_path_says_so_once(caplog):
    with caplog.at_level(logging.WARNING, logger="exporter.intervals.writers"):
        LogPipeline(Store({"5m": 300.0}), "vllm.log").consume(interleaved(2), read_at=0.0)
    assert sum(WARNING in record.getMessage() for record in caplog.records) == 1
