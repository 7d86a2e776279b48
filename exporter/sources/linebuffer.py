"""Frame bytes into lines: keep a partial last line until its newline arrives; cap line length."""

from __future__ import annotations

DEFAULT_MAX_LINE_BYTES = 1 << 20


class LineBuffer:
    """Accumulates chunks; yields complete lines. A line longer than the cap is counted, not kept."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._partial = bytearray()
        self._skipping = False  # inside an over-long line: drop bytes until its newline
        self.too_long = 0

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held back."""
        return len(self._partial)

    def feed(self, chunk: bytes) -> list[str]:
        lines: list[str] = []
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                break
            self._take(chunk[start:newline], lines, complete=True)
            start = newline + 1
        self._take(chunk[start:], lines, complete=False)
        return lines

    def _take(self, piece: bytes, lines: list[str], *, complete: bool) -> None:
        if self._skipping:
            if complete:
                self._skipping = False
            return
        if len(self._partial) + len(piece) > self.max_line_bytes:
            self.too_long += 1
            self._partial.clear()
            self._skipping = not complete
            return
        if not complete:
            self._partial += piece
            return
        if self._partial:
            piece = bytes(self._partial) + piece
            self._partial.clear()
        lines.append(piece.decode("utf-8", errors="replace").rstrip("\r"))

    def flush(self) -> list[str]:
        """The writer is done with this file: an unfinished last line counts as a line."""
        self._skipping = False
        if not self._partial:
            return []
        text = self._partial.decode("utf-8", errors="replace").rstrip("\r")
        self._partial.clear()
        return [text]

    def discard(self) -> int:
        """Drop an unfinished line (the file was truncated under it); return its size."""
        size = len(self._partial)
        self._partial.clear()
        self._skipping = False
        return size
