"""Split a vLLM log line into its envelope (process prefix, level, time, file) and message.

Layers, outermost first (reference §1): `(<proc> pid=<n>) `, optional VLLM_LOGGING_PREFIX text,
level, `MM-DD HH:MM:SS`, `[file:line]` (≥ v0.8) or `file:line]` (older), the message. Any layer
may be wrapped in ANSI colour codes, and a stray `\r` may end the line.

The process prefix comes before VLLM_LOGGING_PREFIX up to vLLM 0.30 (a stdout wrapper writes it,
`utils/system_utils.py:201`) and after it from 0.31 (it moved into `_FORMAT`, logger.py:27-31 in
0.31): `(APIServer pid=7) [pod-a] INFO …` and `[pod-a] (APIServer pid=7) INFO …` are both read.
The VLLM_LOGGING_PREFIX is free text, so the match anchors on the level and the date.
A vLLM JSON record (0.32+, one object a line) is read by json_log.py into the same envelope.

Two more shapes are read here. A message-only line — a custom logging config (`%(message)s`), an
export from a log store, `kubectl logs` of a stripped format — has no envelope: parse_bare takes
the message from the first known message start, and a date-time with its year (or a pid) in what
precedes it when there is one. Two records collapsed onto one physical line (a shipper or a paste
lost the newline) are found by a second envelope inside the line: split_records cuts them apart.
"""

from __future__ import annotations

import itertools
import re

from exporter.parse.anchor import unquoted
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


# Where a second record starts inside a line: an optional process prefix, the level, the stamp.
_RECORD_START = re.compile(
    r"(?:\([^()\s]+ pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? +\[?[^\s\[\]]+?:\d+\] "
)
# Messages a bare line may start with; anything before the first is an unknown prefix.
# (a spec body without its label, vllm_log.BODY_STARTS, last: the labelled starts come before it in a labelled line)
BARE_STARTS = ("SpecDecoding metrics: ", "Speculative metrics: ", "DiffusionDecoding metrics: ", "Mean acceptance length: ", "Draft acceptance rate: ")
_BARE_ENGINE = re.compile(r"(?:^|\s)(Engine \d+: |\d+ Engines Aggregated: )")
_DATED = re.compile(r"(?P<date>\d{4}-\d\d-\d\d)[T ](?P<time>\d\d:\d\d:\d\d)(?P<fraction>[.,]\d+)?(?P<zone>Z|[+-]\d\d:?\d\d)?")
_UNDATED = re.compile(r"(?<![\d-])(?P<stamp>\d\d-\d\d \d\d:\d\d:\d\d)")  # vLLM's own datefmt in a custom format
_PID = re.compile(r"\bpid=(\d+)\b")


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
    match = _ENVELOPE.match(strip_ansi(text).lstrip())  # a pasted line may come indented
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
        dated=_dated(match["custom"]) if match["custom"] else None,
    )


def _dated(prefix: str) -> str | None:
    """The date-time, with its year, of what a log viewer or store wrote before vLLM's line (Docker
    Desktop's `2026-04-19 17:36:42.061 | `, a store's export): the line's time, as for a bare line."""
    dated = _DATED.search(prefix)
    if dated is None:
        return None
    return f"{dated['date']}T{dated['time']}{dated['fraction'] or ''}{(dated['zone'] or '').replace('Z', '+00:00')}"


_LEVEL_WORDS = ("DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL ")


def may_hold_two_records(text: str) -> bool:
    """A cheap test for the batch path: more than one level word, so maybe two records in one line."""
    return sum(map(text.count, _LEVEL_WORDS)) > 1


def split_records(text: str) -> list[str] | None:
    """The records of a line that holds more than one (cut where each next envelope starts), else None."""
    clean = strip_ansi(text)
    first = _RECORD_START.search(clean)  # the line's own envelope (after any VLLM_LOGGING_PREFIX)
    if first is None:
        return None
    # a record begins outside the quoted text of the one before it (a prompt or output logged as a repr: anchor.py)
    starts = unquoted(clean, [m.start() for m in _RECORD_START.finditer(clean, first.end())])
    if not starts:
        return None
    bounds = [0, *starts, len(clean)]
    return [clean[a:b] for a, b in itertools.pairwise(bounds) if clean[a:b].strip()]


def parse_bare(text: str) -> LogEnvelope | None:
    """The envelope of a message-only line (no level, no stamp): the message from its known start on."""
    clean = strip_ansi(text)
    found = [(clean.find(start), start) for start in BARE_STARTS if start in clean]
    engine = _BARE_ENGINE.search(clean)
    if engine is not None:
        found.append((engine.start(1), engine[1]))
    if not found:
        return None
    at = min(found)[0]
    prefix = clean[:at]
    if any(quote in prefix for quote in "'\"`"):
        return None  # the marker is quoted inside some other message, not a record of its own
    dated = _DATED.search(prefix)
    undated = _UNDATED.search(prefix) if dated is None else None
    pid = _PID.search(prefix)
    return LogEnvelope(
        process=None,
        pid=int(pid[1]) if pid else None,
        level="",
        month_day_time=f"{dated['date'][5:]} {dated['time']}" if dated else undated["stamp"] if undated else "",
        source_file="",
        message=clean[at:],
        dated=_dated(prefix),  # with its year, and its zone where it has one (`…Z`, `+02:00`); without a zone it is local time
    )
