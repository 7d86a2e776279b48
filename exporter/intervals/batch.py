"""The batch path: a block of marker lines → Interval columns, with numpy, no Python per interval.

`analyze` (and `serve --from-start` catching up) hands over blocks of thousands of lines; live
following hands over a few lines at a time and keeps the streaming path (LogInterpreter.feed).
Both give the same Intervals, field by field (tests/test_batch_equivalence.py).

One regex pass over the joined block sorts its lines into three kinds:
  * `Engine NNN:` lines and V1-e `SpecDecoding metrics:` lines with a plain envelope
    (`(Proc pid=N) LEVEL MM-DD HH:MM:SS [file:line] `, no colour) — the bulk of any vLLM log;
  * everything else — startup config, other layouts, plugin records, colour, odd lines — which
    LogInterpreter.feed handles one by one, in order, so the state it keeps (engine per pid, the
    config, V0 baselines) is always current.
A run of the first kind between two others is one segment: its numbers become arrays, the checks
the streaming path makes (rate vs counts, A ≤ T, T = 0) become masks, D and A_i come from
batch_reconstruct, and each series' part of the segment becomes one IntervalColumns.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from exporter.intervals.batch_times import log_times
from exporter.intervals.batch_reconstruct import reconstruct_many
from exporter.intervals.columns import IntervalColumns
from exporter.log_intervals import _RATE_TOLERANCE_PERCENT, DEFAULT_ENGINE, LineOutcome, LogInterpreter
from exporter.parse.vllm_log import PER_POSITION_KEY
from exporter.reconstruct import reconstruct
from exporter.records import RawLine

_NUM = r"(?:[0-9]+(?:\.[0-9]+)?|nan|inf)"
_LINE = re.compile(
    r"^(?:"
    r"(?:\([A-Za-z0-9_]+ pid=([0-9]+)\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +([0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.,][0-9]+)? +"
    r"\[?[A-Za-z0-9_./-]+?:[0-9]+\] "
    r"(?:Engine ([0-9]+): .*|SpecDecoding metrics: "
    rf"Mean acceptance length: ({_NUM}), Accepted throughput: ({_NUM}) tokens/s, "
    rf"Drafted throughput: {_NUM} tokens/s, Accepted: ([0-9]{{1,15}}) tokens, Drafted: ([0-9]{{1,15}}) tokens, "
    rf"{re.escape(PER_POSITION_KEY)}: ({_NUM}(?:, {_NUM})*), Avg Draft acceptance rate: ({_NUM})%)"
    r"|.*)$",
    re.MULTILINE | re.ASCII,
)
VARIANT = "V1-e"


@dataclass
class BlockResult:
    """What a block produced, in the order the store needs it."""

    items: list[LineOutcome | IntervalColumns] = field(default_factory=list)
    spec_lines: int = 0  # counted by the batch segments (outcomes count their own)
    variants: Counter[str] = field(default_factory=Counter)
    problems: Counter[str] = field(default_factory=Counter)


def interpret_block(interpreter: LogInterpreter, texts: list[str], read_at: float) -> BlockResult:
    """Every line of `texts` (in order) through the batch path or, where it cannot, the streaming one."""
    result = BlockResult()
    if not texts:
        return result
    rows = _LINE.findall("\n".join(texts))
    if len(rows) != len(texts):  # a line the join could not keep apart (cannot happen: no \n inside)
        result.items += [interpreter.feed(RawLine(interpreter.upstream, text, read_at)) for text in texts]
        return result
    pid_text, stamp, engine, mean, throughput, accepted, drafted, items, percent = (np.array(column) for column in zip(*rows))
    spec = mean != ""
    fast = (engine != "") | spec
    ks = np.zeros(len(texts), np.int64)
    rates = np.zeros((len(texts), 0))
    if spec.any():
        ks[spec] = np.char.count(items[spec], ",") + 1
        rates = np.full((len(texts), int(ks.max())), np.nan)
        for k in np.unique(ks[spec]).tolist():
            lines = np.flatnonzero(spec & (ks == k))
            rates[lines, :k] = np.array(", ".join(items[lines].tolist()).split(", ")).astype(np.float64).reshape(len(lines), k)
        in_range = ((rates >= 0.0) & (rates <= 1.0)) | (np.arange(rates.shape[1])[None, :] >= ks[:, None])
        finite = np.isfinite(np.where(spec, mean, "0").astype(np.float64))
        fast &= ~spec | (in_range.all(axis=1) & finite)  # others: the streaming path names the error
    pid = np.array([int(value) if value else -1 for value in pid_text.tolist()], np.int64) if len(np.unique(pid_text)) > 1 else \
        np.full(len(texts), int(pid_text[0]) if pid_text[0] else -1, np.int64)
    slow = np.flatnonzero(~fast)
    start = 0
    for stop in [*slow.tolist(), len(texts)]:
        if stop > start:
            part = slice(start, stop)
            _segment(interpreter, result, read_at, pid[part], stamp[part], engine[part], mean[part], throughput[part],
                     accepted[part], drafted[part], ks[part], rates[part], percent[part])
        if stop < len(texts):
            result.items.append(interpreter.feed(RawLine(interpreter.upstream, texts[stop], read_at)))
        start = stop + 1
    return result


def _segment(interpreter: LogInterpreter, result: BlockResult, read_at: float, pid: np.ndarray, stamp: np.ndarray, engine: np.ndarray,
             mean: np.ndarray, throughput: np.ndarray, accepted_text: np.ndarray, drafted_text: np.ndarray, ks: np.ndarray,
             rates: np.ndarray, percent: np.ndarray) -> None:
    """One run of plain Engine / V1-e lines: what LogInterpreter._spec does to each, on arrays."""
    spec = mean != ""
    engines = _engines(interpreter, pid, engine)
    n_spec = int(spec.sum())
    if not n_spec:
        return
    result.spec_lines += n_spec
    stamp, engines, ks, rates = stamp[spec], engines[spec], ks[spec], rates[spec]
    accepted, drafted = accepted_text[spec].astype(np.int64), drafted_text[spec].astype(np.int64)
    mean_length, printed = mean[spec].astype(np.float64), percent[spec].astype(np.float64)
    throughput_value = throughput[spec].astype(np.float64)
    empty = drafted == 0  # a `nan%` line: nothing was drafted
    with np.errstate(divide="ignore", invalid="ignore"):
        disagrees = ~np.isnan(printed) & (np.abs(100.0 * accepted / drafted - printed) > _RATE_TOLERANCE_PERCENT)
    inconsistent = ~empty & ((accepted > drafted) | disagrees)
    _count(result.problems, "inconsistent_counts", inconsistent)
    _count(result.variants, VARIANT, empty)
    used = np.flatnonzero(~empty & ~inconsistent)
    if not len(used):
        return
    n = len(used)
    ok = np.zeros(n, bool)
    drafts, low, high = (np.zeros(n, np.int64) for _ in range(3))
    positions = np.zeros((n, rates.shape[1]), np.int64)
    for k in np.unique(ks[used]).tolist():
        group = np.flatnonzero(ks[used] == k)
        lines = used[group]
        rebuilt = reconstruct_many(accepted[lines], drafted[lines], mean_length[lines], rates[lines, :k])
        ok[group], drafts[group], low[group], high[group] = rebuilt.ok, rebuilt.drafts, rebuilt.low, rebuilt.high
        positions[group, :k] = rebuilt.positions
        for j in np.flatnonzero(rebuilt.hard).tolist():  # wide ranges and long splits: the scalar code
            line, at = lines[j], group[j]
            exact = reconstruct(int(accepted[line]), int(drafted[line]), float(mean_length[line]), tuple(rates[line, :k].tolist()))
            ok[at] = exact is not None
            if exact is not None:
                drafts[at], low[at], high[at] = exact.drafts, exact.drafts_low, exact.drafts_high
                positions[at, :k] = exact.accepted_per_position
    _count(result.problems, "reconstruction_failed", ~ok)
    _count(result.variants, VARIANT, ok)
    kept = used[ok]
    if not len(kept):
        return
    drafts, low, high, positions = drafts[ok], low[ok], high[ok], positions[ok]
    if interpreter.clock == "log":
        ends = log_times(stamp[kept], interpreter.year_reference or read_at, read_at)
    else:
        ends = np.full(len(kept), read_at)
    for name in dict.fromkeys(engines[kept].tolist()):
        mine = np.flatnonzero(engines[kept] == name)
        key = interpreter._series(name)
        rows = kept[mine]
        previous = interpreter._last_end.get(key)
        starts = np.concatenate(([np.nan if previous is None else previous], ends[mine][:-1]))
        result.items.append(IntervalColumns.build(
            key=key, variant=VARIANT, ends=ends[mine], starts=starts, accepted=accepted[rows], draft_tokens=drafted[rows],
            throughput=throughput_value[rows], drafts=drafts[mine], low=low[mine], high=high[mine], ks=ks[rows],
            positions=positions[mine],
        ))
        interpreter._last_end[key] = float(ends[mine][-1])


def _count(counter: Counter[str], name: str, mask: np.ndarray) -> None:
    """Add the lines of `mask` under `name` (no zero entries: the streaming path has none)."""
    n = int(mask.sum())
    if n:
        counter[name] += n


def _engines(interpreter: LogInterpreter, pid: np.ndarray, engine: np.ndarray) -> np.ndarray:
    """Each line's engine: the last `Engine NNN:` line of its pid before it (else what the interpreter knew)."""
    names = np.empty(len(pid), dtype=object)
    marker = engine != ""
    for process in np.unique(pid).tolist():
        key = None if process < 0 else process
        mine = np.flatnonzero(pid == process)
        marks = np.flatnonzero(marker[mine])
        before = interpreter._engine_by_pid.get(key, DEFAULT_ENGINE)
        if not len(marks):
            names[mine] = before
            continue
        values = np.array([before] + [str(int(value)) for value in engine[mine][marks].tolist()], dtype=object)
        # the number of marker lines at or before each line picks its engine (0: the one before the segment)
        names[mine] = values[np.searchsorted(marks, np.arange(len(mine)), side="right")]
        interpreter._engine_by_pid[key] = values[-1]
    return names


def iter_intervals(result: BlockResult) -> Iterator[object]:
    for item in result.items:
        if isinstance(item, IntervalColumns):
            yield from item.intervals()
        elif item.interval is not None:
            yield item.interval
