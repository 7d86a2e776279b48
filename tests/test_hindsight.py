"""analyze reports with hindsight (issue #32, items 1 and 3): on the real seed-incident capture
(tests/golden/vllm-0.26.0/seed-incident: healthy, restarted into a stale drafter, restarted fixed)
three periods, each labelled by its own numbers — healthy / broken / recovering —, the span ending
where the numbers recovered, in the table, the JSON, the CSV and the plot; the live verdict's
semantics unchanged in serve (and kept, under `live`, in analyze's JSON); one derivation at the top
of the JSON."""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from datetime import UTC
from typing import Any

import pytest
from conftest import GOLDEN

from exporter.config import DeriveSettings
from exporter.intervals.clock import LogZone
from exporter.judge.memory import health_memory
from exporter.judge.status import snapshot_report
from exporter.report.analyze import AnalyzeOptions, analyze
from exporter.report.formats import render_csv, render_table
from exporter.simulate.longlog import LongLog, Phase
from exporter.simulate.scenarios import SCENARIOS
from exporter.state.reference import ReferenceRule
from exporter.state.store import Store

RUN = GOLDEN / "vllm-0.26.0" / "seed-incident"
# each life's drained totals (README.md; the log's equal them for the first two lives, the third misses its last 9 s)
HEALTHY_DRAFTS, STALE_DRAFTS = 51818, 205492
UTC_ZONE = LogZone(UTC, "flag")  # the run's hosts ran in UTC


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return analyze([str(RUN / "server.log")], DeriveSettings(), AnalyzeOptions(progress=False, zone=UTC_ZONE))


def test_the_incident_is_three_periods_each_by_its_own_numbers(report):
    """Before: the stale life's first minute listed as `healthy` (L 1.003, position 0 0.000), the span
    'broken → the log's end' while the last five minutes ran at the reference, judged `degraded`."""
    (series,) = report["series"]
    now, earlier = series["current_period"], series["earlier_periods"]
    broken, healthy = earlier
    assert (healthy["health"], healthy["began_by"], healthy["drafts"]) == ("healthy", "first_traffic", HEALTHY_DRAFTS)
    assert healthy["mean_acceptance_length"] == pytest.approx(4.102, abs=0.001) and healthy["position0_acceptance"] == pytest.approx(0.610, abs=0.001)
    assert (broken["health"], broken["began_by"], broken["drafts"]) == ("broken", "restart", STALE_DRAFTS)  # the whole stale life, no more
    assert broken["mean_acceptance_length"] == pytest.approx(1.003, abs=0.001) and broken["position0_acceptance"] < 0.01
    assert (now["health"], now["began_by"]) == ("recovering", "restart")  # 5 min at the reference: shorter than the 15 min rule
    assert now["mean_acceptance_length"] == pytest.approx(4.10, abs=0.01) and now["advice"] is None
    assert (series["health"], series["reason_code"]) == ("recovering", "recovering") and "15 min" in series["reason"]
    (span,) = series["unhealthy_spans"]  # ends where the numbers recovered, not at the log's end
    assert (span["worst"], span["ongoing"], span["start"], span["end"]) == ("broken", False, broken["start"], now["start"])
    assert series["health_since"] == now["start"] and broken["end"] <= now["start"]
    # the live verdict, what serve said at the log's end, is kept beside it: still degraded, the span open
    live = series["live"]
    assert live["health"] == "degraded" and live["reason_code"] == "recovering" and live["unhealthy_spans"][0]["ongoing"]


def test_with_a_short_recovery_rule_the_fixed_life_is_ok():
    rule = ReferenceRule.of(7 * 86400.0, 86400.0, 1000, recovery=60.0)
    (series,) = analyze([str(RUN / "server.log")], DeriveSettings(), AnalyzeOptions(progress=False, zone=UTC_ZONE, reference=rule))["series"]
    assert series["health"] == "ok" and series["current_period"]["health"] == "ok"
    assert [p["health"] for p in series["earlier_periods"]] == ["broken", "healthy"]


