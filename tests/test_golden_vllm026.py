"""Golden captures of a real vLLM 0.26.0 (H200) with `--enable-logging-iteration-details`, our plugin
and the sidecar: the log, /metrics and the plugin records of one server must agree with its final
/metrics counters (the truth) — exactly wherever a source can know the number.

The plugin and /metrics count every draft; the log prints per-interval rates, so its D and A_i are
reconstructed: exact for draft_model (every draft is k long), inside the reconstruction's bounds
for n-gram drafts (often shorter than k). T and A are printed as integers and must be exact.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import GOLDEN
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import DeriveSettings
from exporter.intervals.from_log import LogInterpreter
from exporter.parse.exposition import parse_exposition
from exporter.records import RawLine
from exporter.report.analyze import AnalyzeOptions, analyze

VERSION = "0.26.0"
RUNS = {"draft_model-noisy-k8-plugin": ("draft_model", 8), "ngram-k5-plugin": ("ngram", 5)}
ITERATION = "Engine 000: Iteration("


def run_dir(name: str) -> Path:
    return GOLDEN / f"vllm-{VERSION}" / name


def truth(name: str) -> dict[str, object]:
    """The final (drained) /metrics snapshot's spec-decode counters."""
    (final,) = (run_dir(name) / "metrics").glob("*_final.prom")
    c = parse_exposition(final.read_text()).counters[("target", "0")]
    k = RUNS[name][1]
    assert sorted(c.accepted_per_position) == list(range(k))
    return {"drafts": c.drafts, "draft_tokens": c.draft_tokens, "accepted_tokens": c.accepted_tokens,
            "accepted_per_position": [c.accepted_per_position[i] for i in range(k)]}


def lifetimes(name: str) -> dict[str, dict]:
    directory = run_dir(name)
    (records,) = (directory / "plugin").glob("*.jsonl")
    report = analyze([str(directory / "server.log"), str(records)], DeriveSettings(), AnalyzeOptions(progress=False))
    assert report["parse_errors"] == {}
    return {s["source"]: s for s in report["series"] if s["window"] == "lifetime"}


@pytest.mark.parametrize("name", RUNS)
def test_the_capture_is_vllm_026_with_iteration_details(name):
    directory = run_dir(name)
    assert json.loads((directory / "version_life1.json").read_text())["version"] == VERSION
    assert "--enable-logging-iteration-details" in (directory / "command.txt").read_text()
    text = (directory / "server.log").read_text(encoding="utf-8")
    assert sum(ITERATION in line for line in text.splitlines()) > 1000


@pytest.mark.parametrize("name", RUNS)
def test_iteration_lines_are_neither_stats_nor_problems(name):
    """`Engine 000: Iteration(N): …` starts like the stats line; it must yield nothing, and every
    `SpecDecoding metrics` line exactly one interval."""
    path = run_dir(name) / "server.log"
    interpreter = LogInterpreter(str(path))
    iteration_lines = spec_lines = intervals = 0
    for text in path.read_text(encoding="utf-8").splitlines():
        outcome = interpreter.feed(RawLine(str(path), text, 0.0))
        assert outcome.problem is None, (text, outcome.problem)
        if ITERATION in text:
            iteration_lines += 1
            assert outcome.interval is None, text
        spec_lines += "SpecDecoding metrics:" in text
        intervals += outcome.interval is not None
    assert iteration_lines > 1000 and intervals == spec_lines > 20


@pytest.mark.parametrize("name", RUNS)
def test_plugin_records_equal_the_final_metrics_exactly(name):
    records = [json.loads(line) for path in (run_dir(name) / "plugin").glob("*.jsonl") for line in path.read_text().splitlines()]
    (config,) = [r for r in records if r["kind"] == "config"]
    method, k = RUNS[name]
    assert (config["vllm_version"], config["method"], config["num_speculative_tokens"]) == (VERSION, method, k)
    intervals = [r for r in records if r["kind"] == "interval"]
    assert len(intervals) > 40 and all(r["errors"] == 0 for r in records)
    summed = {field: sum(r[field] for r in intervals) for field in ("drafts", "draft_tokens", "accepted_tokens")}
    summed["accepted_per_position"] = [sum(r["accepted_per_position"][i] for r in intervals) for i in range(k)]
    assert summed == truth(name)


@pytest.mark.parametrize("name", RUNS)
def test_the_log_and_plugin_paths_of_analyze_agree_with_the_final_metrics(name):
    final, series = truth(name), lifetimes(name)
    exact, logged = series["plugin"], series["log"]
    for field in ("drafts", "draft_tokens", "accepted_tokens", "accepted_per_position"):
        assert exact[field] == final[field], field
    assert (logged["draft_tokens"], logged["accepted_tokens"]) == (final["draft_tokens"], final["accepted_tokens"])
    low, high = logged["drafts_bounds"]
    assert low <= final["drafts"] <= high
    method, k = RUNS[name]
    assert (logged["method"], logged["num_speculative_tokens"], logged["server_version"]) == (method, k, VERSION)
    if method == "draft_model":  # fixed-length drafts: D = T / k, and every A_i is the only integer that fits
        assert low == high == logged["drafts"] == final["drafts"]
        assert logged["accepted_per_position"] == final["accepted_per_position"]
    else:
        assert high - low < 0.001 * final["drafts"]
        assert logged["mean_acceptance_length"] == pytest.approx(exact["mean_acceptance_length"], rel=1e-4)


def sidecar_totals(name: str) -> dict[str, dict[str, object]]:
    """The sidecar's own /metrics (its last save, after the load had drained): totals per source."""
    totals: dict[str, dict] = {}
    text = (run_dir(name) / "sidecar-metrics.prom").read_text()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            field = {"specdecode_drafts_total": "drafts", "specdecode_draft_tokens_total": "draft_tokens",
                     "specdecode_accepted_tokens_total": "accepted_tokens"}.get(sample.name)
            source = totals.setdefault(sample.labels.get("source", ""), {"accepted_per_position": {}})
            if field is not None:
                source[field] = sample.value
            elif sample.name == "specdecode_accepted_tokens_per_position_total":
                source["accepted_per_position"][int(sample.labels["position"])] = sample.value
    for source in totals.values():
        per_position = source["accepted_per_position"]
        source["accepted_per_position"] = [per_position[i] for i in sorted(per_position)]
    return totals


@pytest.mark.parametrize("name", RUNS)
def test_the_live_sidecar_exposed_the_final_metrics_from_all_three_sources(name):
    final, totals = truth(name), sidecar_totals(name)
    assert totals["metrics"] == final  # scraped
    assert totals["plugin"] == final  # read from the records
    logged = totals["log"]
    assert (logged["draft_tokens"], logged["accepted_tokens"]) == (final["draft_tokens"], final["accepted_tokens"])
    if RUNS[name][0] == "draft_model":
        assert logged == final


@pytest.mark.parametrize("name", RUNS)
def test_the_live_sidecar_found_all_three_sources_in_agreement(name):
    checks = json.loads((run_dir(name) / "sidecar-status.json").read_text())["cross_check"]
    pairs = {(c["reference_source"], c["compared_source"]) for c in checks}
    assert pairs == {("plugin", "log"), ("plugin", "metrics"), ("metrics", "log")}
    assert all(c["agree"] for c in checks)
    assert max(c["relative_difference"] for c in checks if c["window"] == "1h") < 1e-4


def test_an_ngram_log_has_no_draft_model():
    """SpeculativeConfig(method='ngram', model=None, …) means no draft model, not one named "None"."""
    logged = lifetimes("ngram-k5-plugin")["log"]
    assert logged["draft_model"] is None
