"""Every capture under tests/golden/ parses completely and agrees with its own /metrics counters.

A capture directory holds `server.log` and `metrics/NNN.prom` snapshots of the same run; the
uvicorn access line `GET /metrics` in the log marks where each snapshot was taken. Adding a
capture directory adds its tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import DeriveSettings
from exporter.intervals.from_log import LogInterpreter
from exporter.records import Interval, RawLine
from exporter.report.analyze import AnalyzeOptions, analyze

GOLDEN = Path(__file__).parent / "golden"
# Real runs of one server life, drained once (one `*_final.prom` snapshot); the fixtures written from
# a version's format strings carry a truth.json instead and are checked against it elsewhere, and
# the seed incident (three lives in one log) by tests/test_golden_incident.py.
CAPTURES = sorted(p.parent for p in GOLDEN.glob("vllm-*/*/server.log") if len(list((p.parent / "metrics").glob("*_final.prom"))) == 1)
# The plugin captures had the sidecar scraping /metrics every 2 s beside the recorder, so their
# `GET /metrics` access lines are not one per snapshot.
SCRAPED_BY_THE_RECORDER_ONLY = [c for c in CAPTURES if not (c / "plugin").exists()]
# draft_model drafts are always k long; n-gram drafts are often shorter (then D has a range)
FIXED_LENGTH_DRAFTS = [c for c in CAPTURES if '\\"draft_model\\"' in (c / "command.txt").read_text()]
SCRAPE_MARK = '"GET /metrics HTTP/1.1"'
SPEC_MARKS = ("SpecDecoding metrics:", "Speculative metrics:")


def counters(path: Path) -> dict[str, float]:
    """vLLM's spec-decode counters from one snapshot; per-position ones keyed `per_pos_<i>`."""
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(path.read_text()):
        for sample in family.samples:
            if not sample.name.startswith("vllm:spec_decode_") or not sample.name.endswith("_total"):
                continue
            name = sample.name.removeprefix("vllm:spec_decode_").removesuffix("_total")
            if "position" in sample.labels:
                name = f"{name}_{sample.labels['position']}"
            values[name] = values.get(name, 0.0) + sample.value
    return values


def intervals_between_scrapes(capture: Path) -> list[list[Interval]]:
    """Intervals of the spec lines printed before scrape 0, between scrapes 0 and 1, …, and after the last."""
    interpreter = LogInterpreter(str(capture))
    groups: list[list[Interval]] = [[]]
    for text in (capture / "server.log").read_bytes().decode("utf-8").split("\n"):
        if SCRAPE_MARK in text:
            groups.append([])
            continue
        outcome = interpreter.feed(RawLine(str(capture), text, 0.0))
        assert outcome.problem is None, outcome.problem
        if outcome.interval is not None:
            groups[-1].append(outcome.interval)
    return groups


def _sum(intervals: list[Interval], field: str) -> int:
    return sum(getattr(i, field) for i in intervals)


@pytest.fixture(params=CAPTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def capture(request: pytest.FixtureRequest) -> Path:
    return request.param


def test_there_is_at_least_one_capture():
    assert CAPTURES, "tests/golden/vllm-*/*/server.log missing"


def test_capture_parses_completely(capture):
    report = analyze([str(capture / "server.log")], DeriveSettings(), AnalyzeOptions(progress=False))
    text = (capture / "server.log").read_bytes().decode("utf-8")  # no newline translation
    expected_spec = sum(any(mark in line for mark in SPEC_MARKS) for line in text.split("\n"))
    assert report["parse_errors"] == {}
    assert report["spec_lines"] == expected_spec > 0
    assert report["lines_read"] == text.count("\n")  # newline-terminated lines, as `wc -l` counts
    assert sum(s["lines"] for s in report["series"]) == expected_spec


def test_log_totals_equal_the_final_counters(capture):
    final = counters(next((capture / "metrics").glob("*_final.prom")))
    groups = intervals_between_scrapes(capture)
    before_final = [i for group in groups[:-1] for i in group]
    assert _sum(before_final, "accepted_tokens") == final["num_accepted_tokens"]
    assert _sum(before_final, "draft_tokens") == final["num_draft_tokens"]
    # D and A_i are reconstructed: within the documented bound (exact where the range is one integer)
    low = sum(i.drafts_range[0] for i in before_final)
    high = sum(i.drafts_range[1] for i in before_final)
    assert low <= final["num_drafts"] <= high
    estimate = _sum(before_final, "drafts")
    assert abs(estimate - final["num_drafts"]) <= high - low
    k = max(len(i.accepted_per_position) for i in before_final)
    for position in range(k):
        rebuilt = sum(i.accepted_per_position[position] for i in before_final if position < len(i.accepted_per_position))
        truth = final[f"num_accepted_tokens_per_pos_{position}"]
        bound = 0.001 * high + (high - low) + len(before_final)
        assert abs(rebuilt - truth) <= bound


@pytest.mark.parametrize("capture", SCRAPED_BY_THE_RECORDER_ONLY, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_snapshot_lies_between_the_lines_before_and_after_its_scrape(capture):
    """Counters at a scrape include every printed line before it and at most the next line's worth."""
    snapshots = sorted((capture / "metrics").glob("*.prom"))
    groups = intervals_between_scrapes(capture)
    assert len(groups) == len(snapshots) + 1, "one GET /metrics access line per snapshot"
    printed: list[Interval] = []
    for index, snapshot in enumerate(snapshots):
        printed += groups[index]
        following = groups[index + 1][:1]
        truth = counters(snapshot)
        for field, name in (("accepted_tokens", "num_accepted_tokens"), ("draft_tokens", "num_draft_tokens"), ("drafts", "num_drafts")):
            assert _sum(printed, field) <= truth[name] <= _sum(printed + following, field), (snapshot.name, field)


@pytest.mark.parametrize("capture", FIXED_LENGTH_DRAFTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_capture_lines_reconstruct_exactly(capture):
    """Fixed-length drafts (draft_model, k = 8): every line's D is the only integer that fits."""
    intervals = [i for group in intervals_between_scrapes(capture) for i in group]
    assert all(i.drafts_range[0] == i.drafts_range[1] == i.drafts for i in intervals)
