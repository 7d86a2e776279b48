"""Split a vLLM log line into its envelope (process prefix, level, time, file) and message.

Layers, outermost first (reference §1): `(<proc> pid=<n>) `, optional VLLM_LOGGING_PREFIX text,
level, `MM-DD HH:MM:SS`, `[file:line]` (≥ v0.8) or `file:line]` (older), the message. Any layer
may be wrapped in ANSI colour codes, and a stray `\r` may end the line.
"""

from __future__ import annotations

import re

from exporter.records import LogEnvelope

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

_ENVELOPE = re.compile(
    r"""
    ^(?:\((?P<process>[^()\s]+)\ pid=(?P<pid>\d+)\)\ )?   # decorate_logs prefix
    (?P<custom>.*?)                                    # VLLM_LOGGING_PREFIX, usually empty
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
    match = _ENVELOPE.match(strip_ansi(text))
    if match is None:
        return None
    pid = match["pid"]
    return LogEnvelope(
        process=match["process"],
        pid=int(pid) if pid is not None else None,
        level=match["level"],
        month_day_time=match["time"],
        source_file=match["file"],
        message=match["message"],
    )
