"""Logs of the shapes users post from the wild (issue #25), one test per fixture under tests/golden/wild/
(written from each version's format strings by scripts/version_fixtures/wild.py), and the invariants
every report keeps, checked on every fixture and on fixtures damaged the ways logs get damaged."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import GOLDEN
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.config import DeriveSettings
from exporter.report.analyze import AnalyzeOptions, analyze
from exporter.report.formats import render_csv, render_table

WILD = GOLDEN / "wild"


def run(directory: Path, **options: Any) -> dict[str, Any]:
    return analyze([str(directory / "server.log")], DeriveSettings(), AnalyzeOptions(progress=False, **options))


def truth(name: str) -> dict[str, Any]:
    return json.loads((WILD / name / "truth.json").read_text())  # type: ignore[no-any-return]


def only(report: dict[str, Any]) -> dict[str, Any]:
    (series,) = report["series"]
    return series


# --- one test per fixture --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["vllm-0.6.3-v0-two-runs-k5-k10", "vllm-0.6.3-v0-two-runs-k5-k10-no-startup-line"])
def test_two_v0_runs_with_another_k_are_two_runs_each_with_its_own_l_and_reference(name):
    """Issue item 1: one series with L = 0.190 judged against a 'reference L 8.68' (1 + A/D, though V0's L is E/D)."""
    want = truth(name)
    report = run(WILD / name)
    series = only(report)
    runs = series["runs"]
    assert [(r["num_speculative_tokens"], r["drafts"], r["draft_tokens"], r["accepted_tokens"]) for r in runs] == [
        (w["k"], w["drafts"], w["draft_tokens"], w["accepted_tokens"]) for w in want["runs"]]
    assert [r["mean_acceptance_length"] for r in runs] == [pytest.approx(w["mean_acceptance_length"], abs=1e-6) for w in want["runs"]]
    assert all(r["mean_draft_length"] == r["num_speculative_tokens"] for r in runs)  # V0 always drafts k
    # the pooled lifetime L is E/D over both runs, and the references are each run's own E/D
    emitted = sum(w["emitted_tokens"] for w in want["runs"])
    assert series["mean_acceptance_length"] == pytest.approx(emitted / series["drafts"], abs=1e-6)
    assert series["reference"]["mean_acceptance_length"] == pytest.approx(want["runs"][1]["mean_acceptance_length"], abs=1e-6)
    (earlier,) = series["previous_references"]
    assert earlier["num_speculative_tokens"] == 5
    assert earlier["mean_acceptance_length"] == pytest.approx(want["runs"][0]["mean_acceptance_length"], abs=1e-6)
    assert series["health"] == "ok" and series["num_speculative_tokens"] == 10
    assert any("2 runs" in note for note in series["notes"])
    assert not any("drafts average" in note for note in series["notes"])  # pooled 5s and 10s are no shortened drafts
    table = render_table(report)
    assert "run 1 (method draft_model, k = 5)" in table and f"L = {want['runs'][1]['mean_acceptance_length']:.3f}" in table


def test_a_v0_drafter_accepting_nothing_is_broken_without_per_position_counts():
    """Issue item 2: 0 of 8,784 drafted tokens accepted was `ok` on V0 lines and `broken` on V1 ones."""
    series = only(run(WILD / "vllm-0.6.3-v0-zero-accepted-k8"))
    assert series["accepted_tokens"] == 0 and series["drafts"] == truth("vllm-0.6.3-v0-zero-accepted-k8")["runs"][0]["drafts"]
    assert (series["health"], series["reason_code"]) == ("broken", "position0_collapse")
    assert series["position_acceptance"] is None and "at most 0.00" in series["reason"]


def test_one_cumulative_v0_line_is_a_result_and_the_table_says_so():
    """Issue item 3: 'no speculative-decoding lines found' right above 'spec lines 1, parse errors: none'."""
    (want,) = truth("vllm-0.6.3-v0-one-cumulative-line")["runs"]
    report = run(WILD / "vllm-0.6.3-v0-one-cumulative-line")
    series = only(report)
    assert (series["drafts"], series["draft_tokens"], series["accepted_tokens"]) == (want["drafts"], want["draft_tokens"], want["accepted_tokens"])
    assert series["mean_acceptance_length"] == pytest.approx(want["mean_acceptance_length"], abs=1e-6)
    assert "no speculative-decoding lines found" not in render_table(report)


def test_a_line_cut_at_per_pos_is_truncated_and_counts_nothing():
    """Issue item 4: the cut line read as whole (D = 1, mean draft length 5.03 with k = 5, bounds below the possible)."""
    want = truth("vllm-0.33.0-v1e-cut-per-pos")
    report = run(WILD / "vllm-0.33.0-v1e-cut-per-pos")
    series, engine = only(report), want["engines"]["0"]
    assert report["parse_errors"] == want["parse_errors"]
    assert (series["drafts"], series["draft_tokens"], series["accepted_tokens"]) == (engine["drafts"], engine["draft_tokens"], engine["accepted_tokens"])
    low, high = series["drafts_bounds"]  # no method in the log: not pinned to T/k, but never below what T/k allows
    assert -(-engine["draft_tokens"] // 5) <= low <= engine["drafts"] <= high and series["mean_draft_length"] <= 5.0
    assert report["sources"][0]["formats"]["spec-timing"] == want["seen"]["spec-timing"]  # the fork's timing lines: seen
    assert report["spec_lines"] == engine["spec_lines"] + 1  # the cut line was a spec line, refused
    # the acceptance-length histogram from the exact per-position counts, in JSON and in CSV's one cell
    positions = series["accepted_per_position"]
    above = [series["drafts"], *positions]
    exact = [(a - b) / series["drafts"] for a, b in zip(above, positions, strict=False)] + [positions[-1] / series["drafts"]]
    assert series["acceptance_length_histogram"] == [pytest.approx(h, abs=1e-6) for h in exact]
    (row, *_) = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert [float(h) for h in row["acceptance_length_histogram"].split(";")] == [pytest.approx(h, abs=1e-6) for h in exact]


def test_sglang_decode_lines_are_in_the_table_as_sampled_values():
    """Issue item 5: only the JSON had them; the table said 'no speculative-decoding lines found'."""
    want = truth("sglang-decode-batch")["sampled"]
    report = run(WILD / "sglang-decode-batch")
    (sample,) = report["sampled"]  # TP rank 1 repeats rank 0: never a second series
    assert sample["values"] == want and report["series"] == []
    table = render_table(report)
    assert "sampled" in table and f"mean acceptance length {want['mean_acceptance_length']:.3f}" in table
    assert "no speculative-decoding lines found" not in table


def test_the_version_comes_from_the_banner_not_from_an_elided_engine_line():
    """Issue item 6: the version was taken from `Initializing … (...)` as '...'."""
    series = only(run(WILD / "vllm-0.26.1-banner-elided-init"))
    assert series["server_version"] == truth("vllm-0.26.1-banner-elided-init")["version"]
    assert (series["method"], series["num_speculative_tokens"]) == ("eagle3", 3)


@pytest.mark.parametrize("name", ["vllm-0.33.0-message-only", "vllm-0.33.0-log-store-export"])
def test_message_only_lines_are_read(name):
    """Issue item 7: `%(message)s` lines and a log store's export were `unknown_layout`."""
    want = truth(name)
    report = run(WILD / name)
    series, engine = only(report), want["engines"]["0"]
    assert report["parse_errors"] == {}
    assert (series["drafts"], series["draft_tokens"], series["accepted_tokens"]) == (engine["drafts"], engine["draft_tokens"], engine["accepted_tokens"])
    if want["dated"]:  # the export's own stamp, with its year, is the line's time
        assert series["end"] == pytest.approx(time.mktime(time.strptime(want["last_stamp"], "%Y-%m-%d %H:%M:%S")))
        assert series["dates_unknown"] is None
    else:  # no stamp at all: the times are when the lines were read, and the report says so
        assert "no time stamp" in series["dates_unknown"]


def test_records_collapsed_onto_one_line_are_split_and_counted():
    """Issue item 8: two records on one physical line were ignored without a parse error."""
    want = truth("vllm-0.26.0-collapsed-records")
    report = run(WILD / "vllm-0.26.0-collapsed-records")
    series, engine = only(report), want["engines"]["0"]
    assert report["parse_errors"] == want["parse_errors"]
    assert (series["lines"], series["drafts"], series["accepted_tokens"]) == (engine["spec_lines"], engine["drafts"], engine["accepted_tokens"])
    assert run(WILD / "vllm-0.26.0-collapsed-records", batch=False)["series"][0]["drafts"] == engine["drafts"]  # both paths


def test_a_year_less_log_is_dated_by_its_mtime_only_when_that_is_its_last_write(tmp_path):
    """Issue item 9: a July 2024 log read today said 'ok since 2026-07-24'."""
    log = tmp_path / "server.log"
    log.write_bytes((WILD / "vllm-0.33.0-no-year-july" / "server.log").read_bytes())
    written = time.mktime(time.strptime("2024-07-24 10:05:00", "%Y-%m-%d %H:%M:%S"))
    os.utime(log, (written, written))  # the file as the server left it: the year is its mtime's
    series = only(run(tmp_path))
    assert time.localtime(series["end"]).tm_year == 2024 and series["year_known"] and series["dates_unknown"] is None
    os.utime(log, None)  # copied today: no stamp tells the year
    report = run(tmp_path)
    series = only(report)
    assert series["year_known"] is False and "year is not known" in series["dates_unknown"]
    table = render_table(report)
    assert "(year unknown)" in table and "2026-07-24" not in table


# --- invariants on every report ---------------------------------------------------------------------

FIXTURES = sorted(path.parent for path in GOLDEN.glob("**/server.log"))


def check_report(report: dict[str, Any]) -> None:
    """What a report never says, whatever the log: an impossible L, a draft longer than k, a rate
    outside [0, 1] or rising with the position, bounds without their value, a table against its counts."""
    for s in report["series"]:
        length, k, drafts = s["mean_acceptance_length"], s["num_speculative_tokens"], s["drafts"]
        assert length is None or length >= 1.0, s
        if s["mean_draft_length"] is not None and k:
            runs_k = max([k, *(r["num_speculative_tokens"] or 0 for r in s["runs"])])
            assert s["mean_draft_length"] <= runs_k + 1e-9, s
        for name in ("position_acceptance", "conditional_acceptance"):
            assert all(v is None or 0.0 <= v <= 1.0 for v in s[name] or []), (name, s[name])
        rates = s["position_acceptance"] or []
        assert all(a >= b for a, b in itertools.pairwise(rates)), rates
        if s["draft_acceptance_ratio"] is not None:
            assert 0.0 <= s["draft_acceptance_ratio"] <= 1.0
        if s["drafts_bounds"] is not None and drafts is not None:
            assert s["drafts_bounds"][0] <= drafts <= s["drafts_bounds"][1]
        histogram = s["acceptance_length_histogram"]
        if histogram is not None:  # exactly j accepted: shares of all drafts, whose mean is L − 1
            assert all(0.0 <= h <= 1.0 for h in histogram) and sum(histogram) == pytest.approx(1.0, abs=1e-5)
            # each h_j (and L) is printed to 6 decimals: the mean is off by at most Σ j · 5e-7 (1.8e-5 for k = 8)
            rounding = 5e-7 * (sum(range(len(histogram))) + 1)
            assert sum(j * h for j, h in enumerate(histogram)) == pytest.approx(length - 1.0, abs=rounding)
        for r in s["runs"]:
            assert r["mean_acceptance_length"] is None or r["mean_acceptance_length"] >= 1.0
        if s["health"] == "broken" or s["reason_code"] == "drafts_unknown":
            assert length is None or length <= 1.3 or s["reason_code"] == "drafts_unknown"
    table = render_table(report)
    if report["spec_lines"]:
        assert "no speculative-decoding lines found" not in table
    assert f"spec lines {report['spec_lines']}" in table
    for s in report["series"]:
        assert f"({s['format'] or '?'}, {s['lines']} spec lines)" in table
        assert f"accepted {s['accepted_tokens']}" in table
    render_csv(report)


@pytest.mark.parametrize("directory", FIXTURES, ids=lambda d: f"{d.parent.name}/{d.name}")
def test_every_fixture_report_keeps_the_invariants(directory: Path):
    report = run(directory)
    check_report(report)
    written = directory / "truth.json"
    engines = json.loads(written.read_text()).get("engines", {}) if written.exists() else {}
    for s in report["series"]:  # the bounds contain the truth the fixture was written from
        engine = engines.get(s["engine"])
        if engine is not None and engine.get("drafts") is not None and s["drafts_bounds"] is not None:
            assert s["drafts_bounds"][0] <= engine["drafts"] <= s["drafts_bounds"][1]
            positions = engine.get("accepted_per_position_from_rates")
            if positions and s["accepted_per_position"]:
                assert all(lo <= a <= hi for a, lo, hi in zip(s["accepted_per_position"], positions["low"], positions["high"], strict=True))


@st.composite
def damaged(draw: st.DrawFn) -> tuple[Path, list[str]]:
    """A fixture's lines, some cut short, some run together, some stripped to their message."""
    directory = draw(st.sampled_from(FIXTURES))
    lines = (directory / "server.log").read_text(encoding="utf-8").split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line, action = lines[i], draw(st.sampled_from(["keep"] * 6 + ["cut", "join", "bare"]))
        if action == "cut" and line:
            line = line[: draw(st.integers(0, len(line)))]
        elif action == "join" and i + 1 < len(lines):
            i += 1
            line += lines[i]
        elif action == "bare" and "] " in line:
            line = line.split("] ", 1)[1]
        out.append(line)
        i += 1
    return directory, out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(damaged())
def test_damaged_fixtures_keep_the_invariants_and_read_the_same_on_both_paths(tmp_path_factory, case):
    directory, lines = case
    log = tmp_path_factory.mktemp("damaged") / "server.log"
    log.write_text("\n".join(lines), encoding="utf-8")
    os.utime(log, ((directory / "server.log").stat().st_mtime,) * 2)
    report = run(log.parent)
    check_report(report)
    streaming = run(log.parent, batch=False)
    fields = ("drafts", "draft_tokens", "accepted_tokens", "accepted_per_position", "drafts_bounds")
    assert [[s[f] for f in fields] for s in report["series"]] == [[s[f] for f in fields] for s in streaming["series"]]
    assert report["parse_errors"] == streaming["parse_errors"] and report["spec_lines"] == streaming["spec_lines"]
