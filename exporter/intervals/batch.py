"""The batch path: a block of marker lines → Interval columns, with numpy, no Python per interval.

`analyze` (and `serve --from-start` catching up) hands over blocks of thousands of lines; live
following hands over a few lines at a time and keeps the streaming path (LogInterpreter.feed).
Both give the same Intervals, field by field (tests/test_batch_equivalence.py).

parse/vllm_block.py's scanner sorts a block's lines into the plain `Engine NNN:` and V1-e lines —
the bulk of any vLLM log — and everything else, which LogInterpreter.feed handles one by one, in
order, so the state it keeps (engine per pid, the config, V0 baselines) is always current.
A run of the first kind between two others is one segment: its numbers are arrays, the checks
the streaming path makes (rate vs counts, A ≤ T, T = 0) become masks, D and A_i come from
reconstruct.reconstruct_many, and each series' part of the segment becomes one IntervalColumns.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from exporter.intervals.clock import UNRESOLVED, LogClock
from exporter.intervals.columns import ColumnSink, IntervalColumns
from exporter.intervals.from_log import LogInterpreter
from exporter.intervals.from_vllm import inconsistent_counts
from exporter.intervals.log_state import LogState
from exporter.intervals.outcome import LineOutcome
from exporter.intervals.reconstruct import reconstruct, reconstruct_many
from exporter.parse.vllm_block import V1E as VARIANT
from exporter.parse.vllm_block import BlockLines, scan_block
from exporter.records import EngineLoad, RawLine, RecordSink

MIN_SEGMENT = 8  # fewer plain lines in a row go line by line (the same Intervals: tests/test_batch_equivalence.py)


@dataclass
class BlockResult:
    """What a block produced, in the order the store needs it."""

    items: list[LineOutcome | IntervalColumns] = field(default_factory=list)
    spec_lines: int = 0  # counted by the batch segments (outcomes count their own)
    variants: Counter[str] = field(default_factory=Counter)
    problems: Counter[str] = field(default_factory=Counter)

    def last_logged(self) -> float | None:
        """The own time of the block's last interval that has one (the source's status: how far behind):
        the latest, since a block's columns come one series at a time, not in line order."""
        latest: float | None = None
        for item in self.items:
            if isinstance(item, IntervalColumns):
                known = item.logged[~np.isnan(item.logged)]
                found = float(known.max()) if len(known) else None
            else:
                found = item.interval.logged_at if item.interval is not None else None
            if found is not None and (latest is None or found > latest):
                latest = found
        return latest


def interpret_block(interpreter: LogInterpreter, texts: list[str], read_at: float, min_segment: int = 1) -> BlockResult:
    """Every line of `texts` (in order) through the batch path or, where it cannot, the streaming one;
    runs of fewer than `min_segment` plain lines go line by line too (LogPipeline: MIN_SEGMENT)."""
    result = BlockResult()
    if not texts:
        return result
    scanned = scan_block(texts)
    if scanned is None:
        result.items += [interpreter.feed(RawLine(interpreter.upstream, text, read_at)) for text in texts]
        return result
    lines, fast = scanned
    start = 0
    for stop in [*np.flatnonzero(~fast).tolist(), len(texts)]:
        if stop - start >= min_segment:
            _segment(interpreter, result, read_at, lines.part(start, stop))
        else:  # a few lines between two others (a log of startups and spec lines taking turns): arrays cost more than they save
            result.items += [interpreter.feed(RawLine(interpreter.upstream, text, read_at)) for text in texts[start:stop]]
        if stop < len(texts):
            result.items.append(interpreter.feed(RawLine(interpreter.upstream, texts[stop], read_at)))
        start = stop + 1
    return result


