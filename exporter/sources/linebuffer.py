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
        """Return the lines completed by `chunk`; split and decoded per chunk, not per line."""
        if self._skipping:  # still inside an over-long line: drop up to its newline
            newline = chunk.find(b"\n")
            if newline < 0:
                return []
            self._skipping = False
            chunk = chunk[newline + 1 :]
        last = chunk.rfind(b"\n")
        if last < 0:
            self._hold(chunk)
            return []
        block = bytes(self._partial) + chunk[:last] if self._partial else chunk[:last]
        self._partial.clear()
        self._hold(chunk[last + 1 :])
        text = block.decode("utf-8", errors="replace")
        lines = text.split("\n")
        if "\r" in text:  # CRLF endings: drop the \r that ends a line
            lines = [line[:-1] if line.endswith("\r") else line for line in lines]
        if len(block) > self.max_line_bytes and max(map(len, lines)) > self.max_line_bytes // 4:
            # characters ≤ bytes, so only then can a line be too long; measure those in bytes
            kept = [line for line in lines if len(line.encode("utf-8", errors="replace")) <= self.max_line_bytes]
            self.too_long += len(lines) - len(kept)
            lines = kept
        return lines

    def _hold(self, piece: bytes) -> None:
        """Keep an unfinished line, unless it already exceeds the cap (then skip to its end)."""
        if len(self._partial) + len(piece) > self.max_line_bytes:
            self.too_long += 1
            self._partial.clear()
            self._skipping = True
            return
        self._partial += piece

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
