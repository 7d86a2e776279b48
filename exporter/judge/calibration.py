"""A plain-decoding calibration: a plain run's stats lines → points of throughput by load, and its
JSON file (`specdecode-exporter calibrate … --out FILE`, read back by `--calibration FILE`).

The points are the steady intervals of the plain log (the running count printed at an interval's
start and at its end in the same band, state/load.py's rule; its stalls left out) by band: each band's mean running
requests and mean generation throughput. judge/payoff.py interpolates between them.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from exporter.config import PlainCalibration, PlainPoint
from exporter.state.load import pace_of, stalled

KIND = "specdecode-exporter plain-decoding calibration"
VERSION = 1


class CalibrationError(ValueError):
    """A calibration that cannot be made or read; the message says why."""


def plain_points(samples: Sequence[tuple[int | None, int, float]]) -> tuple[PlainPoint, ...]:
    """A plain run's stats lines — (running before, running, generation tokens/s) in order — as the
    calibration's points: the steady ones by band without their stalls (state/load.py's rules, the
    intervals weighed alike), each band's mean running and mean throughput."""
    bands: dict[int, list[tuple[int, float]]] = {}
    for before, running, generated in samples:
        if before is None or running < 1 or before < 1 or generated <= 0:
            continue
        band = round(math.log2(running))
        if band != round(math.log2(before)):
            continue
        bands.setdefault(band, []).append((running, generated))
    points = []
    for _, rows in sorted(bands.items()):
        paces = [pace_of(generated, running) for running, generated in rows]
        drop = stalled(Counter(paces))
        kept = [row for row, pace in zip(rows, paces, strict=True) if pace not in drop]
        points.append(PlainPoint(running=sum(r for r, _ in kept) / len(kept), tokens_per_second=sum(g for _, g in kept) / len(kept),
                                 intervals=len(kept)))
    return tuple(points)


def calibration_json(calibration: PlainCalibration) -> dict[str, Any]:
    return {
        "kind": KIND,
        "version": VERSION,
        "source": calibration.source,
        "model": calibration.model,
        "server_version": calibration.server_version,
        "points": [
            {"running": round(p.running, 3), "tokens_per_second": round(p.tokens_per_second, 2),
             "step_seconds": round(p.running / p.tokens_per_second, 6), "intervals": p.intervals}
            for p in calibration.points
        ],
    }


def calibration_from_json(data: object, name: str = "calibration") -> PlainCalibration:
    """The calibration a file holds; CalibrationError naming what is wrong."""
    if not isinstance(data, Mapping) or data.get("kind") != KIND:
        raise CalibrationError(f"{name}: not a {KIND} (make one with `specdecode-exporter calibrate PLAIN_LOG --out FILE`)")
    if data.get("version") != VERSION:
        raise CalibrationError(f"{name}: version {data.get('version')!r}; this sidecar reads version {VERSION}")
    raw = data.get("points")
    if not isinstance(raw, list) or not raw:
        raise CalibrationError(f"{name}: no points")
    points = []
    for i, point in enumerate(raw):
        try:
            running, rate = float(point["running"]), float(point["tokens_per_second"])
            intervals = int(point.get("intervals", 0))
        except (TypeError, KeyError, ValueError, AttributeError):
            raise CalibrationError(f"{name}: point {i} is not {{running, tokens_per_second}}: {point!r}") from None
        if not (math.isfinite(running) and math.isfinite(rate) and running >= 1 and rate > 0):
            raise CalibrationError(f"{name}: point {i} has running {running!r}, tokens_per_second {rate!r}: both must be positive")
        points.append(PlainPoint(running, rate, intervals))
    if any(b.running <= a.running for a, b in itertools.pairwise(points)):
        raise CalibrationError(f"{name}: points must be in order of running requests, each busier than the last")
    def text(key: str) -> str | None:
        value = data.get(key)
        return value if isinstance(value, str) else None

    return PlainCalibration(tuple(points), source=text("source") or "", model=text("model"), server_version=text("server_version"))
