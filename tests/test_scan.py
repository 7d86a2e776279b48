"""The block scanner: only lines holding a marker come out, whole, in order, once each."""

from __future__ import annotations

from exporter.parse.scan import MARKERS, LineScanner, might_matter


def test_only_marker_lines_come_out_whole_in_order_and_once():
    block = (
        b'INFO:     127.0.0.1:1 - "GET /metrics HTTP/1.1" 200 OK\n'
        b"(APIServer pid=1) INFO 12-02 08:19:44 [loggers.py:273] Engine 000: Avg prompt throughput: 1.0 tokens/s\r\n"
        b"noise\n"
        b"x SpecDecoding metrics: Accepted: 1 tokens, Engine 001: both markers in one line\n"
        b'{"specdecode_plugin":1,"kind":"config"}'
    )
    assert LineScanner(1 << 20).scan(block) == [
        "(APIServer pid=1) INFO 12-02 08:19:44 [loggers.py:273] Engine 000: Avg prompt throughput: 1.0 tokens/s",
        "x SpecDecoding metrics: Accepted: 1 tokens, Engine 001: both markers in one line",
        '{"specdecode_plugin":1,"kind":"config"}',
    ]


def test_a_marker_line_over_the_cap_is_counted_and_skipped():
    scanner = LineScanner(max_line_bytes=100)
    block = b"SpecDecoding metrics: " + b"9" * 200 + b"\nshort SpecDecoding metrics: ok"
    assert scanner.scan(block) == ["short SpecDecoding metrics: ok"]
    assert scanner.too_long == 1


def test_the_scanner_and_the_per_line_test_agree_on_every_marker():
    for marker in MARKERS:
        line = f"prefix {marker} suffix"
        assert might_matter(line) and LineScanner(1 << 20).scan(f"a\n{line}\nb".encode()) == [line]
    assert not might_matter("Engines are fine") and LineScanner(1 << 20).scan(b"Engines are fine") == []
