"""One vocabulary: the words that cross stages and end as label values, each spelt once, here.

Problem reasons (`specdecode_log_parse_errors_total{reason}`, `specdecode_scrape_errors_total{reason}`),
source kinds (`specdecode_source_up{kind}`) and verdict states (`specdecode_health{state}`) are
`Literal`s, so mypy refuses a misspelt one where it is typed; the tuples beside them are their
values at run time. Where a module must stay free of this package (plugin/, which runs inside
vLLM) or is written elsewhere, tests/test_vocabulary.py finds every reason it writes in these lists.
"""

from __future__ import annotations

from typing import Literal, get_args

# A log line (or container record, or plugin record) that looked like ours but could not be used.
LogProblem = Literal[
    "missing_field",  # a field of the spec line is absent (parse/vllm_log.py)
    "bad_value",  # a field's value is not a number, or out of its range
    "unknown_layout",  # a spec line (or a JSON record) of a layout we do not read
    "truncated",  # cut short anywhere (a shipper's size limit, a paste)
    "collapsed_records",  # two records on one line (parse/envelope.py split_records)
    "inconsistent_counts",  # accepted above drafted, or counts that contradict each other
    "reconstruction_failed",  # per-position counts that no integer counts could have printed
    "unresolved_time",  # a stamp that cannot be placed in time (intervals/clock.py)
    "container_framing",  # a docker or CRI record that is not one
    "line_too_long",  # longer than --max-line-bytes: counted and skipped
    "unparsable_record",  # a plugin record that is not JSON
    "unknown_record_version",  # a plugin record of a version we do not read
]
LOG_PROBLEMS: tuple[LogProblem, ...] = get_args(LogProblem)

# A scrape of a server's /metrics that failed, or series of it that were skipped.
ScrapeProblem = Literal[
    "refused", "timeout", "http_status", "too_large", "unparsable", "no_spec_families", "transport", "internal_error",
    "drained_endpoint",  # the server answers but is shutting down, or its counters went away: not scraped again
    "invalid_values",  # series skipped for NaN/Inf/negative or contradictory counters (the scrape itself worked)
]
SCRAPE_PROBLEMS: tuple[ScrapeProblem, ...] = get_args(ScrapeProblem)

# What a source reads: a log file or stdin, a /metrics target, our vLLM plugin's records.
SourceKind = Literal["log", "metrics", "plugin"]
SOURCE_KINDS: tuple[SourceKind, ...] = get_args(SourceKind)

# The drafter health verdict (judge/verdict.py), in the order specdecode_health lists them.
VerdictState = Literal["ok", "wasteful", "degraded", "broken", "no_data"]
VERDICT_STATES: tuple[VerdictState, ...] = get_args(VerdictState)


def verdict_state(text: str) -> VerdictState:
    """`text` as a verdict state (one kept as a plain string, e.g. in a series' memory); anything else is an error."""
    for state in VERDICT_STATES:
        if state == text:
            return state
    raise ValueError(f"{text!r} is not a verdict state ({', '.join(VERDICT_STATES)})")
