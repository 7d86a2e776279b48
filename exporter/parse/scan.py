"""Find the few log lines that can matter inside a block of many, without touching the rest.

A vLLM log is mostly uvicorn access lines; about one line in forty is a spec-decode or engine
line. Every line that can matter contains one of MARKERS, so a block of complete lines is scanned
once for all markers together (Hyperscan: one SIMD pass, the way grep scans, instead of one
`bytes.find` pass per marker) and only the lines around the hits are cut out and decoded. Lines
without a marker cost no Python work at all.
"""

from __future__ import annotations

import threading
from typing import Any

from exporter.parse.anchor import continues
from exporter.parse.envelope import parse_envelope, strip_ansi
from exporter.parse.vllm_log import logo_version

CONTINUED_PREFIX_BYTES = 4096  # of a line before a continued one: its prefix (process, VLLM_LOGGING_PREFIX, level, stamp, file)

# Substrings that every line worth parsing contains; the interpreter decides what each hit is.
MARKERS: tuple[str, ...] = (
    "metrics: ",  # V1 `SpecDecoding metrics: `, V0 `Speculative metrics: `
    "Mean acceptance length: ",  # a V1-c/d/e body pasted without its label (vllm_log.BODY_STARTS)
    "Draft acceptance rate: ",  # a V0, V1-a/b/c/d body pasted without its label
    "Engine ",  # V1 `Engine 000:` — not the `(EngineCore pid=…)` prefix
    "Engines Aggregated",  # V1 with several API servers
    "non-default args",  # V1 startup config
    "LLM engine",  # `Initializing a V1 LLM engine (v…) with config:` and V0's
    "Model Runner V2 does not",  # ≥ 0.32 fell back to the V1 model runner: n-gram drafts vary again
    "accept len: ",  # SGLang decode batches
    '{"specdecode_plugin":',  # records of our vLLM plugin (exporter/plugin/records.py)
    "SpecDecoding timing",  # a fork's per-step timing line: counted as seen (vllm_log.SEEN_LINES), never a spec line
    "server version ",  # the version banner (`vLLM server version 0.34.0, serving model …`)
    "  version ",  # the logo's version line, where a posted log elided `Initializing … (...)`
)


def might_matter(text: str) -> bool:
    """Cheap substring tests, so a single line that cannot matter never reaches a regex."""
    return any(map(text.__contains__, MARKERS))


_database: Any = None  # hyperscan.Database; imported on first use, so `import exporter` stays light
_compile_lock = threading.Lock()


def _shared_database() -> Any:
    """One compiled database for the process; each scanner brings its own scratch space."""
    import hyperscan

    global _database
    with _compile_lock:
        if _database is None:
            database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            literals = [marker.encode() for marker in MARKERS]
            database.compile(expressions=literals, ids=list(range(len(literals))), elements=len(literals))
            _database = database
        return _database


class LineScanner:
    """Cuts the lines holding a marker out of a block of complete lines. One per thread (and per
    upstream: it remembers how the previous block ended, for a record continued across blocks)."""

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        import hyperscan

        self._database = _shared_database()
        self._scratch = hyperscan.Scratch(self._database)  # a scratch space is not thread-safe
        self.too_long = 0
        self._last_line = b""  # the previous block's last line, where it ended with \r (a message went on)

    def scan(self, block: bytes) -> list[str]:
        """The decoded lines of `block` (lines joined by b"\\n") that contain a marker, in order —
        not those continuing another record's message (anchor.continues), but for the logo's version."""
        ends: list[int] = []
        self._database.scan(block, match_event_handler=lambda _id, _start, end, _flags, _ctx: ends.append(end),
                            scratch=self._scratch)
        previous_block_line, self._last_line = self._last_line, block[block.rfind(b"\n") + 1 :][:CONTINUED_PREFIX_BYTES]
        if not self._last_line.endswith(b"\r"):
            self._last_line = b""
        if not ends:
            return []
        if len(ends) > 1:
            ends.sort()  # Hyperscan reports in end order per pattern set; be certain
        lines: list[str] = []
        cap, find, rfind = self.max_line_bytes, block.find, block.rfind
        line_end = -1
        for end in ends:
            if end <= line_end:
                continue  # a second marker in a line already taken
            start = rfind(b"\n", 0, end) + 1
            line_end = find(b"\n", end)
            if line_end < 0:
                line_end = len(block)
            if line_end - start > cap:
                self.too_long += 1
                continue
            text = block[start:line_end].decode("utf-8", errors="replace")
            if (start >= 2 and block[start - 2] == 13) or (start == 0 and previous_block_line):  # after a line ending in \r
                previous = block[rfind(b"\n", 0, start - 1) + 1 : start - 1] if start else previous_block_line
                if _continued(previous[:CONTINUED_PREFIX_BYTES].decode("utf-8", errors="replace"), text):
                    continue
            lines.append(text[:-1] if text.endswith("\r") else text)
        return lines


def _continued(previous: str, line: str) -> bool:
    """A line that continues another record's message (read as nothing), unless it is the logo's version line."""
    if not continues(strip_ansi(previous), strip_ansi(line)):
        return False
    envelope = parse_envelope(line)
    return envelope is None or not logo_version(envelope.message)
