"""The batch path (exporter/intervals/batch.py) and the streaming path give the same results.

Random logs mix every layout the parser knows — V1-e lines (the batch path's own), V1-a/b/c/d,
V0 cumulative lines with restarts and emitted tokens, plugin records, SGLang lines, startup config
(fixed-length drafters, where D = T/k is pinned, n-gram before and after vLLM 0.32, the V1-runner
fallback), vLLM's JSON records (0.32+), a VLLM_LOGGING_PREFIX before and after the process prefix
(≤ 0.30, ≥ 0.31), `Engine NNN: Iteration(…)` lines, colour, lines without a process prefix — with k 1–16, idle intervals (`nan%`, Drafted 0), near-zero tails,
several pids and engines, stamps across hours and days, and damaged lines. Each log goes through
LogInterpreter.feed one line at a time and through interpret_block in random blocks; the Interval
records of every series, the problems, variants and spec-line counts must be equal, field by
field. Then the same log as a file through `analyze` both ways: equal JSON reports.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from helpers import without_read_times
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import prefix_counts

from exporter.config import DeriveSettings
from exporter.intervals.batch import interpret_block
from exporter.intervals.clock import LogClock, LogZone
from exporter.intervals.from_log import LogInterpreter
from exporter.intervals.outcome import LineOutcome
from exporter.intervals.reconstruct import reconstruct, reconstruct_many
from exporter.plugin.records import encode
from exporter.records import RawLine
from exporter.report.analyze import AnalyzeOptions, analyze

np = pytest.importorskip("numpy")
YEAR_REFERENCE = 1_796_198_400.0  # 2026-12-02


@st.composite
def curves(draw: st.DrawFn) -> tuple[int, list[int]]:
    """(D, A_i): non-increasing counts, often with a near-zero tail."""
    k = draw(st.integers(1, 16))
    drafts = draw(st.integers(1, 5000))
    return drafts, prefix_counts(draw, k, drafts)


def _prefix(draw: st.DrawFn, stamp: str, source: str = "metrics.py:101") -> str:
    pid = draw(st.sampled_from(["(APIServer pid=7) ", "(APIServer pid=7) ", "(APIServer pid=8) ", ""]))
    layout = draw(st.sampled_from(["plain"] * 6 + ["prefix-first", "prefix-after"]))
    if layout == "prefix-first":  # VLLM_LOGGING_PREFIX, vLLM ≥ 0.31: the process prefix follows it
        return f"[pod-a] {pid}INFO {stamp} [{source}] "
    if layout == "prefix-after":  # ≤ 0.30: the stdout wrapper writes the process prefix first
        return f"{pid}[pod-a] INFO {stamp} [{source}] "
    return f"{pid}INFO {stamp} [{source}] "


def _json_record(draw: st.DrawFn, line: str, stamp: str) -> str:
    """The message of a text line as vLLM's JSON formatter (0.32+) writes it."""
    message = line.split("] ", 1)[1] if "] " in line else line
    pid = draw(st.sampled_from([7, 8]))
    return json.dumps({"asctime": f"2026-{stamp},123", "levelname": "INFO", "name": "vllm.v1.metrics.loggers", "processName": "MainProcess",
                       "process": pid, "message": message, "vllm_process_name": "APIServer"})


def _v1e(draw: st.DrawFn, stamp: str) -> str:
    drafts, counts = draw(curves())
    k = len(counts)
    fixed = draw(st.booleans())
    accepted = sum(counts)
    draft_tokens = drafts * k if fixed else draw(st.integers(accepted + drafts - counts[0], drafts * k))
    rates = ", ".join(f"{c / drafts:.3f}" for c in counts)
    mean = f"{1 + accepted / drafts:.2f}"
    percent = f"{100 * accepted / draft_tokens:.1f}"
    throughput = draw(st.sampled_from(["12.50", "0.00", "inf", "3.10"]))
    damage = draw(st.sampled_from([None] * 12 + ["percent", "rate>1", "mean nan", "idle", "a>t", "colour", "cr", "noise"]))
    if damage == "percent":
        percent = "99.9"
    elif damage == "rate>1":
        rates = "1.500" + rates[5:]
    elif damage == "mean nan":
        mean = "nan"
    elif damage == "idle":
        accepted, draft_tokens, mean, percent, rates = 0, 0, "0.00", "nan", ", ".join(["0.000"] * k)
    elif damage == "a>t":
        accepted = draft_tokens + 1
    line = (f"{_prefix(draw, stamp)}SpecDecoding metrics: Mean acceptance length: {mean}, Accepted throughput: {throughput} tokens/s, "
            f"Drafted throughput: 40.00 tokens/s, Accepted: {accepted} tokens, Drafted: {draft_tokens} tokens, "
            f"Per-position acceptance rate: {rates}, Avg Draft acceptance rate: {percent}%")
    if damage == "colour":
        line = "\x1b[32m" + line.replace(" INFO ", " INFO\x1b[0m ", 1)
    elif damage == "cr":
        line += "\r"
    elif damage == "noise":
        line = line.replace("Accepted: ", "Accepted: 1", 1)
    return line


