"""Golden data of the plugin on a real vLLM 0.24.0 (H200): its records, the log and /metrics of one run.

The plugin's exact records must sum to the final /metrics counters, per position too; the log's
reconstruction must hold the exact D inside its bounds; the sidecar that read all three at once
must have found them in agreement, with the plugin as the reference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import GOLDEN

from exporter.config import DeriveSettings
from exporter.parse.exposition import parse_exposition
from exporter.report.analyze import AnalyzeOptions, analyze

RUNS = {"ngram-k5-plugin": 5, "draft_model-noisy-k8-plugin": 8}


def run_dir(name: str) -> Path:
    return GOLDEN / "vllm-0.24.0" / name


def lifetime(report: dict, source: str) -> dict:
    (series,) = [s for s in report["series"] if s["window"] == "lifetime" and s["source"] == source]
    return series


@pytest.mark.parametrize("name", RUNS)
def test_plugin_records_sum_to_the_final_metrics_counters(name):
    directory = run_dir(name)
    records = [json.loads(line) for path in (directory / "plugin").glob("*.jsonl") for line in path.read_text().splitlines()]
    (config,) = [r for r in records if r["kind"] == "config"]
    assert config["vllm_version"] == "0.24.0" and config["num_speculative_tokens"] == RUNS[name]
    intervals = [r for r in records if r["kind"] == "interval"]
    assert len(intervals) > 40 and all(r["errors"] == 0 for r in records)
    (final,) = (directory / "metrics").glob("*_final.prom")
    counters = parse_exposition(final.read_text()).counters[("target", "0")]
    k = RUNS[name]
    assert sum(r["drafts"] for r in intervals) == counters.drafts
    assert sum(r["draft_tokens"] for r in intervals) == counters.draft_tokens
    assert sum(r["accepted_tokens"] for r in intervals) == counters.accepted_tokens
    assert [sum(r["accepted_per_position"][i] for r in intervals) for i in range(k)] == [counters.accepted_per_position[i] for i in range(k)]


@pytest.mark.parametrize("name", RUNS)
def test_the_sidecar_reads_records_and_log_and_the_log_reconstruction_holds_the_exact_d(name):
    directory = run_dir(name)
    (records,) = (directory / "plugin").glob("*.jsonl")
    report = analyze([str(directory / "server.log"), str(records)], DeriveSettings(), AnalyzeOptions(progress=False))
    exact, logged = lifetime(report, "plugin"), lifetime(report, "log")
    assert (exact["draft_tokens"], exact["accepted_tokens"]) == (logged["draft_tokens"], logged["accepted_tokens"])
    low, high = logged["drafts_bounds"]
    assert low <= exact["drafts"] <= high
    assert logged["mean_acceptance_length"] == pytest.approx(exact["mean_acceptance_length"], rel=1e-3)
    assert exact["method"] == logged["method"] and exact["num_speculative_tokens"] == RUNS[name]


@pytest.mark.parametrize("name", RUNS)
def test_the_live_sidecar_found_all_three_sources_in_agreement(name):
    status = json.loads((run_dir(name) / "sidecar-status.json").read_text())
    checks = status["cross_check"]
    pairs = {(c["reference_source"], c["compared_source"]) for c in checks}
    assert pairs == {("plugin", "log"), ("plugin", "metrics"), ("metrics", "log")}
    assert all(c["agree"] for c in checks)
    assert max(c["relative_difference"] for c in checks if c["window"] == "1h") < 1e-3
