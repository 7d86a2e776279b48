"""The plugin's JSON-lines records: written inside vLLM, read by the sidecar. Standard library only (and
exporter/limits.py's two numbers: what a record's counts and lists may hold).

Every line is one JSON object with `"specdecode_plugin": <version>` first, so a reader recognises a
record by content (the scanner's marker) whatever the file is called:

  {"specdecode_plugin":1,"kind":"config","time":…,"pid":…,"vllm_version":"0.24.0","model_name":"target",
   "model":"/models/target","method":"ngram","num_speculative_tokens":5,"draft_model":null,
   "draft_tensor_parallel_size":1}
  {"specdecode_plugin":1,"kind":"interval","time":…,"pid":…,"engine":0,"model_name":"target",
   "start":…,"end":…,"steps":412,"drafts":D,"draft_tokens":T,"accepted_tokens":A,
   "accepted_per_position":[A_0,…],"draft_tokens_per_position":[T_0,…],"errors":0}

Times are unix seconds. An interval record holds exactly what vLLM's scheduler counted in
(start, end]; consecutive records of one engine tie end to start, so nothing is counted twice.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, TypeGuard

from exporter.limits import MAX_COUNT, MAX_POSITIONS

MARK = "specdecode_plugin"
VERSION = 1
MARKER_TEXT = '{"' + MARK + '":'  # how every record line starts


def encode(record: dict[str, Any]) -> bytes:
    """One record as one line: compact JSON, the marker key first, a newline at the end."""
    return (json.dumps({MARK: VERSION, **record}, separators=(",", ":"), allow_nan=False) + "\n").encode()


class RecordError(ValueError):
    """A line that carries the plugin marker but is not a usable record; `reason` is a metric label."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PluginInterval:
    engine: str
    model_name: str
    start: float
    end: float
    drafts: int
    draft_tokens: int
    accepted_tokens: int
    accepted_per_position: tuple[int, ...]
    draft_tokens_per_position: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PluginConfig:
    model_name: str | None
    model: str | None
    method: str | None
    num_speculative_tokens: int | None
    draft_model: str | None
    draft_tensor_parallel_size: int | None
    vllm_version: str | None


def _counted(value: object) -> TypeGuard[int]:
    """A count a counter can hold (exporter/limits.py): a 400-digit one failed every /metrics render."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _count(record: dict[str, Any], key: str) -> int:
    value = record.get(key)
    if not _counted(value):
        raise RecordError("bad_value")
    return value


def _counts(record: dict[str, Any], key: str) -> tuple[int, ...]:
    values = record.get(key, [])
    if not isinstance(values, list) or len(values) > MAX_POSITIONS or not all(map(_counted, values)):
        raise RecordError("bad_value")
    return tuple(values)


def _text(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) else None


def decode(line: str) -> PluginInterval | PluginConfig | None:
    """A record from one line; None for a record kind this reader does not know; RecordError if broken."""
    try:
        record = json.loads(line)
    except ValueError:
        raise RecordError("unparsable_record") from None
    if not isinstance(record, dict) or record.get(MARK) != VERSION:
        raise RecordError("unknown_record_version")
    kind = record.get("kind")
    if kind == "config":
        k = record.get("num_speculative_tokens")
        tp = record.get("draft_tensor_parallel_size")
        return PluginConfig(
            model_name=_text(record, "model_name"),
            model=_text(record, "model"),
            method=_text(record, "method"),
            num_speculative_tokens=k if isinstance(k, int) and not isinstance(k, bool) else None,
            draft_model=_text(record, "draft_model"),
            draft_tensor_parallel_size=tp if isinstance(tp, int) and not isinstance(tp, bool) else None,
            vllm_version=_text(record, "vllm_version"),
        )
    if kind != "interval":
        return None
    start, end = record.get("start"), record.get("end")
    if not _finite(start) or not _finite(end) or end < start:  # NaN compares false to everything: end < start let it through
        raise RecordError("bad_value")
    interval = PluginInterval(
        engine=str(record.get("engine", 0)),
        model_name=_text(record, "model_name") or "",
        start=float(start),
        end=float(end),
        drafts=_count(record, "drafts"),
        draft_tokens=_count(record, "draft_tokens"),
        accepted_tokens=_count(record, "accepted_tokens"),
        accepted_per_position=_counts(record, "accepted_per_position"),
        draft_tokens_per_position=_counts(record, "draft_tokens_per_position"),
    )
    if interval.accepted_tokens > interval.draft_tokens or sum(interval.accepted_per_position) != interval.accepted_tokens:
        raise RecordError("inconsistent_counts")
    drafts = interval.drafts
    # values that cannot be: a position accepted in more drafts than were made (a ratio above 1), fewer
    # draft tokens than drafts, or tokens drafted in no draft
    if any(accepted > drafts for accepted in interval.accepted_per_position) or interval.draft_tokens < drafts or (
        drafts == 0 and interval.draft_tokens > 0
    ):
        raise RecordError("bad_value")
    return interval


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