def test_the_table_the_csv_and_the_plot_say_the_same(report, tmp_path, monkeypatch):
    table = render_table(report)
    assert "verdict: recovering" in table and "recovering since 2026-12-03 13:00 UTC" in table
    assert "broken: 2026-12-03 12:52 UTC → 2026-12-03 13:00 UTC" in table  # not "→ the log's end"
    assert "L = 1.003" in table and "L = 4.102" in table and "the live verdict at the log's end" in table
    assert table.index("healthy   began by first traffic") > table.index("broken    began by restart")  # newest first
    (row, *_) = csv.DictReader(io.StringIO(render_csv(report)))
    (series,) = report["series"]
    assert (row["health"], row["live_health"], row["period_began_by"]) == ("recovering", "degraded", "restart")
    assert float(row["drafts"]) == series["current_period"]["drafts"]
    import matplotlib.pyplot as plt

    from exporter.report.plot import plot_report

    drawn: list[Any] = []
    monkeypatch.setattr(plt, "close", drawn.append)  # keep the figure to look at it
    assert plot_report(report, str(tmp_path / "curve.png")) == 1
    curve, strip = drawn[0].axes
    assert "recovering" in curve.get_title() and "L = 4.10" in curve.get_title()
    (shaded,) = strip.patches  # the broken span, ending at the fixed life's start
    hours = (series["current_period"]["start"] - series["start"]) / 3600
    assert shaded.get_x() + shaded.get_width() == pytest.approx(hours, abs=1e-6)
    assert curve.patches[0].get_height() == pytest.approx(series["current_period"]["position_acceptance"][0])  # the curve of now


def test_serve_reports_as_before():
    """serve keeps no stretches: its windows' verdicts are the live verdict's, and no `live` key."""
    settings = DeriveSettings()
    store = Store({"5m": 300.0}, health=health_memory(settings, ReferenceRule(), 300.0), clock=lambda: 1796303043.0 + 1)
    from exporter.intervals.pipeline import LogPipeline

    LogPipeline(store, "server.log", clock="log", zone=UTC_ZONE, year_reference=1796303043.0).consume(
        (RUN / "server.log").read_text().splitlines(), read_at=0.0)
    (entry,) = snapshot_report(store.snapshot(), settings, {"5m": 300.0})["series"]
    assert "live" not in entry and "lifetime" not in entry
    assert entry["health"] == "degraded" and entry["reason_code"] == "recovering"  # the recovery has not held for 15 min
    assert entry["unhealthy_spans"][0]["ongoing"]


def test_the_top_level_advice_is_the_verdicts_and_lifetime_figures_say_so(tmp_path):
    """24 h broken then 6 h fixed: the top level said health, reason and since of now, but the k of the
    pooled lifetime, while current_period said another."""
    healthy = replace(SCENARIOS["drop-off"], rates=(0.85, 0.72, 0.61, 0.52, 0.44, 0.37, 0.31, 0.26), drop_after=None)  # EAGLE-3, k = 8
    broken = replace(healthy, rates=(0.11, 0.01) + (0.0,) * 6)  # the same deployment, a stale drafter config
    path = tmp_path / "vllm.log"
    LongLog([Phase(0, broken), Phase(24 * 3600.0, healthy, restart=True)], hours=30, start_time=1795000000.0, log_interval=60.0).write(str(path))
    (series,) = analyze([str(path)], DeriveSettings(), AnalyzeOptions(progress=False))["series"]
    now = series["current_period"]
    assert series["health"] == now["health"] and series["health"] in ("ok", "wasteful")
    assert series["recommended_speculative_tokens"] == now["recommended_speculative_tokens"]
    assert series["recommendation_from"] == now["recommendation_from"] == "current_period" and series["advice"] == now["advice"]
    lifetime = series["lifetime"]
    assert lifetime["drafts"] == series["drafts"] and lifetime["mean_acceptance_length"] == series["mean_acceptance_length"]
    assert series["lifetime_recommended_speculative_tokens"] == lifetime["recommended_speculative_tokens"]
    assert lifetime["recommended_speculative_tokens"] != now["recommended_speculative_tokens"]  # the pool of both lives says another k
