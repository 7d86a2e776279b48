"""Read one record of vLLM's JSON log formatter (vLLM ≥ 0.32, `--logging-config.formatter json`).

vLLM gives its `vllm` handler python-json-logger's JsonFormatter with
`%(asctime)s %(levelname)s %(name)s %(processName)s %(process)d %(message)s`
(vllm 0.33 `logging_utils/formatter.py:7-9`, `logger.py:241-248`): one JSON object per record,
keys in that order, then every extra record attribute — `vllm_process_name` always (the record
factory, logger.py:37-50), `color_message` on uvicorn's records. uvicorn's own records go through
the same formatter (`uvicorn_logging.py:143-150`) under the logger names `uvicorn.*`; raw lines
(tqdm bars, NCCL, print) stay plain text between the records.

A record becomes the same LogEnvelope a text line does, so everything after the envelope is
shared: the message is the line body, the pid is `process`, the process name is
`vllm_process_name` (else `processName`), and `asctime` (`%Y-%m-%d %H:%M:%S,mmm`) gives the
`MM-DD HH:MM:SS` stamp the text layout prints, and with its year the line's own date.
A JSON record still contains its message's text verbatim (the markers are ASCII and JSON escapes
only quotes, backslashes, control and non-ASCII characters), so the scan stage's prefilter
keeps working on the raw line.
"""

from __future__ import annotations

import json
import re
from typing import Any

from exporter.records import LogEnvelope

_ASCTIME = re.compile(r"^(\d{4})-(\d\d-\d\d \d\d:\d\d:\d\d)")
_LEVELS = frozenset({"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"})


def looks_like_json_record(text: str) -> bool:
    """Cheap test before json.loads: a record is one object on one line with a message key."""
    return text.startswith("{") and '"message"' in text


def parse_json_record(text: str) -> LogEnvelope | None:
    """The envelope of one vLLM JSON log record; None for anything else (uvicorn records included)."""
    text = text.strip()
    if not looks_like_json_record(text):
        return None
    try:
        record: Any = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    message, level, name = record.get("message"), record.get("levelname"), record.get("name")
    if not isinstance(message, str) or level not in _LEVELS:
        return None
    if isinstance(name, str) and name.startswith("uvicorn"):
        return None  # uvicorn's startup and access records share the formatter, never a spec line
    stamp = _ASCTIME.match(record.get("asctime") or "") if isinstance(record.get("asctime"), str) else None
    pid = record.get("process")
    process = record.get("vllm_process_name") or record.get("processName")
    return LogEnvelope(
        process=process if isinstance(process, str) else None,
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        level=str(level),
        month_day_time=stamp[2] if stamp else "",
        source_file=name if isinstance(name, str) else "",
        message=message,
        dated=f"{stamp[1]}-{stamp[2].replace(' ', 'T')}" if stamp else None,  # asctime has the year (local time)
    )
