"""Values that cannot be and inputs that try to exhaust: the pure checks behind issue 26's findings."""

from __future__ import annotations

import base64
import json

import bcrypt
import pytest

from exporter.expose.app import parse_json
from exporter.expose.websecurity import REMEMBERED, WebSecurity
from exporter.plugin.records import MARK, VERSION, RecordError, decode


def interval(**overrides: object) -> str:
    record = {"kind": "interval", "engine": 0, "model_name": "m", "start": 1.0, "end": 2.0, "drafts": 10, "draft_tokens": 30,
              "accepted_tokens": 12, "accepted_per_position": [8, 3, 1], "draft_tokens_per_position": [10, 10, 10], **overrides}
    return json.dumps({MARK: VERSION, **record})  # NaN too: encode() refuses to write one, a foreign writer may not


@pytest.mark.parametrize("overrides", [
    {"start": float("nan")}, {"end": float("nan")}, {"end": float("inf")},
    {"accepted_per_position": [90, 0, 0], "accepted_tokens": 90, "draft_tokens": 100},  # A_0 = 9·D: a ratio of 9
    {"drafts": 0, "draft_tokens": 10, "accepted_tokens": 0, "accepted_per_position": [0, 0, 0]},  # D = 0 with T > 0
    {"drafts": 40, "draft_tokens": 30},  # T < D
])
def test_records_with_values_that_cannot_be_are_bad_values(overrides):
    with pytest.raises(RecordError) as raised:
        decode(interval(**overrides))
    assert raised.value.reason == "bad_value"


def test_a_sound_record_still_decodes():
    assert decode(interval()).drafts == 10  # type: ignore[union-attr]


def test_json_deeper_than_the_limit_is_refused_without_recursing():
    assert parse_json(b"[" * 200_000 + b"]" * 200_000, 32) is None  # was a RecursionError: 500
    assert parse_json(b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', 4) == {"a": "[" * 38}  # brackets in strings do not count
    assert parse_json(json.dumps({"model_name": "m"}).encode(), 32) == {"model_name": "m"}


def _header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_wrong_passwords_cannot_flush_the_remembered_good_ones(tmp_path):
    config = tmp_path / "web.yml"
    config.write_text(json.dumps({"basic_auth_users": {"prometheus": bcrypt.hashpw(b"good", bcrypt.gensalt(rounds=4)).decode()}}))
    security = WebSecurity(str(config))
    assert security.authorized(_header("prometheus", "good"))
    for attempt in range(REMEMBERED + 10):  # was: over 1,024 distinct wrong answers cleared the cache, good ones too
        assert not security.authorized(_header("prometheus", f"wrong {attempt}"))
    assert security.quick(_header("prometheus", "good")) is True  # still remembered: no bcrypt for it
    assert security.quick(_header("prometheus", "wrong 1")) is None  # a failure is never remembered
    assert not security.authorized(_header("nobody", "good"))  # checked against the dummy hash, refused
