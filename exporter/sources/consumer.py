"""What a log source hands its bytes to: one consumer per upstream, made by a factory the CLI wires.

A source knows how to read (follow, rotate, resume, stdin) and nothing of what the bytes mean; the
interval stage's LogPipeline is the consumer in `serve`, and a source never imports it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from exporter.config import LogFormat
from exporter.vocabulary import SourceKind


class LogConsumer(Protocol):
    """Takes one upstream's lines: whole blocks from a followed file, raw chunks from stdin."""

    @property
    def upstream(self) -> str: ...

    @property
    def too_long(self) -> int:
        """Over-long lines the consumer dropped itself (a followed file counts its own)."""
        ...

    def consume_block(self, block: bytes, read_at: float) -> int: ...

    def consume_bytes(self, chunk: bytes, read_at: float) -> int: ...

    def finish(self, read_at: float) -> None: ...

    def learn_config(self, lines: Iterable[str]) -> None: ...

    def learn_written(self, tail: bytes, modified: float, *, head: bytes = b"", born: float | None = None, opened: float | None = None) -> str | None:
        """The file's last and first bytes, modification and birth time, when it is opened: the log's
        zone where the file is the server's own (never a copy's); why not, if not."""
        ...

    def file_replaced(self) -> None: ...


class LogConsumerFactory(Protocol):
    """Makes the consumer of one upstream: `kind` is "log" or "plugin" (our plugin's record files)."""

    def __call__(self, upstream: str, *, kind: SourceKind, log_format: LogFormat) -> LogConsumer: ...
