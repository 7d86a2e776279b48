"""The store's counters as the state dir keeps them: JSON in, JSON out, tolerant of old or edited files."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from exporter.records import SeriesKey, SourceStats
from exporter.state.window import Totals, totals_json


def key_json(key: SeriesKey) -> dict[str, str]:
    return {"upstream": key.upstream, "model_name": key.model_name, "engine": key.engine, "source": key.source}


def series_json(key: SeriesKey, lifetime: Totals, variants: Counter[str]) -> dict[str, object]:
    return {"key": key_json(key), "totals": totals_json(lifetime), "variants": dict(variants)}


def totals_from_json(saved: Mapping[str, Any]) -> Totals:
    """TypeError or KeyError for an entry that is not a saved Totals."""
    return Totals(**{
        **saved,
        "accepted_per_position": tuple(saved["accepted_per_position"]),
        "draft_tokens_per_position": tuple(saved.get("draft_tokens_per_position", ())),
    })


def source_json(upstream: str, stats: SourceStats) -> dict[str, object]:
    return {"upstream": upstream, "kind": stats.kind, "lines": stats.lines, "spec_lines": stats.spec_lines,
            "problems": dict(stats.problems), "variants": dict(stats.variants), "resets": stats.resets}


def restore_source(stats: SourceStats, entry: Mapping[str, Any]) -> None:
    stats.lines, stats.spec_lines, stats.resets = entry.get("lines", 0), entry.get("spec_lines", 0), entry.get("resets", 0)
    stats.problems.update(entry.get("problems", {}))
    stats.variants.update(entry.get("variants", {}))


def entries(saved: Mapping[str, object], name: str) -> list[Any]:
    """A list from the saved state, or none (a hand-edited or foreign file must not stop a restart)."""
    found = saved.get(name, [])
    return found if isinstance(found, list) else []