def _other(draw: st.DrawFn, stamp: str) -> str:
    kind = draw(st.sampled_from(["v1b", "v1c", "v1a", "v0", "v0-drop", "config", "fixed", "ngram", "runner", "plugin", "sglang", "aggregated",
                                 "access", "unknown", "iteration"]))
    prefix = _prefix(draw, stamp)
    accepted, drafted = draw(st.integers(0, 500)), draw(st.integers(500, 2000))
    if kind == "v1b":
        return f"{prefix}SpecDecoding metrics: Draft acceptance rate: {100 * accepted / drafted:.1f}%, Accepted: {accepted} tokens, Drafted: {drafted} tokens"
    if kind == "v1c":
        return (f"{prefix}SpecDecoding metrics: Draft acceptance rate: {100 * accepted / drafted:.1f}%, Mean acceptance length: 1.50, "
                f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance rate: 0.300, 0.200")
    if kind == "v1a":
        return (f"{prefix}Speculative metrics: Draft acceptance rate: 0.500, Number of accepted tokens: {accepted}, "
                f"Number of draft tokens: {drafted}, ")
    if kind in ("v0", "v0-drop"):
        scale = draw(st.integers(1, 50)) if kind == "v0" else 1
        return (f"{prefix}Speculative metrics: Draft acceptance rate: 0.500, System efficiency: 0.500, Number of speculative tokens: 4, "
                f"Number of accepted tokens: {accepted * scale}, Number of draft tokens: {drafted * 4 * scale}, Number of emitted tokens: {drafted * scale}.")
    if kind == "config":
        name = draw(st.sampled_from(["m-a", "m-b"]))
        return f"{_prefix(draw, stamp, 'api_utils.py:273')}non-default args: {{'model': 'Qwen/Qwen3-8B', 'served_model_name': ['{name}']}}"
    if kind == "fixed":  # a fixed-length drafter: D = T/k wherever reconstruct allows it
        method, k = draw(st.sampled_from(["eagle", "draft_model", "deepseek_mtp"])), draw(st.integers(1, 16))
        return f"{_prefix(draw, stamp, 'api_utils.py:273')}non-default args: {{'speculative_config': {{'method': '{method}', 'num_speculative_tokens': {k}}}}}"
    if kind == "ngram":  # n-gram is fixed-length from vLLM 0.32 only
        version = draw(st.sampled_from(["0.31.0", "0.33.0"]))
        return (f"{_prefix(draw, stamp, 'core.py:93')}Initializing a V1 LLM engine (v{version}) with config: model='Qwen/Qwen3-8B', "
                f"speculative_config=SpeculativeConfig(method='ngram', model=None, num_spec_tokens=4), served_model_name=Qwen/Qwen3-8B, enable_prefix_caching=True")
    if kind == "runner":  # ≥ 0.32 fell back to the V1 runner: n-gram drafts vary again
        return f"{_prefix(draw, stamp, 'vllm.py:612')}Model Runner V2 does not yet support this config; falling back to the V1 model runner"
    if kind == "iteration":  # --enable-logging-iteration-details: neither a marker nor a spec line
        return f"{_prefix(draw, stamp, 'loggers.py:183')}Engine {draw(st.integers(0, 2)):03d}: Iteration(12): 3 context requests, 120 generation tokens"
    if kind == "plugin":
        return encode({"kind": "interval", "engine": 0, "model_name": "p", "start": 1.0, "end": 2.0, "drafts": 2, "draft_tokens": 8,
                       "accepted_tokens": 3, "accepted_per_position": [2, 1, 0, 0], "draft_tokens_per_position": [2, 2, 2, 2]}).decode().strip()
    if kind == "sglang":
        return "[2026-04-05 20:02:51 DP1 TP0] Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, accept len: 3.21, accept rate: 0.55, cuda graph: True, gen throughput (token/s): 1635.11, #queue-req: 0, "
    if kind == "aggregated":
        return f"{_prefix(draw, stamp, 'loggers.py:259')}2 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s"
    if kind == "access":
        return '(APIServer pid=7) INFO:     127.0.0.1:40000 - "POST /v1/completions HTTP/1.1" 200 OK'
    return f"{prefix}SpecDecoding metrics: something new: 3"


@st.composite
def logs(draw: st.DrawFn) -> list[str]:
    lines = []
    at = draw(st.integers(0, 3000))  # seconds after 12-31 22:00, so hours and the new year pass
    for _ in range(draw(st.integers(1, 40))):
        at += draw(st.sampled_from([0, 1, 10, 599, 3600]))
        day, rest = divmod(at, 86_400)
        hours, rest = divmod(22 * 3600 + rest, 3600)
        stamp = f"{'12-31' if day == 0 and hours < 24 else '01-01'} {hours % 24:02d}:{rest // 60:02d}:{rest % 60:02d}"
        roll = draw(st.integers(0, 9))
        if roll < 3:
            load = (f", Avg generation throughput: {draw(st.integers(0, 90000)) / 10:.1f} tokens/s, Running: {draw(st.integers(0, 300))} reqs, "
                    f"Waiting: {draw(st.integers(0, 9))} reqs, GPU KV cache usage: 1.0%") if draw(st.booleans()) else ""
            lines.append(f"{_prefix(draw, stamp, 'loggers.py:259')}Engine {draw(st.integers(0, 2)):03d}: Avg prompt throughput: 1.0 tokens/s{load}")
        line = _v1e(draw, stamp) if roll < 8 else _other(draw, stamp)
        lines.append(_json_record(draw, line, stamp) if draw(st.integers(0, 9)) == 0 else line)
    return lines


# serve in a known zone, reading at 01-01 00:30 there: the older lines are a backlog (their own
# time), the last half hour's lines within a minute and the later ones take their arrival
ZONED_READ_AT = datetime(2027, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=9))).timestamp()


