"""Frame bytes into lines: keep a partial last line until its newline arrives; cap line length."""

from __future__ import annotations

DEFAULT_MAX_LINE_BYTES = 1 << 20


class LineBuffer:
    """Accumulates chunks; hands out complete lines. A line longer than the cap is counted, not kept."""

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._partial = bytearray()
        self._skipping = False  # inside an over-long line: drop bytes until its newline
        self.too_long = 0

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held back."""
        return len(self._partial)

    def feed(self, chunk: bytes) -> bytes | None:
        """The complete lines `chunk` finishes, as one block joined by b"\\n" (None: none yet).

        Lines stay bytes in one block: the scanner cuts out the few that matter, so the rest are
        never split, decoded or looked at one by one.
        """
        if self._skipping:  # still inside an over-long line: drop up to its newline
            newline = chunk.find(b"\n")
            if newline < 0:
                return None
            self._skipping = False
            chunk = chunk[newline + 1 :]
        last = chunk.rfind(b"\n")
        if last < 0:
            self._hold(chunk)
            return None
        block = bytes(self._partial) + chunk[:last] if self._partial else chunk[:last]
        self._partial.clear()
        self._hold(chunk[last + 1 :])
        return block

    def _hold(self, piece: bytes) -> None:
        """Keep an unfinished line, unless it already exceeds the cap (then skip to its end)."""
        if len(self._partial) + len(piece) > self.max_line_bytes:
            self.too_long += 1
            self._partial.clear()
            self._skipping = True
            return
        self._partial += piece

    def flush(self) -> bytes | None:
        """The writer is done with this file: an unfinished last line counts as a line."""
        self._skipping = False
        if not self._partial:
            return None
        block = bytes(self._partial)
        self._partial.clear()
        return block

    def discard(self) -> int:
        """Drop an unfinished line (the file was truncated under it); return its size."""
        size = len(self._partial)
        self._partial.clear()
        self._skipping = False
        return size


def split_lines(block: bytes, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> tuple[list[str], int]:
    """(the decoded lines of `block`, how many were over the cap and dropped), for line-by-line paths."""
    text = block.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if "\r" in text:  # CRLF endings: drop the \r that ends a line
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if len(block) <= max_line_bytes or max(map(len, lines)) <= max_line_bytes // 4:
        return lines, 0  # characters ≤ bytes, so only then can a line be too long
    kept = [line for line in lines if len(line.encode("utf-8", errors="replace")) <= max_line_bytes]
    return kept, len(lines) - len(kept)
