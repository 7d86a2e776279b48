"""Acknowledging a new normal: the store's all-or-nothing rule, the HTTP endpoint and the CLI, with auth on and off."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import bcrypt
import httpx
import pytest
import yaml
from helpers import cli, running_exporter
from waiting import wait_until

from exporter.config import DeriveSettings
from exporter.expose.acknowledge import acknowledge
from exporter.intervals.pipeline import LogPipeline
from exporter.judge.memory import health_memory
from exporter.judge.status import snapshot_report
from exporter.simulate.longlog import LongLog, Phase
from exporter.simulate.scenarios import SCENARIOS
from exporter.state.reference import ReferenceRule
from exporter.state.store import Store

START = 1795000000.0
HOUR = 3600.0
SCENARIO = replace(SCENARIOS["drop-off"], drop_after=None)  # eagle3, k = 4, served as llama-3.1-8b
MODEL = SCENARIO.served_model_name


def dropped_log(path: Path) -> Path:
    LongLog([Phase(0, SCENARIO), Phase(2 * HOUR, SCENARIO, factor=0.6)], hours=3, start_time=START, log_interval=60.0).write(str(path))
    return path


def degraded_store(tmp_path: Path) -> Store:
    store = Store({"5m": 300.0}, health=health_memory(DeriveSettings(), ReferenceRule(), 300.0))
    log = dropped_log(tmp_path / "vllm.log")
    LogPipeline(store, "vllm.log", clock="log", year_reference=START + 10 * HOUR).consume(log.read_text().splitlines(), read_at=START)
    return store


def entry(store: Store) -> dict[str, Any]:
    (series,) = snapshot_report(store.snapshot(), DeriveSettings())["series"]
    return series  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"model_name": "nope"}, 404, "no series matches model_name=nope; known: llama-3.1-8b"),
        ({"model_name": MODEL, "engine": "7"}, 404, "no series matches"),
        ({"model_name": MODEL, "config": {"num_speculative_tokens": 5}}, 409, "runs method eagle3, k = 4"),
        ({"model_name": MODEL, "config": {"method": "ngram"}}, 409, "not method ngram"),
        ({"model_name": MODEL, "config": {"num_speculative_tokens": "four"}}, 400, "positive integer"),
        ({"engine": "0"}, 400, "model_name is required"),
        ({"model_name": MODEL, "colour": "red"}, 400, "unknown field(s) ['colour']"),
        ([MODEL], 400, "expected a JSON object"),
    ],
)
def test_a_bad_acknowledgement_is_a_clear_error_and_changes_nothing(tmp_path, body, status, message):
    store = degraded_store(tmp_path)
    before = entry(store)
    assert before["health"] == "degraded"
    code, answer = acknowledge(store, DeriveSettings(), body, "test")
    assert code == status and message in answer["error"]
    assert entry(store) == before


def test_an_acknowledgement_makes_the_drop_the_new_normal_and_keeps_the_old_reference(tmp_path):
    store = degraded_store(tmp_path)
    before = entry(store)
    code, answer = acknowledge(store, DeriveSettings(), {"model_name": MODEL, "engine": "0", "config": {"num_speculative_tokens": 4}}, "test")
    assert code == 200
    (acked,) = answer["acknowledged"]
    assert acked["reference"]["mean_acceptance_length"] < before["reference"]["mean_acceptance_length"] - 0.3
    after = entry(store)
    assert after["health"] in ("ok", "wasteful") and after["reference_adopted"]["how"] == "acknowledged"
    (old,) = after["previous_references"]
    assert old["retired"] == "acknowledged" and old["mean_acceptance_length"] == before["reference"]["mean_acceptance_length"]


def _post(url: str, body: object, auth: tuple[str, str] | None = None) -> httpx.Response:
    return httpx.post(url + "/api/v1/acknowledge", json=body, auth=auth, timeout=10)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli("acknowledge", *args), capture_output=True, text=True, timeout=60)


@pytest.mark.slow  # a running sidecar and the CLI as processes
@pytest.mark.parametrize("secured", [False, True])
def test_http_and_cli_acknowledge_on_a_running_sidecar(tmp_path, secured):
    log = dropped_log(tmp_path / "vllm.log")
    args = ["--log", str(log), "--from-start", "--health-window", "1h", "--window", "1h"]
    auth: tuple[str, str] | None = None
    if secured:
        config = tmp_path / "web.yml"
        config.write_text(yaml.safe_dump({"basic_auth_users": {"ops": bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()}}))
        args += ["--web-config-file", str(config)]
        auth = ("ops", "s3cret")
    sidecar_log = tmp_path / "sidecar.log"
    with running_exporter(*args, log=sidecar_log) as sidecar:
        base_url = sidecar.base_url

        def series() -> dict[str, Any] | None:
            assert sidecar.process.poll() is None, sidecar_log.read_text()
            found = httpx.get(base_url + "/api/v1/status", auth=auth, timeout=5).json()["series"]
            return found[0] if found and found[0]["reference"]["drafts"] > 0 else None

        wait_until(series, "the log's series")
        if secured:
            assert _post(base_url, {"model_name": MODEL}).status_code == 401  # no credentials: nothing changes
            refused = _cli("--url", base_url, "--model-name", MODEL, "--user", "ops", "--password", "wrong")
            assert refused.returncode == 1 and "refused (401)" in refused.stderr
        bad = _post(base_url, {"model_name": "nope"}, auth)
        assert bad.status_code == 404 and "no series matches" in bad.json()["error"]
        credentials = ["--user", "ops", "--password", "s3cret"] if secured else []
        wrong = _cli("--url", base_url, "--model-name", MODEL, "--config-k", "8", *credentials)
        assert wrong.returncode == 1 and "refused (409)" in wrong.stderr and "k = 4" in wrong.stderr
        unchanged = series()
        assert unchanged is not None and unchanged["reference_adopted"] is None  # the refusals changed nothing
        done = _cli("--url", base_url, "--model-name", MODEL, "--engine", "0", "--config-k", "4", *credentials)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"acknowledged {MODEL} engine 0 (log, {log})")
        after = series()
        assert after is not None and after["reference_adopted"]["how"] == "acknowledged"
        assert after["previous_references"][0]["retired"] == "acknowledged"
    output = sidecar_log.read_text()
    assert "acknowledgement refused" in output and f"acknowledged by={'ops@' if secured else ''}127.0.0.1" in output