def _clock(clock: str) -> tuple[LogClock, float]:
    if clock == "live-zoned":
        return LogClock("live", LogZone(timezone(timedelta(hours=9)), "flag")), ZONED_READ_AT
    return LogClock(clock, year_reference=YEAR_REFERENCE), 100.0  # type: ignore[arg-type]


def _streaming(lines: list[str], clock: str) -> tuple[dict, Counter, int]:
    log_clock, read_at = _clock(clock)
    interpreter = LogInterpreter("log", clock=log_clock)
    return _tally([interpreter.feed(RawLine("log", line, read_at)) for line in lines])


def _batched(lines: list[str], cuts: list[int], clock: str) -> tuple[dict, Counter, int]:
    log_clock, read_at = _clock(clock)
    interpreter = LogInterpreter("log", clock=log_clock)
    items, counts, spec = [], Counter(), 0
    bounds = [0, *sorted(cut % (len(lines) + 1) for cut in cuts), len(lines)]
    for start, stop in itertools.pairwise(bounds):
        result = interpret_block(interpreter, lines[start:stop], read_at)
        items += result.items  # in order: a segment's columns come before the line after it
        counts.update({f"problem:{k}": v for k, v in result.problems.items()})
        counts.update({f"variant:{k}": v for k, v in result.variants.items()})
        spec += result.spec_lines
    by_series, more, more_spec = _tally(items)
    return by_series, counts + more, spec + more_spec


def _tally(items: list) -> tuple[dict, Counter, int]:  # type: ignore[type-arg]
    by_series: dict = defaultdict(list)
    counts: Counter[str] = Counter()
    spec = 0
    for item in items:
        if not isinstance(item, LineOutcome):
            by_series[item.key] += item.intervals()
            continue
        spec += item.spec_line
        if item.interval is not None:
            by_series[item.interval.key].append(item.interval)
        if item.problem is not None:
            counts[f"problem:{item.problem.reason}"] += 1
        if item.variant is not None:
            counts[f"variant:{item.variant}"] += 1
    return by_series, counts, spec


def _same_intervals(lines: list[str], cuts: list[int], clock: str) -> None:
    streamed, streamed_counts, streamed_spec = _streaming(lines, clock)
    batched, batched_counts, batched_spec = _batched(lines, cuts, clock)
    assert batched_spec == streamed_spec
    assert batched_counts == streamed_counts
    assert set(batched) == set(streamed)
    for key in streamed:
        assert batched[key] == streamed[key], key  # Interval records, field by field, in order


# "log": analyze's (times from the lines); "live": serve's before it knows the zone (arrival);
# "live-zoned": serve's in a known zone (a backlog on its own time joined to the live edge)
_CLOCKS = st.sampled_from(["log", "live", "live-zoned"])
_CUTS = st.lists(st.integers(0, 10_000), max_size=4)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(logs(), _CUTS, _CLOCKS)
def test_batch_and_streaming_give_the_same_intervals(lines, cuts, clock):
    """A few random logs in the pure tier; the slow tier runs many more."""
    _same_intervals(lines, cuts, clock)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(logs(), _CUTS, _CLOCKS)
