"""A report of what is true now (issue 23): the headline is the current period — since the last
config change, restart or health change — with its own L, α, curve, recommended k and verdict;
earlier periods are listed under it and lifetime figures stay, labelled lifetime.

The issue's case: a drafter broken for 72 h (position 0 at 0.11), a restart with the fixed config,
24 h healthy. Before: the headline said L 1.555 and α 3.7 % pooled over both and recommended k = 5
from the pooled curve, while the verdict line said "drafting 6 instead of 15".
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from exporter.config import DeriveSettings
from exporter.intervals.pipeline import LogPipeline
from exporter.judge.memory import health_memory
from exporter.judge.status import snapshot_report
from exporter.report.analyze import AnalyzeOptions, analyze
from exporter.report.formats import render_csv, render_table
from exporter.simulate.longlog import LongLog, Phase
from exporter.simulate.scenarios import SCENARIOS
from exporter.state.reference import ReferenceRule
from exporter.state.store import Store

HOUR = 3600.0
START = 1795000000.0
RATES = tuple(0.72 * 0.556**i for i in range(15))  # k = 15, L ≈ 2.62
HEALTHY = replace(SCENARIOS["drop-off"], rates=RATES, drop_after=None)
BROKEN = replace(HEALTHY, rates=tuple(0.11 * 0.17**i for i in range(15)))  # position 0 at 0.11: the misconfigured drafter


def write(tmp_path: Path, phases: list[Phase], hours: float, name: str = "vllm.log") -> str:
    path = tmp_path / name
    LongLog(phases, hours=hours, start_time=START, log_interval=60.0).write(str(path))
    return str(path)


def analyzed(path: str) -> dict[str, Any]:
    report = analyze([path], DeriveSettings(), AnalyzeOptions(progress=False))
    (series,) = report["series"]
    return series  # type: ignore[no-any-return]


def followed(path: str, end: float) -> dict[str, Any]:
    """The sidecar's /api/v1/status entry after following the log line by line."""
    settings = DeriveSettings()
    store = Store({"5m": 300.0}, clock=lambda: end, health=health_memory(settings, ReferenceRule(), 300.0))
    LogPipeline(store, path, clock="log", year_reference=end).consume(Path(path).read_text().splitlines(), read_at=START)
    (series,) = snapshot_report(store.snapshot(), settings, {"5m": 300.0})["series"]
    return series  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def fixed(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write(tmp_path_factory.mktemp("fixed"), [Phase(0, BROKEN), Phase(72 * HOUR, HEALTHY, restart=True)], 96)


def test_after_the_fix_the_headline_is_the_fixed_server_and_the_broken_days_are_listed_under_it(fixed):
    series = analyzed(fixed)
    now = series["current_period"]
    assert now["began_by"] == "restart" and now["start"] == pytest.approx(START + 72 * HOUR, abs=120)
    assert now["mean_acceptance_length"] == pytest.approx(2.62, abs=0.05) and now["position_acceptance"][0] == pytest.approx(0.72, abs=0.02)
    assert now["draft_acceptance_ratio"] == pytest.approx(1.62 / 15, abs=0.005)  # 10.8 %, not 3.7 % pooled with the broken days
    assert series["health"] in ("ok", "wasteful") and now["health"] == series["health"]
    if series["health"] == "wasteful":  # the reason and the recommendation are one computation
        drafting = re.search(r"drafting (\d+) instead of 15", series["reason"])
        assert drafting and int(drafting.group(1)) == now["recommended_speculative_tokens"]
    assert now["recommendation_from"] == "current_period" and now["advice"] is None
    (broken,) = series["earlier_periods"]
    assert (broken["health"], broken["began_by"], broken["num_speculative_tokens"]) == ("broken", "first_traffic", 15)
    assert broken["position0_acceptance"] == pytest.approx(0.11, abs=0.01) and broken["mean_acceptance_length"] < 1.2
    assert broken["end"] <= now["start"] and broken["drafts"] + now["drafts"] == series["drafts"]  # nothing lost, nothing twice
    assert series["window"] == "lifetime" and series["mean_acceptance_length"] < 1.6  # lifetime figures stay, labelled so


def test_the_table_and_the_csv_lead_with_now(fixed):
    report = analyze([fixed], DeriveSettings(), AnalyzeOptions(progress=False))
    table = render_table(report)
    now, earlier, lifetime = table.index("NOW — since 2026-11-21"), table.index("earlier periods"), table.index("lifetime (everything read")
    assert now < earlier < lifetime
    assert re.search(r"NOW — since .*\(restart, 24\.0 h\):\n.*\n    mean acceptance length L = 2\.6", table)
    assert re.search(r"broken +began by first traffic .* position 0 0\.11", table)
    (row, *_) = csv.DictReader(io.StringIO(render_csv(report)))
    current = report["series"][0]["current_period"]
    assert float(row["mean_acceptance_length"]) == current["mean_acceptance_length"] and row["period_began_by"] == "restart"
    assert float(row["lifetime_mean_acceptance_length"]) == report["series"][0]["mean_acceptance_length"]
    assert float(row["position_acceptance"]) == current["position_acceptance"][0]


@pytest.mark.slow  # four days of log line by line
def test_the_sidecar_following_the_log_says_what_analyze_says_of_now(fixed):
    batch, live = analyzed(fixed), followed(fixed, START + 96 * HOUR)
    assert live["current_period"] == batch["live"]["current_period"]  # analyze keeps what the live verdict said, beside its hindsight
    assert live["earlier_periods"] == batch["live"]["earlier_periods"]
    # and in hindsight the same two periods, each by its own numbers: the restart cut them, the numbers agree
    assert [p["health"] for p in batch["earlier_periods"]] == ["broken"] and batch["current_period"]["health"] in ("ok", "wasteful")
    assert batch["current_period"]["drafts"] == batch["live"]["current_period"]["drafts"]


def test_while_broken_the_advice_is_to_fix_the_drafter_and_no_k_comes_from_the_broken_curve(tmp_path):
    series = analyzed(write(tmp_path, [Phase(0, BROKEN)], 6))
    now = series["current_period"]
    assert series["health"] == "broken" and "check-config" in now["advice"]
    assert now["recommended_speculative_tokens"] is None and now["recommendation_from"] is None  # no healthy reference to take one from
    assert series["recommended_speculative_tokens"] is None  # not the lifetime's either: it is the broken curve
    assert "no healthy reference" in render_table({"series": [series], "sampled": [], "parse_errors": {}, "lines_read": 0, "spec_lines": 0})


def test_while_degraded_the_k_advice_is_the_reference_curve_s(tmp_path):
    healthy_only = analyzed(write(tmp_path, [Phase(0, HEALTHY)], 3, "healthy.log"))
    series = analyzed(write(tmp_path, [Phase(0, HEALTHY), Phase(3 * HOUR, HEALTHY, factor=0.6)], 5))
    now = series["current_period"]
    assert series["health"] == "degraded" and now["began_by"] == "health" and "check-config" in now["advice"]
    assert now["recommendation_from"] == "reference" and series["recommended_speculative_tokens"] == now["recommended_speculative_tokens"]
    assert now["recommended_speculative_tokens"] == healthy_only["current_period"]["recommended_speculative_tokens"]
    assert now["mean_acceptance_length"] == pytest.approx(1.97, abs=0.05)  # the numbers are the drop's own
    (before,) = series["earlier_periods"]
    assert before["health"] == "healthy" and before["mean_acceptance_length"] == pytest.approx(2.62, abs=0.05)


def _minute(key: Any, end: float, accepted: int = 900) -> Any:
    from exporter.records import Interval

    return Interval(key, end, 4000, accepted, 1000, (500, 250, 100, accepted - 850), 4, drafts_range=(1000, 1000), start=end - 60, seconds=60)


@pytest.mark.parametrize(("source", "restart"), [("metrics", "reset"), ("log", "startup"), ("metrics", "startup")])
def test_a_restart_begins_a_period_where_the_source_can_tell(source, restart):
    """A scrape tells a restart by its counters resetting; a log by its startup lines (a scrape's
    config comes with every /version, so for a scrape it says nothing)."""
    from exporter.records import ReadCounts, SeriesKey, SpecConfig

    store = Store({"5m": 300.0}, health=health_memory(DeriveSettings(), ReferenceRule(min_drafts=100), 300.0))
    key = SeriesKey("http://127.0.0.1:8000/metrics" if source == "metrics" else "vllm.log", "m", "0", source)
    for minute in range(1, 11):
        store.record_interval(_minute(key, START + 60 * minute))
    if restart == "reset":
        store.count_read(key.upstream, ReadCounts(restarts=1), kind="metrics")
    else:
        store.record_config(key.upstream, SpecConfig(method="eagle3", num_speculative_tokens=4))
    for minute in range(11, 21):
        store.record_interval(_minute(key, START + 60 * minute))
    (series,) = snapshot_report(store.snapshot(), DeriveSettings())["series"]
    told = (source, restart) != ("metrics", "startup")
    assert series["current_period"]["began_by"] == ("restart" if told else "first_traffic")
    assert series["current_period"]["drafts"] == (10_000 if told else 20_000)
    assert [p["drafts"] for p in series["earlier_periods"]] == ([10_000] if told else [])


def test_metrics_give_no_k_advice_from_a_failing_curve(tmp_path):
    """/metrics' recommended k is advice too: there while the drafter is healthy, absent from every
    window while it is degraded or broken (the status's k, if any, is the reference's)."""
    from exporter import metric_names as names
    from exporter.expose.metrics import MetricsRenderer

    def rendered(phases: list[Phase], hours: float, name: str) -> str:
        path, end, settings = write(tmp_path, phases, hours, name), START + hours * HOUR, DeriveSettings()
        store = Store({"5m": 300.0, "1h": HOUR}, clock=lambda: end, health=health_memory(settings, ReferenceRule(), 300.0))
        LogPipeline(store, path, clock="log", year_reference=end).consume(Path(path).read_text().splitlines(), read_at=START)
        return MetricsRenderer(store, settings).render()

    gauge = names.RECOMMENDED_K.name + "{"
    assert gauge in rendered([Phase(0, HEALTHY)], 3, "healthy.log")
    broken = rendered([Phase(0, BROKEN)], 6, "broken.log")
    assert 'state="broken"' in broken and gauge not in broken
