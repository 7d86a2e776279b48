"""clock.resolve_local for a column of `MM-DD HH:MM:SS` stamps: one call per distinct hour, not per line.

The column form of the clock's per-line rule (exporter/intervals/clock.py; the pair is held equal
by tests/test_batch_equivalence.py). Within one local hour a stamp is its hour's time plus
minutes and seconds, so each distinct hour is resolved once (year from the reference, zone from
the clock) and the rest is integer arithmetic. Where that could differ from resolving the line
itself — the year rule's edge (a stamp past reference + 1 day), a zone whose offset changes inside
the hour, an invalid field — the lines of that hour are resolved one by one, as the streaming path does.
"""

from __future__ import annotations

from datetime import tzinfo

import numpy as np

from exporter.intervals.clock import YEAR_SLACK_SECONDS, resolve_local


def _resolved(stamp: str, reference: float, tz: tzinfo | None) -> float:
    value = resolve_local(stamp, reference, tz)
    return np.nan if value is None else value


def log_times(stamps: list[str], reference: float, tz: tzinfo | None) -> np.ndarray:
    """Unix time of each stamp in zone `tz` (None: the sidecar's); nan where it cannot be resolved."""
    if not len(stamps):
        return np.zeros(0)
    digits = np.frombuffer("".join(stamps).encode("ascii"), np.uint8).reshape(-1, 14).astype(np.int64) - 48
    month, day, hour = digits[:, 0] * 10 + digits[:, 1], digits[:, 3] * 10 + digits[:, 4], digits[:, 6] * 10 + digits[:, 7]
    minute, second = digits[:, 9] * 10 + digits[:, 10], digits[:, 12] * 10 + digits[:, 13]
    hours, inverse = np.unique((month * 100 + day) * 100 + hour, return_inverse=True)
    inverse = inverse.reshape(-1)
    offsets = minute * 60 + second
    bases = np.array([_resolved(f"{h // 10000:02d}-{h // 100 % 100:02d} {h % 100:02d}:00:00", reference, tz) for h in hours.tolist()])
    times = bases[inverse] + offsets
    # the latest stamp of each hour, resolved on its own, must agree (else the offset moved in that hour)
    order = np.lexsort((offsets, inverse))
    last_row = order[np.searchsorted(inverse[order], np.arange(len(hours)), side="right") - 1]
    latest = offsets[last_row]
    check = np.array([_resolved(stamps[row], reference, tz) for row in last_row.tolist()])
    hour_ok = (check == bases + latest)
    exact = hour_ok[inverse] & (minute <= 59) & (second <= 59) & (times <= reference + YEAR_SLACK_SECONDS)
    for row in np.flatnonzero(~exact).tolist():
        times[row] = _resolved(stamps[row], reference, tz)
    return times
