"""The simulator writes what vLLM writes (the capture is the judge) and its numbers are exact.

Shapes: every kind of line the capture has is described by one regex; each regex must match the
capture's lines of that kind *and* the simulator's, and every simulator line must be one of them.
Numbers: the exporter's log-derived totals equal the simulator's ground truth (A and T exactly, D
and A_i within the reconstruction bound), for every scenario and log layout.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import CAPTURE
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import DeriveSettings
from exporter.intervals.pipeline import LogPipeline
from exporter.judge.status import snapshot_report
from exporter.parse.exposition import parse_exposition
from exporter.simulate.layouts import SUPPORTED_VERSIONS, Layout
from exporter.simulate.scenarios import SCENARIOS
from exporter.simulate.server import SimulatedServer
from exporter.simulate.vllm_format import access_line
from exporter.state.store import Store

NUMBER = r"\d+(?:\.\d+)?"
API = r"^\(APIServer pid=\d+\) "
STAMP = r"INFO \d\d-\d\d \d\d:\d\d:\d\d "
SHAPES = {
    "spec": re.compile(
        API + STAMP + r"\[metrics\.py:\d+\] SpecDecoding metrics: Mean acceptance length: \d+\.\d\d, "
        rf"Accepted throughput: \d+\.\d\d tokens/s, Drafted throughput: \d+\.\d\d tokens/s, Accepted: \d+ tokens, "
        rf"Drafted: \d+ tokens, Per-position acceptance rate: \d\.\d{{3}}(?:, \d\.\d{{3}})*, Avg Draft acceptance rate: {NUMBER}%$"
    ),
    "engine": re.compile(
        API + STAMP + rf"\[loggers\.py:\d+\] Engine \d{{3}}: Avg prompt throughput: {NUMBER} tokens/s, "
        rf"Avg generation throughput: {NUMBER} tokens/s, Running: \d+ reqs, Waiting: \d+ reqs, "
        rf"GPU KV cache usage: {NUMBER}%, Prefix cache hit rate: {NUMBER}%$"
    ),
    "access": re.compile(API + r'INFO:     127\.0\.0\.1:\d+ - "GET /metrics HTTP/1\.1" 200 OK$'),
    "args": re.compile(API + STAMP + r"\[api_utils\.py:\d+\] non-default args: \{.*'speculative_config': \{'method': '\w+', 'model': '[^']+', 'num_speculative_tokens': \d+\}.*\}$"),
    "engine_init": re.compile(
        r"^\(EngineCore pid=\d+\) " + STAMP + r"\[core\.py:\d+\] Initializing a V1 LLM engine \(v[\d.]+\) with config: "
        r"model='[^']+', speculative_config=SpeculativeConfig\(method='\w+', model='[^']+', num_spec_tokens=\d+\), .*served_model_name=[^,]+, .*$"
    ),
}
OTHER = re.compile(r"^(\(\w+ pid=\d+\) )?(INFO|WARNING)")  # startup/shutdown chatter, as vLLM prints it


def kind_of(line: str) -> str | None:
    return next((kind for kind, shape in SHAPES.items() if shape.match(line)), None)


def simulated(name: str = "drop-off", seconds: float = 60.0, **kwargs) -> tuple[SimulatedServer, list[str]]:  # type: ignore[no-untyped-def]
    server = SimulatedServer(SCENARIOS[name], seed=7, start_time=1796199535.0, log_interval=kwargs.pop("log_interval", 10.0), **kwargs)
    lines = server.advance(seconds)
    return server, lines


def test_every_capture_line_kind_has_a_shape_that_matches_it(golden_log_lines):
    capture_kinds = {kind for line in golden_log_lines if (kind := kind_of(line))}
    assert capture_kinds == set(SHAPES)
    for kind in ("spec", "engine", "access"):
        marker = {"spec": "SpecDecoding metrics", "engine": "] Engine 0", "access": "GET /metrics"}[kind]
        assert all(kind_of(line) == kind for line in golden_log_lines if marker in line), kind


def test_simulator_lines_have_the_captures_shapes():
    server, lines = simulated(engines=2, layout=Layout("0.24.0"))  # the capture's version
    lines.append(access_line(server, "127.0.0.1:33204", "GET", "/metrics", 200))
    kinds = [kind_of(line) for line in lines]
    assert {"spec", "engine", "access", "args", "engine_init"} <= set(kinds)
    assert all(kind is not None or OTHER.match(line) for kind, line in zip(kinds, lines, strict=True)), [line for k, line in zip(kinds, lines, strict=True) if k is None and not OTHER.match(line)]


def families(text: str) -> dict[str, tuple[str, str, frozenset[frozenset[str]]]]:
    """Spec-decode families: name → (type, help, label-name sets)."""
    result = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("vllm:spec_decode"):
            label_sets = frozenset(frozenset(sample.labels) for sample in family.samples)
            result[family.name] = (family.type, family.documentation, label_sets)
    return result


def test_simulator_exposition_has_the_captures_families_and_labels():
    server, _ = simulated()
    assert families(server.metrics_text()) == families((CAPTURE / "metrics" / "112_final.prom").read_text())


def analyze_lines(lines: list[str]) -> dict:  # type: ignore[type-arg]
    store = Store()
    LogPipeline(store, "sim.log").consume(lines, read_at=0.0)
    return snapshot_report(store.snapshot(), DeriveSettings())


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_log_and_metrics_agree_with_the_ground_truth(name):
    server, lines = simulated(name, seconds=150.0, engines=2)
    report = analyze_lines(lines)
    assert report["parse_errors"] == {}
    truth = {e["engine"]: e for e in server.totals()}
    metrics = parse_exposition(server.metrics_text()).counters
    for engine, counts in truth.items():
        exported = metrics[(SCENARIOS[name].served_model_name, engine)]
        assert (exported.drafts, exported.draft_tokens, exported.accepted_tokens) == (counts["drafts"], counts["draft_tokens"], counts["accepted_tokens"])
        if SCENARIOS[name].restart_after is not None:
            continue  # the log spans both runs, /metrics only the one since the restart
        (series,) = [s for s in report["series"] if s["engine"] == engine]
        # only the intervals printed so far are in the log; the truth may hold a partial interval more
        printed_ticks = int(server.elapsed // server.log_interval) * server.log_interval
        if printed_ticks == server.elapsed:
            assert series["accepted_tokens"] == counts["accepted_tokens"]
            assert series["draft_tokens"] == counts["draft_tokens"]
            low, high = series["drafts_bounds"]
            assert low <= counts["drafts"] <= high
            for estimate, exact in zip(series["accepted_per_position"], counts["accepted_per_position"], strict=True):
                assert abs(estimate - exact) <= 0.001 * high + (high - low) + series["lines"]


@pytest.mark.parametrize(
    "layout, scenario, knows_drafts",
    # V1-b prints no D: known as T/k for a fixed-length drafter (eagle3), unknown for shortened n-gram drafts
    [("V1-e", "drop-off", True), ("V1-d", "drop-off", True), ("V1-c", "drop-off", True), ("V1-b", "drop-off", True),
     ("V1-b", "ngram", False), ("V0-b", "drop-off", True)],
)
def test_every_log_layout_parses_without_errors(layout, scenario, knows_drafts):
    server, lines = simulated(scenario, seconds=60.0, log_format=layout, layout=Layout("0.26.0"))
    report = analyze_lines(lines)
    assert report["parse_errors"] == {}
    (series,) = report["series"]
    (truth,) = server.totals()
    assert series["format"] == layout
    assert (series["drafts"] is not None) is knows_drafts
    if layout == "V0-b":  # cumulative: the first line is only a baseline unless startup was seen (it was)
        assert series["drafts"] == truth["drafts"] and series["accepted_tokens"] == truth["accepted_tokens"]
    else:
        assert series["accepted_tokens"] == truth["accepted_tokens"]


def test_same_seed_same_run_and_the_scenarios_verdicts():
    _, first = simulated("healthy")
    _, second = simulated("healthy")
    assert first == second
    for name in ("healthy", "broken", "ngram"):
        _, lines = simulated(name, seconds=120.0)
        (series,) = analyze_lines(lines)["series"]
        assert series["health"] in SCENARIOS[name].expected_verdicts, (name, series["health"], series["reason"])
    _, lines = simulated("ngram", seconds=60.0, layout=Layout("0.31.0"))
    (series,) = analyze_lines(lines)["series"]
    assert series["mean_draft_length"] < SCENARIOS["ngram"].k  # drafts shorter than k, and not assumed otherwise
    _, lines = simulated("ngram", seconds=60.0, layout=Layout("0.32.0"))  # Model Runner V2: every n-gram draft is k long
    (series,) = analyze_lines(lines)["series"]
    assert series["mean_draft_length"] == SCENARIOS["ngram"].k and series["drafts_bounds"][0] == series["drafts_bounds"][1]


def test_drop_off_halves_acceptance_after_the_drop():
    server, before = simulated("drop-off", seconds=120.0)
    after = server.advance(120.0)
    length_before = analyze_lines(before)["series"][0]["mean_acceptance_length"]
    length_after = analyze_lines(after)["series"][0]["mean_acceptance_length"]
    assert length_after - 1 < 0.5 * (length_before - 1)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize("formatter", ["text", "json"])
def test_each_supported_vllm_layout_reads_back_exactly(version, formatter):
    if formatter == "json" and version < "0.32":
        with pytest.raises(ValueError, match="no JSON log formatter"):
            Layout(version, json_logs=True)
        return
    layout = Layout(version, json_logs=formatter == "json", logging_prefix="[pod-a] ")
    server, lines = simulated(seconds=60.0, engines=2, layout=layout, iteration_details=True)
    lines.append(access_line(server, "127.0.0.1:33204", "GET", "/metrics", 200))
    iteration = [line for line in lines if "Iteration(" in line]
    assert iteration and all(("Engine 00" in line) is (version >= "0.26") for line in iteration)
    if formatter == "json":
        assert all(json.loads(line)["message"] for line in lines)
    else:  # the process prefix before VLLM_LOGGING_PREFIX up to 0.30, after it from 0.31
        spec = next(line for line in lines if "SpecDecoding metrics" in line)
        assert spec.startswith("[pod-a] (APIServer pid=" if version >= "0.31" else "(APIServer pid=")
        assert lines[-1].startswith("INFO:     ") is (version >= "0.31")  # uvicorn lines lost the prefix in 0.31
    report = analyze_lines(lines)
    assert report["parse_errors"] == {}
    truth = {e["engine"]: e for e in server.totals()}
    series = {s["engine"]: s for s in report["series"]}
    assert set(series) == set(truth) == {"0", "1"}
    for engine, s in series.items():
        exact = truth[engine]
        assert (s["drafts"], s["draft_tokens"], s["accepted_tokens"]) == (exact["drafts"], exact["draft_tokens"], exact["accepted_tokens"])
        assert s["server_version"] == version and s["method"] == "eagle3"