def _segment(state: LogState, result: BlockResult, read_at: float, lines: BlockLines) -> None:
    """One run of plain Engine / V1-e lines: what from_vllm.VllmSpecReader.read does to each, on arrays, moving the same LogState."""
    spec = lines.spec
    engines = _engines(state, lines.pid, lines.engine)
    running, running_before, generation = _loads(state, lines)
    n_spec = int(spec.sum())
    if not n_spec:
        return
    result.spec_lines += n_spec
    where = np.flatnonzero(spec)
    pids = lines.pid[where]  # -1: none; only where the writer changes can two servers show
    changed = np.flatnonzero(np.diff(pids, prepend=pids[0] - 1) != 0)
    state.spec_lines_from(None if pid < 0 else pid for pid in pids[changed].tolist())
    engines, ks, rates = engines[where], lines.ks[where], lines.rates[where]
    running, running_before, generation = running[where], running_before[where], generation[where]
    accepted, drafted = lines.accepted[where], lines.drafted[where]
    mean_length, printed, throughput_value = lines.mean[where], lines.percent[where], lines.throughput[where]
    empty = drafted == 0  # a `nan%` line: nothing was drafted
    with np.errstate(divide="ignore", invalid="ignore"):
        inconsistent = ~empty & inconsistent_counts(accepted, drafted, printed)  # from_vllm's check, on arrays
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
        members = used[group]
        rebuilt = reconstruct_many(accepted[members], drafted[members], mean_length[members], rates[members, :k])
        ok[group], drafts[group], low[group], high[group] = rebuilt.ok, rebuilt.drafts, rebuilt.low, rebuilt.high
        positions[group, :k] = rebuilt.positions
        for j in np.flatnonzero(rebuilt.hard).tolist():  # wide ranges and long splits: the scalar code
            line, at = members[j], group[j]
            exact = reconstruct(int(accepted[line]), int(drafted[line]), float(mean_length[line]), tuple(rates[line, :k].tolist()))
            ok[at] = exact is not None
            if exact is not None:
                drafts[at], low[at], high[at] = exact.drafts, exact.drafts_low, exact.drafts_high
                positions[at, :k] = exact.accepted_per_position
    _count(result.problems, "reconstruction_failed", ~ok)
    kept = used[ok]
    if not len(kept):
        return
    drafts, low, high, positions = drafts[ok], low[ok], high[ok], positions[ok]
    if state.draft_length().fixed:  # from_vllm: D = T/k closes the range when reconstruct chose T/k
        pinned = (drafted[kept] % ks[kept] == 0) & (drafts == drafted[kept] // ks[kept])
        low, high = np.where(pinned, drafts, low), np.where(pinned, drafts, high)
    logged, ends = _times(state.clock, [lines.stamps[i] for i in where[kept].tolist()], read_at)
    placed = ~np.isnan(ends)  # analyze cannot place a stamp it cannot resolve; serve places it at arrival
    _count(result.problems, UNRESOLVED, np.isnan(logged) if state.clock.local_known else ~placed)  # counted either way, as the line readers count it
    _count(result.variants, VARIANT, placed)
    if not placed.all():
        kept, drafts, low, high, positions, logged, ends = (column[placed] for column in (kept, drafts, low, high, positions, logged, ends))
        if not len(kept):
            return
    if state.clock.mode == "log" and len(logged):
        state.saw_undated(float(np.nanmax(logged)))
    rows_kept = where[kept]
    with np.errstate(divide="ignore", invalid="ignore"):  # from_vllm._printed_seconds, on arrays
        throughput = throughput_value[kept]
        printed = np.where((throughput > 0) & np.isfinite(throughput) & (accepted[kept] > 0), accepted[kept] / throughput, np.nan)
    state.writers.spec_lines_at(lines.pid[rows_kept], engines[kept].tolist(), logged, printed)
    for name in dict.fromkeys(engines[kept].tolist()):
        mine = np.flatnonzero(engines[kept] == name)
        key = state.series(name)
        rows = kept[mine]
        previous = state.advance(key, float(ends[mine][-1]))
        starts = np.concatenate(([np.nan if previous is None else previous], ends[mine][:-1]))
        result.items.append(IntervalColumns.build(
            key=key, variant=VARIANT, ends=ends[mine], starts=starts, logged=logged[mine], accepted=accepted[rows], draft_tokens=drafted[rows],
            throughput=throughput_value[rows], drafts=drafts[mine], low=low[mine], high=high[mine], ks=ks[rows],
            positions=positions[mine], running=running[rows], running_before=running_before[rows], generation=generation[rows],
        ))


def _times(clock: LogClock, stamps: list[str], read_at: float) -> tuple[np.ndarray, np.ndarray]:
    """(each line's own time, the interval's time): the clock's per-line rule for a column (nan: none)."""
    clock.learn_live(stamps[0], read_at)  # as LogState.own_time: a line against its arrival, when nothing told the zone
    logged = clock.local_many(stamps, read_at)
    return logged, clock.place_many(logged, read_at)


def _count(counter: Counter[str], name: str, mask: np.ndarray) -> None:
    """Add the lines of `mask` under `name` (no zero entries: the streaming path has none)."""
    n = int(mask.sum())
    if n:
        counter[name] += n


def _engines(state: LogState, pid: np.ndarray, engine: np.ndarray) -> np.ndarray:
    """Each line's engine: the last `Engine NNN:` line of its pid before it (else what the state knew)."""
    names = np.empty(len(pid), dtype=object)
    for process in np.unique(pid).tolist():
        key = None if process < 0 else process
        mine = np.flatnonzero(pid == process)
        marks = np.flatnonzero(engine[mine] >= 0)
        before = state.engine_of(key)
        if not len(marks):
            names[mine] = before
            continue
        numbers, which = np.unique(engine[mine][marks], return_inverse=True)
        table = np.array([before] + [str(number) for number in numbers.tolist()], dtype=object)
        codes = np.concatenate(([0], which.reshape(-1) + 1))
        # the number of marker lines at or before each line picks its engine (0: the one before the segment)
        names[mine] = table[codes[np.searchsorted(marks, np.arange(len(mine)), side="right")]]
        state.set_engine(key, str(table[codes[-1]]))
    return names


def _loads(state: LogState, lines: BlockLines) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each spec line's load as from_vllm takes it (LogState.take_load): its pid's last stats line, if
    that came after the pid's previous spec line, and the running count of that engine's stats line
    before it. (running, running before, generation throughput) for every line, -1 / nan where none;
    the state is left as the lines read one by one would leave it (LogState.settle_loads)."""
    n = len(lines.pid)
    running, before, generation = np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.full(n, np.nan)
    for process in np.unique(lines.pid).tolist():
        key = None if process < 0 else process
        mine = np.flatnonzero(lines.pid == process)
        marks = np.flatnonzero(lines.running[mine] >= 0)  # this pid's stats lines, as positions in `mine`
        specs = np.flatnonzero(lines.spec[mine])
        if not len(marks) and not len(specs):
            continue
        mark_running = lines.running[mine[marks]]
        mark_engine = lines.engine[mine[marks]]
        mark_before = np.full(len(marks), -1, np.int64)
        last: dict[str, int] = {}
        for number in np.unique(mark_engine).tolist():  # each engine's previous stats line (DP: one pid logs them all)
            same = np.flatnonzero(mark_engine == number)
            known = state.last_running(key, str(number))
            mark_before[same] = np.concatenate(([-1 if known is None else known], mark_running[same][:-1]))
            last[str(number)] = int(mark_running[same][-1])
        pending = state.pending_load(key)
        if len(specs):
            latest = np.searchsorted(marks, specs) - 1  # each spec line's last stats line before it (-1: none here)
            previous_spec = np.concatenate(([-1], specs[:-1]))
            taken = latest >= 0
            taken[taken] = marks[latest[taken]] > previous_spec[taken]
            rows = mine[specs[taken]]
            running[rows], before[rows] = mark_running[latest[taken]], mark_before[latest[taken]]
            generation[rows] = lines.generation[mine[marks[latest[taken]]]]
            if pending is not None and latest[0] < 0:  # the first spec line takes a stats line of an earlier block
                load, was = pending
                running[mine[specs[0]]], before[mine[specs[0]]] = load.running, -1 if was is None else was
                generation[mine[specs[0]]] = load.generation_throughput
        if len(marks) and (not len(specs) or marks[-1] > specs[-1]):
            at = mine[marks[-1]]
            pending = (EngineLoad(prompt_throughput=float(lines.prompt[at]), generation_throughput=float(lines.generation[at]),
                                  running=int(lines.running[at]), waiting=int(lines.waiting[at])),
                       None if mark_before[-1] < 0 else int(mark_before[-1]))
        elif len(specs):
            pending = None
        state.settle_loads(key, pending, last)
    return running, before, generation


def deliver(result: BlockResult, sink: RecordSink, upstream: str) -> BlockResult:
    """Hand a block's records to `sink` in order (columns as columns where it takes them) and add
    the lines' own counts to the block's; what LogPipeline._interpret does for each outcome."""
    columns_sink = sink if isinstance(sink, ColumnSink) else None
    for item in result.items:
        if isinstance(item, IntervalColumns):
            if columns_sink is not None:
                columns_sink.record_columns(item)
            else:
                for interval in item.intervals():
                    sink.record_interval(interval)
            continue
        result.spec_lines += item.deliver(sink, upstream, result.variants, result.problems)
    return result
