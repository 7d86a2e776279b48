"""The store's counters as the state dir keeps them: JSON in, JSON out, tolerant of old or edited files."""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

from exporter.limits import MAX_COUNT, MAX_POSITIONS
from exporter.records import SeriesKey
from exporter.state.snapshot import SourceSnapshot
from exporter.state.upstreams import SourceCounts
from exporter.state.window import Totals, totals_json

log = logging.getLogger(__name__)
_OPTIONAL = {"k", "start", "end"}  # the Totals fields that may be null
_FLOATS = {"seconds", "start", "end"}


def key_json(key: SeriesKey) -> dict[str, str]:
    return {"upstream": key.upstream, "model_name": key.model_name, "engine": key.engine, "source": key.source}


def series_json(key: SeriesKey, lifetime: Totals, variants: Mapping[str, int]) -> dict[str, object]:
    return {"key": key_json(key), "totals": totals_json(lifetime), "variants": dict(variants)}


def totals_from_json(saved: Mapping[str, Any]) -> Totals:
    """TypeError or KeyError for an entry that is not a saved Totals (a hand-edited `"drafts": "many"`
    too: restored as it is, it failed every render of /metrics)."""
    if not isinstance(saved, Mapping):
        raise TypeError("saved totals: not a mapping")
    known = {field.name for field in dataclasses.fields(Totals)}
    values: dict[str, Any] = {}
    for name, value in saved.items():
        if name not in known:
            raise TypeError(f"saved totals: unknown field {name!r}")
        if name in ("accepted_per_position", "draft_tokens_per_position"):
            if not isinstance(value, list) or len(value) > MAX_POSITIONS or not all(_count(item) for item in value):
                raise TypeError(f"saved totals: {name} is {value!r:.100}")
            values[name] = tuple(value)
        elif value is None and name in _OPTIONAL:
            values[name] = None
        elif not (_number(value) if name in _FLOATS else _count(value)):
            raise TypeError(f"saved totals: {name} is {value!r:.100}")
        else:
            values[name] = value
    if "accepted_per_position" not in values:
        raise KeyError("accepted_per_position")
    return Totals(**values)


def counts_from_json(saved: object, what: str = "counts") -> Counter[str]:
    """A saved name → count mapping; entries that are not one are dropped, each said in the log."""
    if not isinstance(saved, Mapping):
        log.warning("saved %s unusable, starting them from zero saved=%.100r", what, saved)
        return Counter()
    kept = Counter({str(name): count for name, count in saved.items() if _count(count)})
    for name, count in saved.items():
        if not _count(count):
            log.warning("saved %s entry unusable, starting it from zero name=%.100s value=%.100r", what, name, count)
    return kept


def _count(value: object) -> bool:
    """A whole count a counter can hold (exporter/limits.py): `"lots"`, -5, 10**400 are not."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) <= 1e15  # and so finite (NaN compares false)


def source_json(source: SourceSnapshot) -> dict[str, object]:
    return {"upstream": source.upstream, "kind": source.kind, "lines": source.lines, "spec_lines": source.spec_lines,
            "problems": dict(source.problems), "variants": dict(source.variants), "resets": source.resets}


def saved_counts(entry: Mapping[str, Any]) -> SourceCounts:
    """A source's saved counters; a field of the wrong type starts from zero, said in the log."""
    kept = {"lines": 0, "spec_lines": 0, "resets": 0}
    for name in kept:
        value = entry.get(name, 0)
        if _count(value):
            kept[name] = value
        else:
            log.warning("saved source counter unusable, starting it from zero upstream=%s field=%s value=%.100r",
                        entry.get("upstream"), name, value)
    return SourceCounts(lines=kept["lines"], spec_lines=kept["spec_lines"], resets=kept["resets"],
                        problems=counts_from_json(entry.get("problems", {}), "problem counts"),
                        variants=counts_from_json(entry.get("variants", {}), "format counts"))


def entries(saved: Mapping[str, object], name: str) -> list[Any]:
    """A list from the saved state, or none (a hand-edited or foreign file must not stop a restart: said in the log)."""
    found = saved.get(name, [])
    if isinstance(found, list):
        return found
    log.warning("saved %s unusable, starting them afresh saved=%.100r", name, found)
    return []
