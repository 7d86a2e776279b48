"""Every versioned fixture (tests/golden/vllm-<X>/<case>/server.log, written from that vLLM's own
format strings by scripts/make_version_fixtures.py) read by `analyze` and by the interval stage,
against its truth.json: D, T, A exactly, A_i exactly where the printed rates fix them (else inside
their range), and null — with a reason — where the log cannot tell.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import GOLDEN

from exporter.config import DeriveSettings
from exporter.intervals.from_log import LogInterpreter
from exporter.records import Interval, RawLine
from exporter.report.analyze import AnalyzeOptions, analyze

CASES = sorted(path.parent for path in GOLDEN.glob("vllm-*/*/truth.json"))


def case_id(directory: Path) -> str:
    return f"{directory.parent.name}/{directory.name}"


def load_truth(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "truth.json").read_text())  # type: ignore[no-any-return]


def expected(truth: dict[str, Any], engine: str) -> dict[str, Any]:
    """What the log can tell: the truth, except where truth.json says the log cannot know it."""
    return truth.get("expected_from_log") or truth["engines"][engine]


def test_every_fixture_folder_is_covered():
    names = {case_id(d) for d in CASES}
    assert len(names) == 13
    assert {d.parent.name for d in CASES} >= {"vllm-0.24.0", "vllm-0.26.0", "vllm-0.28.0", "vllm-0.30.0", "vllm-0.33.0", "vllm-0.34.0"}


@pytest.mark.parametrize("directory", CASES, ids=case_id)
def test_analyze_reads_each_version_exactly(directory: Path):
    truth = load_truth(directory)
    report = analyze([str(directory / "server.log")], DeriveSettings(), AnalyzeOptions(progress=False))
    assert report["parse_errors"] == {}
    series = {s["engine"]: s for s in report["series"]}
    assert set(series) == set(truth["engines"])
    for seen, count in truth.get("seen", {}).items():  # lines near the spec line that are none: seen, no series
        assert report["sources"][0]["formats"][seen] == count
    for engine, s in series.items():
        want = expected(truth, engine)
        assert s["format"] == truth["format"]
        assert (s["draft_tokens"], s["accepted_tokens"]) == (want["draft_tokens"], want["accepted_tokens"])
        assert s["drafts"] == want["drafts"]
        assert s["num_speculative_tokens"] == truth["k"]
        assert s["method"] == truth["method"]
        assert not s["model_name"].endswith(")")  # V0 closed its config text with a `)` after the name
        if want["drafts"] is None:  # null with a reason, never a guess
            assert s["mean_acceptance_length"] is None and s["drafts_bounds"] is None
            assert s["reason_code"] == "drafts_unknown" and "not T/k" in s["reason"]
        else:
            assert s["drafts_bounds"] == [want["drafts"], want["drafts"]]
            emitted = truth["engines"][engine].get("emitted_tokens")
            length = emitted / want["drafts"] if emitted is not None else 1 + want["accepted_tokens"] / want["drafts"]
            assert s["mean_acceptance_length"] == pytest.approx(length, abs=1e-6)
        assert s["draft_acceptance_ratio"] == pytest.approx(want["accepted_tokens"] / want["draft_tokens"], abs=1e-6)
        positions = want["accepted_per_position"]
        if positions is None:  # the format prints none: null, and the verdict claims nothing about positions
            assert s["accepted_per_position"] is None and s["position_acceptance"] is None
            assert s["conditional_acceptance"] is None and "position" not in s["reason_code"]
            assert s["reason_code"] != "all_positions_pay"
        else:
            rates = truth["engines"][engine]["accepted_per_position_from_rates"]
            if rates["exact"]:
                assert s["accepted_per_position"] == positions
            else:  # the printed %.3f rates allow a range: the estimate stays in it and sums to A
                assert all(lo <= a <= hi for a, lo, hi in zip(s["accepted_per_position"], rates["low"], rates["high"], strict=True))
                assert sum(s["accepted_per_position"]) == want["accepted_tokens"]


def intervals_of(directory: Path) -> list[Interval]:
    path = directory / "server.log"
    interpreter = LogInterpreter(str(path))
    out = []
    for text in path.read_text(encoding="utf-8").splitlines():
        outcome = interpreter.feed(RawLine(str(path), text, 0.0))
        assert outcome.problem is None, (text, outcome.problem)
        if outcome.interval is not None:
            out.append(outcome.interval)
    return out


@pytest.mark.parametrize("directory", CASES, ids=case_id)
def test_the_interval_stage_gives_each_interval(directory: Path):
    truth = load_truth(directory)
    intervals = intervals_of(directory)
    for engine, totals in truth["engines"].items():
        mine = [i for i in intervals if i.key.engine == engine]
        if truth.get("cumulative"):  # V0: deltas between cumulative lines; the restart drops one interval
            assert sum(i.emitted_tokens or 0 for i in mine) == totals["emitted_tokens"]
            assert all(i.drafts == i.draft_tokens // truth["k"] and i.accepted_per_position == () for i in mine)
            assert sum(i.accepted_tokens for i in mine) == totals["accepted_tokens"]
            continue
        want = [w for w in totals["intervals"] if w["draft_tokens"] > 0]  # `nan%` lines: nothing drafted, no interval
        assert [(i.draft_tokens, i.accepted_tokens) for i in mine] == [(w["draft_tokens"], w["accepted_tokens"]) for w in want]
        fixed = expected(truth, engine)["drafts"] is not None
        for interval, w in zip(mine, want, strict=True):
            if not fixed:
                assert interval.drafts is None and interval.drafts_range is None
                continue
            assert interval.drafts == w["drafts"] and interval.drafts_range == (w["drafts"], w["drafts"])
            if w["accepted_per_position"] is None:
                assert interval.accepted_per_position == ()
                continue
            # the documented bound with D exact: |Â_i − A_i| ≤ 0.0005·2D + 1
            bound = math.floor(0.001 * w["drafts"]) + 1
            assert all(abs(a - b) <= bound for a, b in zip(interval.accepted_per_position, w["accepted_per_position"], strict=True))
            assert sum(interval.accepted_per_position) == w["accepted_tokens"]


def test_json_records_inside_docker_framing_read_the_same(tmp_path: Path):
    directory = GOLDEN / "vllm-0.33.0" / "json-ngram-k4"
    wrapped = tmp_path / "container.log"
    with wrapped.open("w") as handle:
        for line in (directory / "server.log").read_text().splitlines(keepends=True):
            handle.write(json.dumps({"log": line, "stream": "stdout", "time": "2026-12-01T10:00:00.000000000Z"}) + "\n")
    plain, docker = (analyze([str(path)], DeriveSettings(), AnalyzeOptions(progress=False)) for path in (directory / "server.log", wrapped))
    assert docker["parse_errors"] == {}
    fields = ("drafts", "draft_tokens", "accepted_tokens", "accepted_per_position")
    assert [[s[f] for f in fields] for s in docker["series"]] == [[s[f] for f in fields] for s in plain["series"]]


def test_the_newest_release_reports_its_version_and_the_per_request_flag_changes_nothing():
    directory = GOLDEN / "vllm-0.34.0" / "text-eagle3-k4-mfu-kvfetch"
    report = analyze([str(directory / "server.log")], DeriveSettings(), AnalyzeOptions(progress=False))
    (series,) = report["series"]
    assert series["server_version"] == "0.34.0" and series["method"] == "eagle3"
    # the MFU line after each spec line is an `Engine 000:` line of the same engine, nothing else
    assert series["lines"] == 5 and report["parse_errors"] == {}
