"""The real sidecar over loopback: real files appended to, rotated both ways, truncated; stdin.

The golden capture's lines are written in three chunks, with a rename rotation and a copytruncate
between them; the sidecar's counters must end equal to the capture's /metrics truth. Tests wait
on the sidecar's own counters, never on fixed sleeps.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import CAPTURE
from helpers import running_exporter, value

pytestmark = pytest.mark.slow  # a running sidecar following real files

FINAL = {"accepted": 78455, "drafted": 201056, "drafts": 25132}


def capture_lines() -> list[str]:
    return (CAPTURE / "server.log").read_bytes().decode("utf-8").split("\n")[:-1]


def append(path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8", newline="") as handle:
        handle.write("".join(line + "\n" for line in lines))


def spec_count(lines: list[str]) -> int:
    return sum("SpecDecoding metrics:" in line for line in lines)


def test_follow_append_rotate_truncate_end_to_end(tmp_path):
    lines = capture_lines()
    head, first, second, third = lines[:100], lines[100:400], lines[400:700], lines[700:]
    log = tmp_path / "vllm.log"
    append(log, head)  # the server's startup, already written when the sidecar starts
    # every window's gauges (opt-in since issue 19): the 1h window holds the whole capture
    with running_exporter("--log", str(tmp_path / "*.log"), "--poll-interval", "0.2", "--derived-windows", "all") as exporter:
        upstream = {"upstream": str(log)}
        exporter.wait_for(lambda s: value(s, "specdecode_source_up", **upstream) == 1, "the file to be followed")

        append(log, first)
        samples = exporter.wait_for(
            lambda s: value(s, "specdecode_log_lines_total", **upstream) == len(first), "the first chunk"
        )
        assert value(samples, "specdecode_log_spec_lines_total", format="V1-e") == spec_count(first)

        os.rename(log, tmp_path / "vllm.log.1")  # rename-and-create rotation
        append(log, second)
        exporter.wait_for(
            lambda s: value(s, "specdecode_log_lines_total", **upstream) == len(first) + len(second)
            and value(s, "specdecode_log_rotations_total", **upstream) == 1,
            "the second chunk after rotation",
        )

        shutil.copyfile(log, tmp_path / "vllm.log.2")  # copytruncate
        with open(log, "r+") as handle:
            handle.truncate(0)
        append(log, third)
        samples = exporter.wait_for(
            lambda s: value(s, "specdecode_log_truncations_total", **upstream) == 1
            and value(s, "specdecode_log_lines_total", **upstream) == len(first) + len(second) + len(third),
            "the third chunk after truncation",
        )

        series = {**upstream, "model_name": "target", "engine": "0", "source": "log"}
        assert value(samples, "specdecode_accepted_tokens_total", **series) == FINAL["accepted"]
        assert value(samples, "specdecode_draft_tokens_total", **series) == FINAL["drafted"]
        assert value(samples, "specdecode_drafts_total", **series) == FINAL["drafts"]
        assert value(samples, "specdecode_accepted_tokens_per_position_total", **series, position="0") == 15453
        assert value(samples, "specdecode_log_parse_errors_total") is None
        assert value(samples, "specdecode_info", upstream=str(log), method="draft_model", num_speculative_tokens="8") == 1
        length = value(samples, "specdecode_mean_acceptance_length", **series, window="1h")
        assert abs(length - 4.1217) < 1e-3
        assert value(samples, "specdecode_health", **series, state="ok") == 1

        status = exporter.get_json("/api/v1/status")
        by_window = {s["window"]: s for s in status["series"]}
        assert by_window["1h"]["accepted_per_position"][:2] == [15453, 11397]
        assert status["sources"][0]["rotations"] == 1


def test_stdin_source_counts_everything_and_shows_down_at_end_of_input(tmp_path):
    lines = capture_lines()
    with running_exporter("--log", "-", stdin=subprocess.PIPE) as exporter:
        assert exporter.process.stdin is not None
        exporter.process.stdin.write("".join(line + "\n" for line in lines).encode())
        exporter.process.stdin.close()
        samples = exporter.wait_for(lambda s: value(s, "specdecode_source_up", upstream="-") == 0, "end of input")
        assert value(samples, "specdecode_log_lines_total", upstream="-") == len(lines)
        assert value(samples, "specdecode_accepted_tokens_total", upstream="-") == FINAL["accepted"]
        assert value(samples, "specdecode_drafts_total", upstream="-") == FINAL["drafts"]


def test_a_missing_log_is_down_and_exports_no_acceptance(tmp_path):
    with running_exporter("--log", str(tmp_path / "absent.log"), "--poll-interval", "0.1") as exporter:
        samples = exporter.wait_for(
            lambda s: value(s, "specdecode_source_up", upstream=str(tmp_path / "absent.log")) == 0, "the source to be down"
        )
        assert value(samples, "specdecode_mean_acceptance_length") is None
        assert value(samples, "specdecode_accepted_tokens_total") is None
