"""A series' traffic as a bounded list of stretches, for a report written after the fact (analyze).

The live verdict judges the window that ends at each interval, so it lags what happened: after a
restart into a broken drafter its window still holds minutes of the healthy life, and a recovery is
believed only once it held. A report written after the fact can label each stretch of traffic by
its own numbers (judge/hindsight.py). This keeps what that needs: D, T, A and A_i (and V0's E)
summed over consecutive intervals, in runs cut where the server restarted or its speculative
config changed (never pooled across a cut), at most MAX_STRETCHES a series.

A stretch is the intervals j·2^m … (j + 1)·2^m − 1 of its run, m the smallest that keeps the count
within the limit: a function of the intervals alone, so one interval at a time (live following's
path, buffered) and a block at once (the batch path) leave the same stretches. A day of 10 s lines
fits in 2048 stretches of 4 intervals (40 s); a week in stretches of 32 (5 min 20 s). The sums are
columns (numpy), pooled and added a block at a time: the batch path pays no Python per interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from exporter.records import Interval
from exporter.state.reference import SpecIdentity
from exporter.state.window import Totals, _add_positions

if TYPE_CHECKING:
    import numpy as np

    from exporter.intervals.columns import IntervalColumns

MAX_STRETCHES = 2048
BUFFER = 4096  # intervals added one at a time wait here, and are summed a block at once
_SUMS = ("intervals", "draft_tokens", "accepted", "drafts", "drafts_unknown", "low", "high", "emitted", "emitted_known")


@dataclass(frozen=True, slots=True)
class Stretch:
    """Consecutive intervals of one run: their sums, and what began the run."""

    run: int  # runs are numbered in order
    index: int  # the stretch's place in its run, at the trace's size
    began_by: str  # what began the run: "first_traffic" | "restart" | "config_change"
    identity: SpecIdentity
    totals: Totals


def joined(left: Totals, right: Totals) -> Totals:
    """`left` with `right`'s intervals (which come after them) added."""
    if not left.intervals:
        return right
    return Totals(
        intervals=left.intervals + right.intervals, draft_tokens=left.draft_tokens + right.draft_tokens,
        accepted_tokens=left.accepted_tokens + right.accepted_tokens, drafts=left.drafts + right.drafts,
        drafts_unknown=left.drafts_unknown + right.drafts_unknown, drafts_low=left.drafts_low + right.drafts_low,
        drafts_high=left.drafts_high + right.drafts_high,
        accepted_per_position=_add_positions(left.accepted_per_position, right.accepted_per_position),
        k=right.k if right.k is not None else left.k, emitted_tokens=left.emitted_tokens + right.emitted_tokens,
        emitted_known=left.emitted_known + right.emitted_known, start=left.start if left.start is not None else right.start,
        end=right.end if left.end is None or (right.end is not None and right.end > left.end) else left.end,
    )


def _run_start(end: float, start: float | None, seconds: float | None) -> float:
    """A run's first interval's start: its own length back from its end (the line's start is the
    previous run's last end, before the restart's downtime), else its end."""
    if seconds is not None and seconds > 0:
        return end - seconds if start is None else max(start, end - seconds)
    return end


