"""Unwrap container log framing: docker `json-file` records and Kubernetes CRI lines.

docker:  {"log":"text\\n","stream":"stdout","time":"2026-12-02T08:19:42.123456789Z"}
         a record whose `log` does not end in a newline is a piece of a longer line (the driver
         splits at 16 KiB): pieces are joined until one ends the line.
CRI:     2026-12-02T08:19:42.123456789Z stdout F text
         `P` marks a partial piece, joined with the following pieces until an `F`.
Pieces are joined per stream, since stdout and stderr interleave. `auto` decides per file from
its first non-empty line and keeps that decision until the file is replaced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from exporter.config import LogFormat
from exporter.plugin.records import MARKER_TEXT as PLUGIN_RECORD

_CRI = re.compile(r"^(\d{4}-\d\d-\d\dT\S+) (stdout|stderr) ([A-Z](?::[A-Z])*) ?(.*)$", re.DOTALL)


class FramingError(ValueError):
    """A line that does not carry the container framing its file uses."""


def detect_format(line: str) -> LogFormat:
    """Guess the framing of a file from one of its lines."""
    stripped = line.lstrip()
    if stripped.startswith(PLUGIN_RECORD):  # our plugin's JSON lines are plain text, not docker records
        return "plain"
    # a docker record has "log" and "stream" keys; vLLM's own JSON records (0.32+) have neither
    if stripped.startswith("{") and '"log":' in stripped and '"stream":' in stripped:
        return "docker"
    if _CRI.match(line):
        return "cri"
    return "plain"


class FrameDecoder:
    """Turns the physical lines of one file into (text, container time) pairs."""

    def __init__(self, log_format: LogFormat = "auto") -> None:
        self.requested: LogFormat = log_format
        self.format: LogFormat | None = None if log_format == "auto" else log_format
        self._pieces: dict[str, list[str]] = {}

    def reset(self) -> None:
        """A new file took this path's place: detect again, drop unfinished pieces."""
        self.format = None if self.requested == "auto" else self.requested
        self._pieces.clear()

    def decode(self, line: str) -> Iterator[tuple[str, str | None]]:
        """Yield the complete log lines inside `line`; raises FramingError for a bad record."""
        if self.format is None:
            if not line.strip():
                return
            self.format = detect_format(line)
        if self.format == "plain":
            yield line, None
        elif self.format == "docker":
            yield from self._docker(line)
        else:
            yield from self._cri(line)

    def _join(self, stream: str, piece: str, final: bool) -> str | None:
        if not final:
            self._pieces.setdefault(stream, []).append(piece)
            return None
        earlier = self._pieces.pop(stream, None)
        return "".join(earlier) + piece if earlier else piece

    def _docker(self, line: str) -> Iterator[tuple[str, str | None]]:
        if not line.strip():
            return
        try:
            record = json.loads(line)
            text, stream, stamp = record["log"], record.get("stream", "stdout"), record.get("time")
        except (ValueError, KeyError, TypeError):
            raise FramingError("not a docker json-file record") from None
        if not isinstance(text, str):
            raise FramingError("docker record without a text `log`")
        final = text.endswith("\n")
        joined = self._join(str(stream), text[:-1] if final else text, final)
        if joined is not None:
            yield joined.rstrip("\r"), stamp

    def _cri(self, line: str) -> Iterator[tuple[str, str | None]]:
        match = _CRI.match(line)
        if match is None:
            if not line.strip():
                return
            raise FramingError("not a CRI log line")
        stamp, stream, tags, text = match.groups()
        joined = self._join(stream, text, final=tags.split(":")[0] != "P")
        if joined is not None:
            yield joined.rstrip("\r"), stamp
