"""The benchmark command's small run, so it cannot rot: it runs every benchmark end to end.

Timings are not asserted here (they live in benchmarks/RESULTS.md); what is asserted is that each
benchmark ran, checked its own answer (analyze's and mtail's totals against the generator's truth,
the extraction against the payload) and reported a row with a figure.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs the quick benchmark suite

ROOT = Path(__file__).resolve().parent.parent


def test_quick_benchmark_run_writes_every_row(tmp_path):
    out = tmp_path / "RESULTS.md"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    text = out.read_text()
    for case in (
        "grep -c, 1 MiB", "analyze vs grep", "analyze vs mtail", "serve --from-start vs analyze, 1 MiB", "spec-decode extraction", "file events (inotify)",
        "polling every", "growing at 100 lines/s", "growing at 1,000 lines/s", "10 idle files", "targets every 1 s: CPU",
        "targets every 1 s: RSS", "GET /metrics", "gzip-bomb targets",
    ):
        assert case in text, f"no row for {case!r}"
    assert "mtail not installed" not in text  # scripts/test installs it
    assert "| machine:" not in text and "- machine:" in text