class Trace:
    """One series' stretches (see the module's doc). Not thread-safe: the store calls it under its lock."""

    def __init__(self, limit: int = MAX_STRETCHES) -> None:
        self.limit = limit
        self.level = 0  # a stretch holds 2^level intervals
        self._columns: dict[str, Any] | None = None  # run, index, the _SUMS, k, width, start, end (n,) and positions (n, w)
        self._run = -1
        self._count = 0  # intervals of the current run summed so far
        self._cut = "first_traffic"  # what begins the next run ("": none pending)
        self._identity: SpecIdentity | None = None
        self._began: dict[int, str] = {}
        self._identities: dict[int, SpecIdentity] = {}
        self._buffer: list[tuple[Any, ...]] = []  # the current run's intervals added one at a time, not yet summed

    def cut(self, why: str) -> None:
        """The server restarted: the next interval begins a run."""
        if (self._columns is not None or self._buffer) and not self._cut:
            self._flush()
            self._cut = why

    def _begin(self, identity: SpecIdentity) -> None:
        if self._identity is not None and self._identity.conflicts(identity):
            self._flush()
            self._cut = self._cut or "config_change"
        self._identity = identity if self._identity is None or self._cut else identity.filled(self._identity)
        if self._cut:
            self._run, self._count = self._run + 1, 0
            self._began[self._run], self._cut = self._cut, ""
        self._identities[self._run] = identity.filled(self._identities[self._run]) if self._run in self._identities else identity

    def add(self, interval: Interval, identity: SpecIdentity) -> None:
        self._begin(identity)
        start = interval.start if interval.start is not None else interval.end
        if not self._count and not self._buffer:  # a run's first interval starts where it did, not where the last run ended
            start = _run_start(interval.end, interval.start, interval.seconds)
        drafts_low, drafts_high = interval.drafts_range or (interval.drafts or 0, interval.drafts or 0)
        self._buffer.append((interval.draft_tokens, interval.accepted_tokens, interval.drafts or 0, int(interval.drafts is None), drafts_low,
                             drafts_high, interval.emitted_tokens or 0, int(interval.emitted_tokens is not None),
                             -1 if interval.k is None else interval.k, start, interval.end, interval.accepted_per_position))
        if len(self._buffer) >= BUFFER:
            self._flush()

    def _flush(self) -> None:
        """Sum the intervals added one at a time, as a block."""
        if not self._buffer:
            return
        import numpy as np  # only where stretches are kept (analyze)

        rows, self._buffer = self._buffer, []
        width = max(len(row[-1]) for row in rows)
        positions = np.array([row[-1] + (0,) * (width - len(row[-1])) for row in rows], np.int64).reshape(len(rows), width)
        columns = list(zip(*(row[:-1] for row in rows), strict=True))
        tokens, accepted, drafts, unknown, low, high, emitted, known, ks = (np.array(c, np.int64) for c in columns[:9])
        widths = np.array([len(row[-1]) for row in rows], np.int64)
        self._append(tokens, accepted, drafts, unknown, low, high, emitted, known, ks, np.array(columns[9], np.float64),
                     np.array(columns[10], np.float64), widths, positions)

    def add_columns(self, columns: IntervalColumns, identity: SpecIdentity) -> None:
        """`add` of each row of `columns` in turn, their sums taken a stretch at a time."""
        import numpy as np  # only where blocks are batched

        self._begin(identity)
        self._flush()
        n = len(columns)
        starts = np.where(np.isnan(columns.starts), columns.ends, columns.starts)
        if not self._count:  # as `add`: a run's first interval starts where it did
            first_start, first_seconds = float(columns.starts[0]), float(columns.seconds[0])
            starts[0] = _run_start(float(columns.ends[0]), None if math.isnan(first_start) else first_start,
                                   None if math.isnan(first_seconds) else first_seconds)
        zeros = np.zeros(n, np.int64)
        self._append(columns.draft_tokens, columns.accepted, columns.drafts, zeros, columns.low, columns.high, zeros, zeros, columns.ks, starts,
                     columns.ends, columns.ks, columns.positions[:, : int(columns.ks.max())])

    def _append(self, tokens: np.ndarray, accepted: np.ndarray, drafts: np.ndarray, unknown: np.ndarray, low: np.ndarray, high: np.ndarray,
                emitted: np.ndarray, emitted_known: np.ndarray, ks: np.ndarray, starts: np.ndarray, ends: np.ndarray, widths: np.ndarray,
                positions: np.ndarray) -> None:
        """n intervals of the current run, summed into stretches at the level they end at."""
        import numpy as np

        n = len(ends)
        self._make_room(n)
        indices = (self._count + np.arange(n)) >> self.level
        cuts = np.concatenate(([0], np.flatnonzero(np.diff(indices)) + 1))
        block: dict[str, Any] = {"run": np.full(len(cuts), self._run, np.int64), "index": indices[cuts]}
        for name, column in zip(_SUMS, (np.ones(n, np.int64), tokens, accepted, drafts, unknown, low, high, emitted, emitted_known), strict=True):
            block[name] = np.add.reduceat(column, cuts)
        block["k"], block["width"] = np.maximum.reduceat(ks, cuts), np.maximum.reduceat(widths, cuts)
        block["start"], block["end"] = starts[cuts], np.maximum.reduceat(ends, cuts)
        block["positions"] = np.add.reduceat(positions, cuts, axis=0) if positions.shape[1] else np.zeros((len(cuts), 0), np.int64)
        self._count += n
        self._columns = block if self._columns is None else _pooled(_concatenated(self._columns, block), 0)
        self._fit()

    def _make_room(self, n: int) -> None:
        """Before n intervals of the current run are added at once: pool to the level they will end at
        (the smallest whose count fits; at best one stretch a run), so they are summed at it."""
        columns = self._columns
        if columns is None:
            while ((self._count + n - 1) >> self.level) - (self._count >> self.level) + 1 > self.limit:
                self.level += 1
            return
        import numpy as np

        runs = len(np.unique(columns["run"])) + int(columns["run"][-1] != self._run)
        level = self.level
        while True:
            shift = level - self.level
            first, last = self._count >> level, (self._count + n - 1) >> level
            keys = columns["run"] * (1 << 40) + (columns["index"] >> shift)
            joins = columns["run"][-1] == self._run and (columns["index"][-1] >> shift) == first
            count = 1 + int(np.count_nonzero(np.diff(keys))) + (last - first + 1) - int(joins)
            if count <= max(self.limit, runs):
                break
            level += 1
        if level > self.level:
            self._columns = _pooled(columns, level - self.level)
            self.level = level

    def _fit(self) -> None:
        """Where more runs than the limit are kept (more restarts than stretches), the oldest leave."""
        columns = self._columns
        if columns is not None and len(columns["run"]) > self.limit:
            keep = len(columns["run"]) - self.limit
            self._columns = {name: column[keep:] for name, column in columns.items()}

    def stretches(self) -> tuple[Stretch, ...]:
        self._flush()
        columns = self._columns
        if columns is None:
            return ()
        out = []
        rows = zip(*(columns[name].tolist() for name in ("run", "index", *_SUMS, "k", "width", "start", "end", "positions")), strict=True)
        for run, index, count, tokens, accepted, drafts, unknown, low, high, emitted, known, k, width, start, end, positions in rows:
            totals = Totals(intervals=count, draft_tokens=tokens, accepted_tokens=accepted, drafts=drafts, drafts_unknown=unknown, drafts_low=low,
                            drafts_high=high, accepted_per_position=tuple(positions[:width]), k=None if k < 0 else k, emitted_tokens=emitted,
                            emitted_known=known, start=start, end=end)
            out.append(Stretch(run, index, self._began.get(run, ""), self._identities.get(run, SpecIdentity()), totals))
        return tuple(out)


