"""Container framing: docker json-file and CRI records, partial pieces joined per stream."""

from __future__ import annotations

import json

import pytest

from exporter.parse.container import FrameDecoder, FramingError, detect_format

SPEC = "(APIServer pid=1) INFO 12-02 08:19:42 [metrics.py:120] SpecDecoding metrics: Accepted: 2 tokens, Drafted: 8 tokens"


def docker(text: str, stream: str = "stdout", time: str = "2026-12-02T08:19:42.123456789Z") -> str:
    return json.dumps({"log": text, "stream": stream, "time": time})


def decode_all(decoder: FrameDecoder, lines: list[str]) -> list[tuple[str, str | None]]:
    return [item for line in lines for item in decoder.decode(line)]


def test_detection():
    assert detect_format(docker(SPEC + "\n")) == "docker"
    assert detect_format(f"2026-12-02T08:19:42.123456789Z stdout F {SPEC}") == "cri"
    assert detect_format(SPEC) == "plain"


def test_docker_pieces_are_joined_until_the_newline():
    decoder = FrameDecoder("auto")
    out = decode_all(decoder, [docker(SPEC[:40]), docker("noise\n", stream="stderr"), docker(SPEC[40:] + "\n")])
    assert [text for text, _ in out] == ["noise", SPEC]
    assert out[1][1] == "2026-12-02T08:19:42.123456789Z"


def test_cri_partial_pieces_are_joined_until_f():
    decoder = FrameDecoder("cri")
    lines = [
        f"2026-12-02T08:19:42.1Z stdout P {SPEC[:30]}",
        "2026-12-02T08:19:42.2Z stderr F other stream",
        f"2026-12-02T08:19:42.3Z stdout P {SPEC[30:60]}",
        f"2026-12-02T08:19:42.4Z stdout F {SPEC[60:]}",
        "2026-12-02T08:19:42.5Z stdout F ",  # an empty line
    ]
    assert [text for text, _ in decode_all(decoder, lines)] == ["other stream", SPEC, ""]


def test_plain_passes_through_and_auto_keeps_its_decision():
    decoder = FrameDecoder("auto")
    assert decode_all(decoder, ["", SPEC, docker("x\n")]) == [(SPEC, None), (docker("x\n"), None)]


def test_reset_detects_again_and_drops_unfinished_pieces():
    decoder = FrameDecoder("auto")
    decode_all(decoder, [docker(SPEC[:10])])
    decoder.reset()
    assert decode_all(decoder, [SPEC]) == [(SPEC, None)]


@pytest.mark.parametrize("log_format, line", [("docker", "not json"), ("docker", '{"stream": "stdout"}'), ("cri", "no time here")])
def test_bad_records_raise_framing_error(log_format, line):
    with pytest.raises(FramingError):
        list(FrameDecoder(log_format).decode(line))
