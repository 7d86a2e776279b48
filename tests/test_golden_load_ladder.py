"""The load ladder on a real vLLM 0.26.0 on an H200 (tests/golden/vllm-0.26.0/load-ladder, issue 31):
plain decoding and speculation at k = 2, 4, 8 under closed-loop load at 1 … 256 concurrent requests.
The clients' records are the truth (scripts/gpu-ladder/measure.py); the sidecar's pay-off estimate,
made from each speculative run's log and the plain run's calibration alone, is judged against them
(scripts/gpu-ladder/check.py); the alert that says so reached Alertmanager's webhook live."""

from __future__ import annotations

import gzip
import json
import re
import tarfile
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest
from helpers import script_module

from exporter.judge.calibration import calibration_json
from exporter.report.calibrate import calibrate

HERE = Path(__file__).resolve().parent
LADDER = HERE / "golden" / "vllm-0.26.0" / "load-ladder"
RUNS = ("plain", "k2", "k4", "k8")
# The one point where the estimate misses, for the reason the README gives: k8 at 64 (best k 0 where
# k = 2 measured ×1.17: the verification of 556 tokens a step lies past the calibration's busiest
# plain step and is extrapolated). A change that fixes it or breaks another point fails here.
KNOWN_MISSES = {("k8", 64, "best_k")}


def _script(name: str) -> ModuleType:
    return script_module(f"scripts/gpu-ladder/{name}.py")  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def checked() -> dict:
    return _script("check").check(str(LADDER))


def _counter(snapshots: tarfile.TarFile, snapshot: str, name: str) -> float:
    body = snapshots.extractfile(f"metrics/{snapshot}").read().decode()  # type: ignore[union-attr]
    return float(re.search(rf"^{re.escape(name)}\{{[^}}]*\}} (\S+)", body, re.M).group(1))  # type: ignore[union-attr]


def test_the_readmes_table_is_what_the_client_records_say():
    measured = _script("measure").markdown(_script("measure").measure(str(LADDER)))
    assert measured in (LADDER / "README.md").read_text()


@pytest.mark.parametrize("run", RUNS[1:])
def test_each_runs_log_sums_to_its_own_metrics(run):
    """Σ Accepted and Drafted of the spec lines equal the drained counters (`final.prom`); k8 was packed
    during the hold that followed its ladder, so its log up to the hold's first request equals the
    counters at the ladder's end."""
    hold = LADDER / run / "hold.jsonl.gz"
    cut = float("inf")
    with tarfile.open(LADDER / run / "metrics.tar.gz") as snapshots:
        snapshot = "final.prom"
        if hold.exists():
            with gzip.open(hold, "rt") as file:
                cut = min(json.loads(line)["start"] for line in file)
            snapshot = "c256-end.prom"
        accepted = _counter(snapshots, snapshot, "vllm:spec_decode_num_accepted_tokens_total")
        drafted = _counter(snapshots, snapshot, "vllm:spec_decode_num_draft_tokens_total")
    sums = [0, 0]
    with gzip.open(LADDER / run / "server.log.gz", "rt") as log:
        for line in log:
            found = re.search(r"INFO (\d\d-\d\d \d\d:\d\d:\d\d) .*Accepted: (\d+) tokens, Drafted: (\d+) tokens", line)
            if found and datetime.strptime(f"2026-{found[1]}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp() < cut:
                sums[0] += int(found[2])
                sums[1] += int(found[3])
    assert sums == [accepted, drafted]


def test_the_committed_calibration_is_what_calibrate_makes_of_the_plain_runs_log():
    made = calibration_json(calibrate([str(LADDER / "plain" / "server.log.gz")]))
    saved = json.loads((LADDER / "calibration.json").read_text())
    assert {**made, "source": None} == {**saved, "source": None}


def test_speculation_loses_past_a_break_even_that_falls_as_k_grows():
    measured = _script("measure").measure(str(LADDER))
    evens = measured["break_even_concurrency"]
    assert evens["k8"] < evens["k4"] < evens["k2"] < 128  # type: ignore[operator]
    last = measured["points"][-1]  # type: ignore[index]
    assert last["concurrency"] == 256 and last["best_k"] == 0


def test_the_estimate_meets_the_issues_bar_at_every_point_but_the_one_known(checked):
    misses = set()
    for row in checked["rows"]:
        if "concurrency" not in row:
            assert row["ok"], row  # the break-even within one ladder step
            continue
        assert "problem" not in row, row  # every point has a band
        if abs(row["speedup_error"]) > 0.15:
            misses.add((row["run"], row["concurrency"], "speedup"))
        if not row["best_k_ok"]:
            misses.add((row["run"], row["concurrency"], "best_k"))
    assert misses == KNOWN_MISSES
    errors = [abs(row["speedup_error"]) for row in checked["rows"] if "speedup_error" in row and (row["run"], row["concurrency"], "speedup") not in misses]
    assert len(errors) == 27 and max(errors) <= 0.15


def test_the_break_even_is_within_a_few_percent_of_the_measured_one(checked):
    evens = {row["run"]: row for row in checked["rows"] if "measured_break_even" in row}
    assert set(evens) == {"k2", "k4", "k8"}
    for row in evens.values():
        assert abs(row["estimated_break_even"] / row["measured_break_even"] - 1) < 0.1, row
        assert row["reason"].startswith("measured")


def test_the_slower_than_plain_alert_reached_alertmanagers_webhook_live():
    """The k4 run passed its break-even (≈ 65 requests) at 128 and 256 clients; the sidecar (1m window,
    the alert's `for:` scaled to 20 s) said so, and Alertmanager sent it to the webhook once."""
    (notification,) = [json.loads(line) for line in (LADDER / "stack" / "alertmanager-notifications.jsonl").read_text().splitlines()]
    (alert,) = notification["alerts"]
    assert alert["labels"]["alertname"] == "SpecDecodeSlowerThanPlain" and alert["status"] == "firing"
    starts = datetime.fromisoformat(alert["startsAt"].replace("Z", "+00:00")).timestamp()
    levels = {json.loads(line)["concurrency"]: json.loads(line) for line in (LADDER / "k4" / "levels.jsonl").read_text().splitlines()}
    assert levels[128]["began"] < starts < levels[256]["ended"]
    description = alert["annotations"]["description"]
    speedup = float(re.search(r"emits (\S+)× the tokens", description).group(1))  # type: ignore[union-attr]
    assert speedup < 1 and "k = 0" in description
