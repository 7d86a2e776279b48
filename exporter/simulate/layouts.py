"""How each supported vLLM (0.24.0 → 0.34.0) lays out a log record: prefix order, JSON, file:line.

Facts from the wheels (docs/vllm-versions.md §3–§5 and its appendix):
  * ≤ 0.30 a stdout wrapper writes `(Name pid=N) ` before every physical line, VLLM_LOGGING_PREFIX
    after it, and uvicorn/access lines carry the process prefix too (system_utils.py:201);
  * ≥ 0.31 the process prefix is in `_FORMAT` after VLLM_LOGGING_PREFIX (logger.py:27-31), and
    lines not from vLLM's loggers (uvicorn) carry none;
  * ≥ 0.32 `--logging-config.formatter json` writes one python-json-logger object per record
    (`asctime, levelname, name, processName, process, message, vllm_process_name`; uvicorn's
    records too, with `color_message` on its startup lines), and prints
    `vLLM server version %s, serving model %s` instead of the logo;
  * the `[file:line]` of each line moves between releases (the tables below).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

SUPPORTED_VERSIONS = (
    "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
    "0.34.0",
)
NEWEST = SUPPORTED_VERSIONS[-1]
JSON_FROM = (0, 32)
PREFIX_IN_FORMAT_FROM = (0, 31)
ITERATION_FROM_API_SERVER = (0, 26)  # before, the engine core logged `Iteration(N)` without `Engine NNN: `


def minor(version: str) -> tuple[int, int]:
    major, minor_part = version.split(".")[:2]
    return int(major), int(minor_part)


# (first version, value): the value holds from that version until the next row (appendix of the doc)
_SOURCES: dict[str, tuple[tuple[str, str], ...]] = {
    "stats": (("0.24.0", "loggers.py:273"), ("0.26.0", "loggers.py:310"), ("0.30.0", "loggers.py:315"),
              ("0.31.0", "loggers.py:320"), ("0.32.0", "loggers.py:335")),
    "iteration": (("0.24.0", "core.py:452"), ("0.26.0", "loggers.py:182"), ("0.30.0", "loggers.py:185"),
                  ("0.31.0", "loggers.py:191"), ("0.32.0", "loggers.py:199")),
    "args": (("0.24.0", "api_utils.py:273"), ("0.28.0", "api_utils.py:272"), ("0.29.0", "api_utils.py:286"), ("0.33.0", "startup.py:96")),
    "version": (("0.24.0", "api_utils.py:339"), ("0.26.0", "api_utils.py:345"), ("0.28.0", "api_utils.py:333"),
                ("0.29.0", "api_utils.py:347"), ("0.33.0", "startup.py:38")),
    "engine_init": (("0.24.0", "core.py:115"), ("0.26.0", "core.py:117"), ("0.27.0", "core.py:122"), ("0.28.0", "core.py:123"),
                    ("0.29.0", "core.py:124"), ("0.31.0", "core.py:130"), ("0.32.0", "core.py:134"), ("0.33.0", "core.py:140"),
                    ("0.34.0", "core.py:153")),
    # only 0.24, 0.26, 0.28 and 0.30+ were read for this one; the releases between keep the one before
    "serving": (("0.24.0", "api_server.py:581"), ("0.26.0", "api_server.py:677"), ("0.28.0", "api_server.py:657"), ("0.30.0", "entry.py:139")),
    "spec": (("0.24.0", "metrics.py:120"),),
}
_LOGGERS = {  # the `name` of each record in JSON mode
    "stats": "vllm.v1.metrics.loggers", "iteration": "vllm.v1.metrics.loggers", "spec": "vllm.v1.spec_decode.metrics",
    "args": "vllm.entrypoints.utils", "version": "vllm.entrypoints.utils", "engine_init": "vllm.v1.engine.core",
    "serving": "vllm.entrypoints.openai.api_server", "shutdown": "vllm.entrypoints.launcher",
}


def source(kind: str, version: str) -> str:
    """The `file:line` vLLM `version` prints for a line of this kind (a `file:line` is kept as it is)."""
    if kind not in _SOURCES:
        return kind
    rows = _SOURCES[kind]
    chosen = rows[0][1]
    for since, value in rows:
        if minor(version) >= minor(since):
            chosen = value
    return chosen


@dataclass(frozen=True, slots=True)
class Layout:
    """One server's log layout: its vLLM version, JSON or text, VLLM_LOGGING_PREFIX."""

    version: str = NEWEST
    json_logs: bool = False
    logging_prefix: str = ""  # VLLM_LOGGING_PREFIX, e.g. "[pod-a] "

    def __post_init__(self) -> None:
        if self.version not in SUPPORTED_VERSIONS:
            raise ValueError(f"vLLM {self.version} is not supported (supported: {', '.join(SUPPORTED_VERSIONS)})")
        if self.json_logs and minor(self.version) < JSON_FROM:
            raise ValueError(f"vLLM {self.version} has no JSON log formatter (it arrived in 0.32.0)")

    def record(self, now: float, process: str, pid: int, kind: str, message: str, level: str = "INFO") -> str:
        """One vLLM logger record, as this version writes it."""
        if self.json_logs:
            return json.dumps({
                "asctime": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}",
                "levelname": level, "name": self._logger(kind),
                "processName": "MainProcess" if process == "APIServer" else process, "process": pid,
                "message": message, "vllm_process_name": process,
            })
        body = f"{level} {time.strftime('%m-%d %H:%M:%S', time.localtime(now))} [{source(kind, self.version)}] {message}"
        if minor(self.version) >= PREFIX_IN_FORMAT_FROM:
            return f"{self.logging_prefix}({process} pid={pid}) {body}"
        return f"({process} pid={pid}) {self.logging_prefix}{body}"

    def _logger(self, kind: str) -> str:
        if kind in ("args", "version") and minor(self.version) >= (0, 33):
            return "vllm.entrypoints.common.startup"  # startup.py moved out of api_utils.py in 0.33
        return _LOGGERS.get(kind, "vllm")

    def uvicorn(self, now: float, pid: int, message: str, *, access: bool = False) -> str:
        """A uvicorn record: `INFO:     …` text (prefixed only ≤ 0.30), or its JSON record."""
        if self.json_logs:
            record = {
                "asctime": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}",
                "levelname": "INFO", "name": "uvicorn.access" if access else "uvicorn.error", "processName": "MainProcess",
                "process": pid, "message": message, "vllm_process_name": "APIServer",
            }
            if not access:
                record["color_message"] = message
            return json.dumps(record)
        text = f"INFO:     {message}"
        return text if minor(self.version) >= PREFIX_IN_FORMAT_FROM else f"(APIServer pid={pid}) {text}"