def test_batch_and_streaming_give_the_same_intervals_over_many_logs(lines, cuts, clock):
    _same_intervals(lines, cuts, clock)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(logs())
def test_analyze_reports_are_equal_both_ways(tmp_path: Path, lines: list[str]):
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines) + "\n")

    def report(batch: bool) -> dict:  # type: ignore[type-arg]
        document = without_read_times(analyze([str(path)], DeriveSettings(), AnalyzeOptions(progress=False, batch=batch)))
        return json.loads(json.dumps(document))

    assert report(True) == report(False)


@settings(max_examples=40, deadline=None)
@given(curves(), st.booleans(), st.data())
def test_reconstruct_many_equals_reconstruct_line_by_line(curve, fixed, data):
    _same_reconstruction(curve, fixed, data)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(curves(), st.booleans(), st.data())
def test_reconstruct_many_equals_reconstruct_over_many_lines(curve, fixed, data):
    _same_reconstruction(curve, fixed, data)


def _same_reconstruction(curve, fixed, data):  # type: ignore[no-untyped-def]
    drafts, counts = curve
    k, accepted = len(counts), sum(counts)
    draft_tokens = drafts * k if fixed else data.draw(st.integers(max(1, accepted + drafts - counts[0]), drafts * k))
    mean = float(f"{1 + accepted / drafts:.2f}")
    rates = tuple(float(f"{c / drafts:.3f}") for c in counts)
    rebuilt = reconstruct_many(np.array([accepted]), np.array([draft_tokens]), np.array([mean]), np.array([rates]))
    exact = reconstruct(accepted, draft_tokens, mean, rates)
    if rebuilt.hard[0]:
        return  # left to the scalar code by design
    assert bool(rebuilt.ok[0]) == (exact is not None)
    if exact is not None:
        got = (int(rebuilt.drafts[0]), int(rebuilt.low[0]), int(rebuilt.high[0]), tuple(rebuilt.positions[0].tolist()))
        assert got == (exact.drafts, exact.drafts_low, exact.drafts_high, exact.accepted_per_position)


def test_the_fast_path_takes_the_common_lines_and_pins_d_as_from_log_does():
    """A fixed-length drafter's V1-e lines (with iteration lines between) become columns, and
    where reconstruct chose T/k the range closes on it, as from_log.py does; a JSON record and a
    prefixed line in the same block go the streaming way and agree."""
    config = "(APIServer pid=7) INFO 12-01 10:00:00 [api_utils.py:273] non-default args: {'speculative_config': {'method': 'eagle', 'num_speculative_tokens': 4}}"
    spec = ("(APIServer pid=7) INFO 12-01 10:00:{s:02d} [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.50, "
            "Accepted throughput: 12.50 tokens/s, Drafted throughput: 40.00 tokens/s, Accepted: 7503 tokens, Drafted: 20000 tokens, "
            "Per-position acceptance rate: 0.700, 0.400, 0.250, 0.150, Avg Draft acceptance rate: 37.5%")  # D 5000–5007 fit
    iteration = "(APIServer pid=7) INFO 12-01 10:00:{s:02d} [loggers.py:183] Engine 001: Iteration(3): 2 context requests"
    lines = [config, *[line.format(s=s) for s in range(10) for line in (iteration, spec)]]
    lines.append(_json_record_of(spec.format(s=11)))
    lines.append("[pod-a] " + spec.format(s=12))
    unpinned, _, _ = _batched(lines[1:], [], "log")  # no config: the method is unknown, D keeps its range
    assert {interval.drafts_range for intervals in unpinned.values() for interval in intervals} == {(5000, 5007)}
    streamed, _, _ = _streaming(lines, "log")
    interpreter = LogInterpreter("log", clock=LogClock("log", year_reference=YEAR_REFERENCE))
    result = interpret_block(interpreter, lines, 100.0)
    columns = [item for item in result.items if not isinstance(item, LineOutcome)]
    assert sum(len(item) for item in columns) == 10  # the plain lines, iteration lines between them
    batched, _, _ = _tally(result.items)
    assert batched == streamed
    (key,) = streamed
    assert key.engine == "0"  # iteration lines do not move the engine
    assert len(streamed[key]) == 12
    assert all(interval.drafts == 5000 and interval.drafts_range == (5000, 5000) for interval in streamed[key])


def _json_record_of(line: str) -> str:
    return json.dumps({"asctime": "2026-12-01 10:00:11,123", "levelname": "INFO", "name": "vllm.v1.metrics.loggers", "processName": "MainProcess",
                       "process": 7, "message": line.split("] ", 1)[1], "vllm_process_name": "APIServer"})
