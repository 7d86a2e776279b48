"""A target that is a load balancer in front of two vLLM servers (issue 33): each answer is compared
with the last answer of the same server, told apart by `_created` (as real vLLM exports it) or by
`process_start_time_seconds` — never a reset at every switch, never the difference counted.

The two servers are the capture's real /metrics sequence (tests/golden/vllm-0.24.0/draft_model-noisy-k8)
and a second server made from it: other `_created` and start time, ten times the counts.
"""

from __future__ import annotations

import re

import pytest
from conftest import CAPTURE

from exporter.intervals.scrapes import ScrapeInterpreter
from exporter.parse.exposition import parse_exposition
from exporter.state.store import Store

URL = "http://127.0.0.1:8000/metrics"
PAYLOADS = [path.read_text() for path in sorted((CAPTURE / "metrics").glob("*.prom"))]
_SAMPLE = re.compile(r"^(vllm:spec_decode_\S+_total(?:\{[^}]*\})?) (\S+)$", re.MULTILINE)
_CREATED = re.compile(r"^(vllm:spec_decode_\S+_created(?:\{[^}]*\})?) (\S+)$", re.MULTILINE)
_STARTED = re.compile(r"^process_start_time_seconds (\S+)$", re.MULTILINE)


def other_server(payload: str) -> str:
    """The same server's answer as another server would give it: made later, counting ten times more."""
    payload = _SAMPLE.sub(lambda m: f"{m[1]} {float(m[2]) * 10}", payload)
    payload = _CREATED.sub(lambda m: f"{m[1]} {float(m[2]) + 1000.0}", payload)
    return _STARTED.sub(lambda m: f"process_start_time_seconds {float(m[1]) + 1000.0}", payload)


def without_created(payload: str) -> str:
    return _CREATED.sub("", payload)


def drafts(payload: str) -> float:
    value = parse_exposition(payload).counters[("target", "0")].drafts
    assert value is not None
    return value


@pytest.mark.parametrize("told_by", ["_created", "process_start_time_seconds"])
def test_two_servers_behind_one_target_each_count_their_own_growth(told_by):
    first = PAYLOADS if told_by == "_created" else [without_created(payload) for payload in PAYLOADS]
    second = [other_server(payload) for payload in first]
    store, interpreter = Store(), ScrapeInterpreter(Store())
    interpreter.sink = store
    for index, (mine, theirs) in enumerate(zip(first, second, strict=True)):  # the balancer takes turns
        for at, body in ((2 * index, mine), (2 * index + 1, theirs)):
            outcome = interpreter.accept(URL, body, float(at))
            assert outcome.failure is None and not outcome.stop
    grown = drafts(first[-1]) - drafts(first[0]) + drafts(second[-1]) - drafts(second[0])
    (series,) = store.snapshot().series
    assert series.lifetime.drafts == grown  # was: every switch a reset (no data), or B − A counted at each switch
    assert outcome.resets == 1  # the second server's first answer: a new baseline, once


def test_a_restart_behind_the_balancer_is_still_a_restart():
    store, interpreter = Store(), ScrapeInterpreter(Store())
    interpreter.sink = store
    restarted = [other_server(payload) for payload in PAYLOADS[:6]]
    for at, body in enumerate([*PAYLOADS[:6], *restarted]):  # one server, then it restarts (new _created, from zero)
        interpreter.accept(URL, body, float(at))
    (series,) = store.snapshot().series
    assert series.lifetime.drafts == drafts(PAYLOADS[5]) - drafts(PAYLOADS[0]) + drafts(restarted[-1]) - drafts(restarted[0])
    assert interpreter.accept(URL, restarted[-1], 99.0).resets == 1
