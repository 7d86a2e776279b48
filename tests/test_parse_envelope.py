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


@pytest.mark.parametrize("line, pid, stamp, dated", [
    ("SpecDecoding metrics: Accepted: 1 tokens", None, "", None),  # %(message)s
    ("2024-07-24T10:00:10.123Z vllm-0 SpecDecoding metrics: Accepted: 1 tokens", None, "07-24 10:00:10", "2024-07-24T10:00:10.123+00:00"),
    ("2024-07-24 10:00:10 | pod-a | SpecDecoding metrics: Accepted: 1 tokens", None, "07-24 10:00:10", "2024-07-24T10:00:10"),
    ("07-24 10:00:10 pid=7 SpecDecoding metrics: Accepted: 1 tokens", 7, "07-24 10:00:10", None),  # vLLM's datefmt, custom format
])
def test_a_message_only_line_gets_its_message_and_what_its_prefix_tells(line, pid, stamp, dated):
    from exporter.parse.envelope import parse_bare

    envelope = parse_bare(line)
    assert envelope is not None and envelope.message == "SpecDecoding metrics: Accepted: 1 tokens"
    assert (envelope.pid, envelope.month_day_time, envelope.dated) == (pid, stamp, dated)


def test_a_quoted_marker_is_no_record_and_an_indented_line_keeps_its_envelope():
    from exporter.parse.envelope import parse_bare

    assert parse_bare("error: could not parse 'SpecDecoding metrics: Accepted: 1 tokens'") is None
    envelope = parse_envelope("   (APIServer pid=9) INFO 07-24 10:00:10 [metrics.py:101] SpecDecoding metrics: x")
    assert envelope is not None and (envelope.pid, envelope.month_day_time) == (9, "07-24 10:00:10")


def test_records_run_together_are_cut_where_the_next_envelope_starts():
    from exporter.parse.envelope import split_records

    one = "(APIServer pid=9) INFO 07-24 10:00:10 [metrics.py:101] SpecDecoding metrics: a, Avg Draft acceptance rate: 61.4%"
    two = "(APIServer pid=9) INFO 07-24 10:00:20 [loggers.py:335] Engine 000: Avg prompt throughput: 1.0 tokens/s"
    assert split_records(one + two) == [one, two]
    assert split_records(one) is None
    assert split_records("(APIServer pid=9) [pod-a] INFO 07-24 10:00:10 [metrics.py:101] x") is None  # a prefix is not a record
