"""A real plain vLLM 0.26.0 on an H200 under a concurrency ladder (tests/golden/vllm-0.26.0/plain-ladder-h200):
`calibrate` reads it, and what it says agrees with the client's own measurement it never saw."""

from __future__ import annotations

import gzip
import json
import math
import re
import tarfile
from pathlib import Path

from helpers import script_module

from exporter.judge.calibration import calibration_json
from exporter.judge.payoff import plain_step_seconds
from exporter.report.calibrate import calibrate

HERE = Path(__file__).resolve().parent
LADDER = HERE / "golden" / "vllm-0.26.0" / "plain-ladder-h200"


def _measure():  # scripts/gpu-ladder/measure.py: the ground truth from the client records alone
    return script_module("scripts/gpu-ladder/measure.py")


def _client(run: str) -> dict[int, float]:
    with gzip.open(LADDER / run / "load.jsonl.gz", "rt") as file:
        # every request, as the README's table counts them: plain decoding has no first-request stall to leave out
        return _measure().throughput([json.loads(line) for line in file], warmup=True)


def test_the_committed_calibration_is_what_calibrate_makes_of_the_log():
    made = calibration_json(calibrate([str(LADDER / "run-2" / "server.log.gz")]))
    saved = json.loads((LADDER / "calibration.json").read_text())
    assert {**made, "source": None} == {**saved, "source": None}  # the path differs by where it runs from
    assert [round(p["running"]) for p in made["points"]] == [1, 2, 4, 8, 16, 32, 64, 103, 251]


def test_the_calibration_predicts_the_clients_throughput_of_both_runs():
    """Plain tokens/s at each concurrency, from run-2's log alone, against each run's client records:
    within 10 % everywhere (run-1's 16 came out 5 % under run-2's: the run-to-run spread of one server)
    but at 128, where the server ran about 103 requests at a time (the clients' turnaround; one steady
    stats interval) and the curve read at 128 is 15 % over run-1's clients."""
    calibration = calibrate([str(LADDER / "run-2" / "server.log.gz")])
    for run in ("run-1", "run-2"):
        for concurrency, measured in _client(run).items():
            step, _ = plain_step_seconds(calibration, concurrency)
            predicted = concurrency / step
            tolerance = 0.16 if concurrency == 128 else 0.10
            assert abs(predicted / measured - 1) < tolerance, (run, concurrency, round(predicted), round(measured))


def test_the_counters_sum_to_the_clients_tokens_and_run_2s_log_to_its_counters():
    for run in ("run-1", "run-2"):
        with tarfile.open(LADDER / run / "metrics.tar.gz") as snapshots:
            def generated(name: str) -> float:
                body = snapshots.extractfile(f"metrics/{name}").read().decode()  # type: ignore[union-attr]
                return float(re.search(r"^vllm:generation_tokens_total\{[^}]*\} (\S+)", body, re.M).group(1))  # type: ignore[union-attr]

            counted = generated("c256-end.prom") - generated("c001-start.prom")
        with gzip.open(LADDER / run / "load.jsonl.gz", "rt") as file:
            assert counted == sum(json.loads(line)["completion_tokens"] for line in file)
    with gzip.open(LADDER / "run-2" / "server.log.gz", "rt") as file:
        rates = [float(m[1]) for line in file if (m := re.search(r"Engine 000: Avg prompt throughput: \S+ tokens/s, Avg generation throughput: (\S+)", line))]
    assert math.isclose(sum(rates) * 1.5, counted, rel_tol=0.005)  # VLLM_LOG_STATS_INTERVAL=1.5


def test_calibrate_refuses_what_is_not_a_plain_ladder(tmp_path):
    import pytest

    from exporter.judge.calibration import CalibrationError

    with pytest.raises(CalibrationError, match="speculates"):
        calibrate([str(HERE / "golden" / "vllm-0.24.0" / "draft_model-noisy-k8" / "server.log")])
    one_load = tmp_path / "one.log"
    with gzip.open(LADDER / "run-2" / "server.log.gz", "rt") as file:
        one_load.write_text("".join(line for line in file if "Running: 1 reqs" in line or "Engine" not in line))
    with pytest.raises(CalibrationError, match="two loads or more"):
        calibrate([str(one_load)])
