"""Split a vLLM log line into its envelope (process prefix, level, time, file) and message.

Layers, outermost first (reference §1): `(<proc> pid=<n>) `, optional VLLM_LOGGING_PREFIX text,
level, `MM-DD HH:MM:SS`, `[file:line]` (≥ v0.8) or `file:line]` (older), the message. Any layer
may be wrapped in ANSI colour codes, and a stray `\r` may end the line.

The process prefix comes before VLLM_LOGGING_PREFIX up to vLLM 0.30 (a stdout wrapper writes it,
`utils/system_utils.py:201`) and after it from 0.31 (it moved into `_FORMAT`, logger.py:27-31 in
0.31): `(APIServer pid=7) [pod-a] INFO …` and `[pod-a] (APIServer pid=7) INFO …` are both read.
The VLLM_LOGGING_PREFIX is free text, so the match anchors on the level and the date.
A vLLM JSON record (0.32+, one object a line) is read by json_log.py into the same envelope.
"""

from __future__ import annotations

import re

from exporter.parse.json_log import looks_like_json_record, parse_json_record
from exporter.records import LogEnvelope

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

_ENVELOPE = re.compile(
    r"""
    ^(?:\((?P<process>[^()\s]+)\ pid=(?P<pid>\d+)\)\ )?   # process prefix, ≤ 0.30 (stdout wrapper)
    (?P<custom>.*?)                                    # VLLM_LOGGING_PREFIX, usually empty
    (?:\((?P<process2>[^()\s]+)\ pid=(?P<pid2>\d+)\)\ )?  # process prefix, ≥ 0.31 (in _FORMAT)
    (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\ +
    (?P<time>\d\d-\d\d\ \d\d:\d\d:\d\d)(?:[.,]\d+)?\ + # no year, no zone; some plugins add .mmm
    \[?(?P<file>[^\s\[\]]+?):\d+\]\ (?P<message>.*)$
    """,
    re.VERBOSE,
)


def strip_ansi(text: str) -> str:
    """Remove ANSI CSI sequences and a trailing carriage return."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text.rstrip("\r")


def parse_envelope(text: str) -> LogEnvelope | None:
    """Return the envelope of a vLLM log line, or None if the line has no logging-formatter layout."""
    if looks_like_json_record(text):
        record = parse_json_record(text)
        if record is not None:
            return record
    match = _ENVELOPE.match(strip_ansi(text))
    if match is None:
        return None
    pid = match["pid"] or match["pid2"]
    return LogEnvelope(
        process=match["process"] or match["process2"],
        pid=int(pid) if pid is not None else None,
        level=match["level"],
        month_day_time=match["time"],
        source_file=match["file"],
        message=match["message"],
    )