def _concatenated(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    width = max(left["positions"].shape[1], right["positions"].shape[1])

    def padded(positions: np.ndarray) -> np.ndarray:
        return np.pad(positions, ((0, 0), (0, width - positions.shape[1]))) if positions.shape[1] < width else positions

    out = {name: np.concatenate((left[name], right[name])) for name in left if name != "positions"}
    out["positions"] = np.concatenate((padded(left["positions"]), padded(right["positions"])))
    return out


def _pooled(columns: dict[str, Any], shift: int) -> dict[str, Any]:
    """The stretches `shift` levels up: neighbours of one run and index pooled (0: equal ones joined)."""
    import numpy as np

    index = columns["index"] >> shift
    keys = columns["run"] * (1 << 40) + index
    cuts = np.concatenate(([0], np.flatnonzero(np.diff(keys)) + 1))
    if len(cuts) == len(keys) and not shift:
        return columns
    out = {"run": columns["run"][cuts], "index": index[cuts], "start": columns["start"][cuts]}
    for name in _SUMS:
        out[name] = np.add.reduceat(columns[name], cuts)
    for name in ("k", "width", "end"):
        out[name] = np.maximum.reduceat(columns[name], cuts)
    positions = columns["positions"]
    out["positions"] = np.add.reduceat(positions, cuts, axis=0) if positions.shape[1] else np.zeros((len(cuts), 0), np.int64)
    return out
