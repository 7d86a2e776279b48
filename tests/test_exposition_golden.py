"""The real sidecar's exposition on the golden capture: diffed against a golden file, linted by promtool.

Run `pytest --update-golden tests/test_exposition_golden.py` to rewrite the golden file; the
diff is the review.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CAPTURE, GOLDEN
from helpers import running_exporter, value

pytestmark = pytest.mark.slow  # promtool and a running sidecar

EXPECTED = GOLDEN / "e2e-exposition.prom"
# Series whose values depend on the clock or the machine, not on the data.
VOLATILE = re.compile(r"^specdecode_\w*timestamp_seconds\b|^specdecode_exporter_build_info\b")


def masked(text: str, log_path: str) -> str:
    lines = [line for line in text.splitlines() if not VOLATILE.match(line)]
    return "\n".join(lines).replace(log_path, "<capture>/server.log") + "\n"


def scrape_capture(tmp_path: Path) -> tuple[str, str]:
    log = tmp_path / "server.log"
    shutil.copyfile(CAPTURE / "server.log", log)
    with running_exporter("--log", str(log), "--from-start") as exporter:
        exporter.wait_for(
            lambda s: value(s, "specdecode_log_spec_lines_total") == 31 and value(s, "specdecode_log_lines_total") == 1013,
            "all 1013 lines, 31 of them spec lines",
        )
        return exporter.metrics_text(), str(log)


def test_exposition_matches_the_golden_file(tmp_path, update_golden):
    text, log_path = scrape_capture(tmp_path)
    got = masked(text, log_path)
    if update_golden:
        EXPECTED.write_text(got)
    assert got == EXPECTED.read_text()


def test_promtool_check_metrics_passes(tmp_path):
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: .ci/run installs Debian's prometheus package"
    text, _ = scrape_capture(tmp_path)
    result = subprocess.run([promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60)
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    assert result.stdout.decode().strip() == "" and result.stderr.decode().strip() == ""
