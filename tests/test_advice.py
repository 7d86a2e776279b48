"""The advice: recommended k with its curve, verdicts with reasons, notes, and references that survive restarts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import CAPTURE
from helpers import Rendered, running_exporter, value

from exporter.config import DeriveSettings, ExpositionSettings
from exporter.expose.metrics import MetricsRenderer
from exporter.intervals.pipeline import LogPipeline
from exporter.judge.status import snapshot_report
from exporter.simulate.layouts import NEWEST, Layout
from exporter.simulate.scenarios import SCENARIOS
from exporter.simulate.server import SimulatedServer
from exporter.state.store import Store


def simulated_report(name: str, seconds: float = 180.0, version: str = NEWEST) -> dict:  # type: ignore[type-arg]
    server = SimulatedServer(SCENARIOS[name], seed=11, start_time=1796199535.0, layout=Layout(version))
    store = Store()
    LogPipeline(store, f"{name}.log").consume(server.advance(seconds), read_at=0.0)
    (series,) = snapshot_report(store.snapshot(), DeriveSettings())["series"]
    return series


def test_healthy_dflash_is_wasteful_with_a_small_recommended_k():
    series = simulated_report("healthy")
    assert series["num_speculative_tokens"] == 15
    assert series["recommended_speculative_tokens"] <= 6
    assert (series["health"], series["reason_code"]) == ("wasteful", "trailing_positions_wasted")
    assert "instead of 15" in series["reason"]
    assert "per drafted block" in series["cost_model"]  # DFlash drafts a block in one pass
    assert len(series["speedup_estimate"]) == 16


def test_broken_drafter_points_at_check_config():
    series = simulated_report("broken")
    assert (series["health"], series["reason_code"]) == ("broken", "position0_collapse")
    assert "check-config" in series["reason"] and "with 15 drafted positions" in series["reason"]


def test_shortened_drafts_say_so():
    series = simulated_report("ngram", version="0.31.0")  # n-gram drafts are shorter than k up to 0.31
    assert series["notes"] and "understate" in series["notes"][0]
    assert simulated_report("drop-off", 60.0)["notes"] == []


def test_analyze_prints_the_recommendation_curve_and_its_assumptions():
    table = subprocess.run([sys.executable, "-m", "exporter", "analyze", str(CAPTURE / "server.log")], capture_output=True, text=True, timeout=60).stdout
    assert "recommended k = 8" in table and "speed-up model: step cost 1 + 0.08 per draft token" in table
    assert "speed-up(k'=pos+1)" in table


def test_verdict_reason_and_speedup_curve_are_exported():
    store = Store({"1h": 3600.0})
    LogPipeline(store, "capture").consume(
        (CAPTURE / "server.log").read_bytes().decode().split("\n"), read_at=__import__("time").time()
    )
    registry = Rendered(MetricsRenderer(store, DeriveSettings(health_window="1h"), ExpositionSettings(speedup_all=True)))
    labels = {"upstream": "capture", "model_name": "target", "engine": "0", "source": "log"}
    assert registry.get_sample_value("specdecode_verdict_info", {**labels, "state": "ok", "reason": "all_positions_pay"}) == 1
    speedup = [registry.get_sample_value("specdecode_expected_speedup", {**labels, "window": "1h", "speculative_tokens": str(k)}) for k in range(9)]
    assert speedup[0] == 1.0 and max(speedup) == speedup[8]
    # by default only the recommended and the running k: here both are 8
    lean = Rendered(MetricsRenderer(store, DeriveSettings(health_window="1h")))
    exported = [lean.get_sample_value("specdecode_expected_speedup", {**labels, "window": "1h", "speculative_tokens": str(k)}) for k in range(9)]
    assert exported == [None] * 8 + [speedup[8]]


@pytest.mark.slow  # restarts a running sidecar
def test_references_survive_a_restart_with_the_state_dir(tmp_path):
    state = tmp_path / "state"
    log = tmp_path / "vllm.log"
    lines = (CAPTURE / "server.log").read_bytes().decode().split("\n")
    log.write_text("\n".join(lines))
    with running_exporter("--log", str(log), "--from-start", "--state-dir", str(state)) as exporter:
        exporter.wait_for(lambda s: value(s, "specdecode_log_spec_lines_total") == 31, "the capture")
    saved = json.loads((state / "references.json").read_text())
    (memory,) = saved["references"]
    assert saved["version"] == 1 and sum(bucket[2] for bucket in memory["reference"]["buckets"]) > 25_000
    # restarted on a log that holds only the last two stats intervals: the baseline is the old run's
    tail = [line for line in lines if "SpecDecoding" in line or "Engine 000" in line][-4:]
    log.write_text("\n".join(lines[:30] + tail) + "\n")
    with running_exporter("--log", str(log), "--from-start", "--state-dir", str(state), "--window", "1m,5m") as exporter:
        # the counters continue from the saved run (31 spec lines) rather than restarting at 0
        exporter.wait_for(lambda s: value(s, "specdecode_log_spec_lines_total") == 31 + 2, "the short log")
        entry = next(s for s in exporter.get_json("/api/v1/status")["series"] if s["window"] == "1m")
        assert entry["baseline"]["source"].startswith("reference of ")
        assert entry["baseline"]["drafts"] > 25_000 and entry["reference"]["drafts"] > 25_000


def test_tree_drafting_is_judged_by_length_not_acceptance_ratio():
    from dataclasses import replace

    from exporter.judge.assess import assess

    store = Store()
    server = SimulatedServer(replace(SCENARIOS["ngram"], method="ddtree"), seed=2, start_time=1796199535.0)
    LogPipeline(store, "tree.log").consume(server.advance(60.0), read_at=0.0)
    (series,) = store.snapshot().series
    notes = assess(series, DeriveSettings()).notes
    assert len(notes) == 1 and "tree drafting" in notes[0]  # and not the shortened-drafts note


def _suffix_log(tmp_path) -> str:
    """A suffix drafter allowed k = 24 that drafts 2.55 tokens a draft on average (the case of issue #31),
    in vLLM 0.26.0's own format: `non-default args` (api_utils) and the V1-e spec line (v1/spec_decode/metrics.py)."""
    rates = [0.600, 0.300, 0.120, 0.050, 0.020, 0.010] + [0.0] * 18
    lines = ["(APIServer pid=7) INFO 12-03 10:00:00 [api_utils.py:273] non-default args: {'model': 'Qwen/Qwen3-8B', "
             "'speculative_config': {'method': 'suffix', 'num_speculative_tokens': 24}}"]
    for minute in range(30):
        drafts, drafted = 1000, 2550
        accepted = sum(round(drafts * r) for r in rates)
        lines.append(f"(APIServer pid=7) INFO 12-03 10:{minute:02d}:10 [metrics.py:120] SpecDecoding metrics: Mean acceptance length: "
                     f"{1 + accepted / drafts:.2f}, Accepted throughput: {accepted / 10:.2f} tokens/s, Drafted throughput: {drafted / 10:.2f} tokens/s, "
                     f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance rate: {', '.join(f'{r:.3f}' for r in rates)}, "
                     f"Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%")
    path = tmp_path / "suffix.log"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_a_suffix_drafter_is_charged_what_it_drafts_not_k(tmp_path):
    """Charged 24 drafted tokens a step it never drafts, the advice was `wasteful — drafting 3 instead
    of 24 would be about 67 % faster`: the cost model's own numbers say the steps cost the same."""
    from exporter.config import DeriveSettings as Settings
    from exporter.report.analyze import AnalyzeOptions, analyze

    (series,) = analyze([_suffix_log(tmp_path)], Settings(), AnalyzeOptions(progress=False))["series"]
    assert series["method"] == "suffix" and series["num_speculative_tokens"] == 24
    assert series["mean_draft_length"] == pytest.approx(2.55)
    assert series["health"] == "ok", series["reason"]
    speedup = series["speedup_estimate"]
    best = series["recommended_speculative_tokens"]
    # every k' past the drafted length costs what 2.55 drafted tokens cost: the curve is flat there, never falling
    assert speedup[24] == pytest.approx(max(speedup), rel=1e-9) and speedup[best] == pytest.approx(speedup[24], rel=1e-9)
