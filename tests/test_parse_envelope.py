"""The envelope of a vLLM line: every process prefix × formatter layout × colour combination."""

from __future__ import annotations

import pytest

from exporter.parse.envelope import parse_envelope, strip_ansi

MESSAGE = "SpecDecoding metrics: Mean acceptance length: 2.37, Accepted: 89 tokens, Drafted: 975 tokens"

PROCESS_PREFIXES = [
    ("", None, None),
    ("(APIServer pid=1) ", "APIServer", 1),
    ("(APIServer pid=2236552) ", "APIServer", 2236552),
    ("(EngineCore_DP0 pid=77) ", "EngineCore_DP0", 77),
    ("(EngineCore pid=2054) ", "EngineCore", 2054),
    ("(Worker_DP0_PP0_TP1_EP1 pid=9) ", "Worker_DP0_PP0_TP1_EP1", 9),
]
FORMATTER_PREFIXES = [
    ("INFO 05-01 14:24:50 [metrics.py:101] ", "metrics.py"),  # ≥ v0.8: bracket before the file
    ("INFO 10-16 19:05:47 metrics.py:367] ", "metrics.py"),  # ≤ v0.7: no opening bracket
    ("INFO 05-01 14:24:50 [v1/spec_decode/metrics.py:101] ", "v1/spec_decode/metrics.py"),  # DEBUG-mode fileinfo
    ("INFO 05-01 14:24:50.123 [metrics.py:101] ", "metrics.py"),  # platform plugins add milliseconds
    ("myprefix INFO 05-01 14:24:50 [metrics.py:101] ", "metrics.py"),  # VLLM_LOGGING_PREFIX
]


def colour(process: str, formatter: str) -> str:
    """The same line as vLLM's ColoredFormatter and a TTY-coloured process prefix print it."""
    level, date, clock, rest = formatter.split(" ", 3)
    coloured_process = f"\x1b[0;36m{process.strip()}\x1b[0;0m " if process else ""
    return f"{coloured_process}\x1b[32m{level}\x1b[0m \x1b[90m{date} {clock}\x1b[0m \x1b[90m{rest.strip()}\x1b[0m "


COMBINATIONS = [
    (*process, *formatter, coloured)
    for process in PROCESS_PREFIXES
    for formatter in FORMATTER_PREFIXES
    for coloured in (False, True)
    if not (coloured and formatter[0].startswith("myprefix"))  # the colour layout has no custom prefix
]


@pytest.mark.parametrize("process, name, pid, formatter, source_file, coloured", COMBINATIONS)
def test_every_prefix_combination_yields_the_message(process, name, pid, formatter, source_file, coloured):
    line = (colour(process, formatter) if coloured else process + formatter) + MESSAGE
    envelope = parse_envelope(line)
    assert envelope is not None
    assert envelope.message == MESSAGE
    assert (envelope.process, envelope.pid) == (name, pid)
    assert envelope.level == "INFO"
    assert envelope.source_file == source_file


def test_carriage_return_and_trailing_newline_formatter_residue_are_stripped():
    envelope = parse_envelope("(APIServer pid=1) INFO 05-01 14:24:50 [metrics.py:101] " + MESSAGE + "\r")
    assert envelope is not None and envelope.message == MESSAGE


@pytest.mark.parametrize(
    "line",
    [
        "(EngineCore pid=2054) Loading safetensors checkpoint shards: 100% Completed | 1/1",
        "[W1202 08:19:32.711731218 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved.",
        "(APIServer pid=1954) INFO:     127.0.0.1:37902 - \"GET /health HTTP/1.1\" 200 OK",
        "",
    ],
)
def test_lines_without_the_formatter_layout_have_no_envelope(line):
    assert parse_envelope(line) is None


def test_strip_ansi_removes_all_csi_sequences():
    assert strip_ansi("\x1b[0;36m(APIServer pid=1)\x1b[0;0m \x1b[32mINFO\x1b[0m") == "(APIServer pid=1) INFO"
