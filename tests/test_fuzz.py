"""Fuzzing the parsers with hypothesis: random and mutated real lines and payloads.

Never an exception, only counted errors; every value that comes out lies within its physical range.
CI runs a short version; the long run is

    SPECDECODE_FUZZ_EXAMPLES=20000 python -m pytest tests/test_fuzz.py
"""

from __future__ import annotations

import math
import os

from conftest import CAPTURE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_parse_vllm_log import REFERENCE_LINES

from exporter.intervals.clock import LogClock
from exporter.intervals.from_log import LogInterpreter
from exporter.intervals.from_scrape import ScrapeDeltas
from exporter.parse.exposition import ExpositionError, parse_exposition
from exporter.records import RawLine

EXAMPLES = int(os.environ.get("SPECDECODE_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LOG_LINES = [line for line in (CAPTURE / "server.log").read_bytes().decode().split("\n") if "metrics:" in line or "Engine 0" in line or "args" in line][:40]
SEEDS = LOG_LINES + [entry[0] for entry in REFERENCE_LINES]
PAYLOAD = (CAPTURE / "metrics" / "112_final.prom").read_text()
NUMBERS = st.sampled_from(["0", "-1", "nan", "inf", "-inf", "1e308", "99999999999999999999", "0.5", "", "1.2.3", "0x10"])


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    """A real line or payload with a few random edits: cuts, insertions, numbers swapped for odd ones."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        edit = draw(st.sampled_from(["cut", "insert", "number", "duplicate"]))
        at = draw(st.integers(0, len(text)))
        if edit == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 30)) :]
        elif edit == "insert":
            text = text[:at] + draw(st.text(max_size=12)) + text[at:]
        elif edit == "duplicate":
            text = text[:at] + text[at : at + 40] + text[at:]
        else:
            digits = [i for i, ch in enumerate(text) if ch.isdigit()]
            if digits:
                i = digits[draw(st.integers(0, len(digits) - 1))]
                text = text[:i] + draw(NUMBERS) + text[i + 1 :]
    return text


def test_a_negative_printed_throughput_never_makes_a_negative_interval():
    """Found by the long fuzz run: `Accepted throughput: -1.42 tokens/s`."""
    line = next(entry[0] for entry in REFERENCE_LINES if "Accepted throughput: 8.90" in entry[0])
    interval = LogInterpreter("x").feed(RawLine("x", line.replace("8.90", "-1.42"), 0.0)).interval
    assert interval is not None and interval.seconds is None


def check_interval(interval) -> None:  # type: ignore[no-untyped-def]
    assert 0 <= interval.accepted_tokens <= interval.draft_tokens
    if interval.drafts is not None:
        assert 1 <= interval.drafts <= interval.draft_tokens
        low, high = interval.drafts_range
        assert low <= interval.drafts <= high
    assert all(count >= 0 for count in interval.accepted_per_position)
    assert interval.seconds is None or (math.isfinite(interval.seconds) and interval.seconds >= 0)


@FUZZ
@given(st.lists(st.one_of(mutated(SEEDS), st.text(max_size=200)), min_size=1, max_size=20))
def test_log_interpreter_never_raises_and_values_are_physical(lines):
    interpreter = LogInterpreter("fuzz", clock=LogClock("log", year_reference=1796199535.0))
    for text in lines:
        outcome = interpreter.feed(RawLine("fuzz", text, 1796199535.0))
        if outcome.interval is not None:
            check_interval(outcome.interval)
        if outcome.problem is not None:  # a problem is a spec line's, or a line holding one (collapsed records)
            assert outcome.problem.reason and (outcome.spec_line or any(record.spec_line for record in outcome.records))


@FUZZ
@given(mutated([PAYLOAD]))
def test_exposition_parser_only_raises_exposition_error(payload):
    try:
        snapshot = parse_exposition(payload)
    except ExpositionError:
        return
    deltas = ScrapeDeltas("http://fuzz/metrics")
    deltas.update(parse_exposition(PAYLOAD).counters, at=1.0)
    for interval in deltas.update(snapshot.counters, at=2.0):
        check_interval(interval)


@FUZZ
@given(st.lists(st.sampled_from([0.0, 1.0, 5.0, 1e9, math.nan, math.inf, -1.0]), min_size=4, max_size=4), st.integers(0, 1))
def test_counter_values_that_are_nan_inf_or_backwards_never_make_an_interval_lie(values, which):
    from exporter.parse.exposition import CounterSet

    deltas = ScrapeDeltas("http://fuzz/metrics")
    deltas.update({("m", "0"): CounterSet(100.0, 400.0, 200.0, {0: 80.0})}, at=1.0)
    drafts, tokens, accepted, position = values
    for interval in deltas.update({("m", "0"): CounterSet(drafts, tokens, accepted, {0: position})}, at=2.0 + which):
        check_interval(interval)
