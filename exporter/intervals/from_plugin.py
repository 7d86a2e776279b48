"""Our vLLM plugin's JSON records (exporter/plugin/records.py) → exact Intervals of source "plugin".

They arrive as lines of a followed file, like a log's; their counts are exact, so nothing is
reconstructed, and their times are vLLM's wall clock, placed through the log's clock.
"""

from __future__ import annotations

from exporter.intervals.clock import UNRESOLVED
from exporter.intervals.log_state import LogState
from exporter.intervals.outcome import NOTHING, LineOutcome, refused
from exporter.plugin.records import VERSION as PLUGIN_RECORD_VERSION
from exporter.plugin.records import PluginConfig, RecordError
from exporter.plugin.records import decode as decode_plugin_record
from exporter.records import Interval, RawLine, SeriesKey, SpecConfig

PLUGIN_VARIANT = f"plugin-v{PLUGIN_RECORD_VERSION}"  # the `format` label of plugin records


def read_plugin_record(state: LogState, line: RawLine) -> LineOutcome:
    """A record of our vLLM plugin: exact counts, nothing to reconstruct."""
    try:
        record = decode_plugin_record(line.text)
    except RecordError as error:
        return refused(state.upstream, line, error.reason)
    if isinstance(record, PluginConfig):
        merged = state.take_config(
            SpecConfig(
                method=record.method, num_speculative_tokens=record.num_speculative_tokens, draft_model=record.draft_model,
                server_version=record.vllm_version, served_model_name=record.model_name, model=record.model,
            )
        )
        return LineOutcome(config=merged)
    if record is None:
        return NOTHING  # a record kind from a newer plugin: skipped, not an error
    own = state.own_time(line, exact=record.end)
    end = state.clock.place(own, line.read_at)
    if end is None:
        return refused(state.upstream, line, UNRESOLVED)
    # the record's start moves with its end: an interval keeps the length vLLM measured
    interval = Interval(
        key=SeriesKey(upstream=state.upstream, model_name=state.model(record.model_name), engine=record.engine, source="plugin"),
        end=end,
        start=record.start + (end - record.end),
        seconds=record.end - record.start,
        logged_at=own,
        draft_tokens=record.draft_tokens,
        accepted_tokens=record.accepted_tokens,
        drafts=record.drafts,
        accepted_per_position=record.accepted_per_position,
        draft_tokens_per_position=record.draft_tokens_per_position,
        k=state.config.num_speculative_tokens or len(record.accepted_per_position) or None,
        drafts_range=(record.drafts, record.drafts),
        variant=PLUGIN_VARIANT,
    )
    return LineOutcome(interval=interval, spec_line=True, variant=PLUGIN_VARIANT)
