"""check-config on configs written for the tests: a clean pair, one fault at a time, the real case."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.judge.checkconfig import ModelFiles, check, drafter_kind, exit_status, load_model

CONFIGS = Path(__file__).parent / "golden" / "configs"
TARGET = load_model(str(CONFIGS / "qwen3.5-35b-a3b"))
GOOD = load_model(str(CONFIGS / "dflash-good"))


def with_changes(base: ModelFiles, **changes) -> ModelFiles:  # type: ignore[no-untyped-def]
    config = copy.deepcopy(dict(base.config))
    for key, value in changes.items():
        if "." in key:
            outer, inner = key.split(".")
            config[outer][inner] = value
        elif value is None:
            config.pop(key, None)
        else:
            config[key] = value
    return ModelFiles(base.path, config, base.tensor_shapes, base.added_token_ids)


def problems(findings, severity: str = "error") -> set[str]:  # type: ignore[no-untyped-def]
    return {f.field for f in findings if f.severity == severity}


def test_the_good_pair_is_clean():
    findings = check(GOOD, TARGET, k=15)
    assert exit_status(findings) == 0
    assert problems(findings) == set() and problems(findings, "warning") == set()


@pytest.mark.parametrize(
    "changes, severity, field",
    [
        ({"dflash_config.mask_token_id": 300000}, "error", "dflash_config.mask_token_id"),  # outside the vocabulary
        ({"dflash_config.mask_token_id": 1234}, "warning", "dflash_config.mask_token_id"),  # an ordinary token
        ({"dflash_config.mask_token_id": None}, "error", "dflash_config.mask_token_id"),
        ({"dflash_config.target_layer_ids": [1, 6, 11, 16, 22, 27, 32, 40]}, "error", "dflash_config.target_layer_ids"),  # past the depth
        ({"dflash_config.target_layer_ids": [1, 2, 3, 4, 5, 6, 7, 8]}, "warning", "dflash_config.target_layer_ids"),  # from a shallower target
        ({"dflash_config.target_layer_ids": [6, 1, 11, 16, 22, 27, 32, 37]}, "warning", "dflash_config.target_layer_ids"),
        ({"dflash_config.target_layer_ids": [1, 6, 11, 16, 22]}, "error", "dflash_config.target_layer_ids"),  # fc width mismatch
        ({"num_target_layers": 36}, "error", "num_target_layers"),
        ({"target_hidden_size": 4096}, "error", "target_hidden_size"),
        ({"layer_types": ["sliding_attention"] * 5}, "error", "layer_types"),  # length 5 for 6 layers
        ({"layer_types": ["sliding_attention"] * 5 + ["linear_attention"]}, "error", "layer_types"),
        ({"sliding_window": None}, "error", "sliding_window"),
        ({"vocab_size": 151936}, "error", "vocab_size"),
    ],
)
def test_each_fault_is_found(changes, severity, field):
    findings = check(with_changes(GOOD, **changes), TARGET, k=15)
    assert field in problems(findings, severity), list(findings)
    assert all(f.found and f.expected and f.why for f in findings)


def test_k_above_the_block_size():
    assert "num_speculative_tokens" in problems(check(GOOD, TARGET, k=16))


def test_the_real_case_faults_are_each_caught_with_a_clear_message():
    findings = check(load_model(str(CONFIGS / "dflash-real-case")), TARGET, k=15)
    by_field = {f.field: f for f in findings if f.severity == "error"}
    assert "outside the vocabulary" in by_field["dflash_config.mask_token_id"].why
    assert "40" in by_field["num_target_layers"].expected  # the capture layers were set up for another target
    assert "dflash_config.target_layer_ids" in by_field
    assert "length mismatch" in by_field["layer_types"].why
    assert "sliding_window" in by_field
    assert exit_status(findings) == 2


@pytest.mark.parametrize(
    "config, kind",
    [
        ({"architectures": ["DFlashDraftModel"]}, "dflash"),
        ({"architectures": ["LlamaForCausalLMEagle3"]}, "eagle3"),
        ({"architectures": ["EagleLlamaForCausalLM"]}, "eagle"),
        ({"architectures": ["DeepseekV3ForCausalLM"], "num_nextn_predict_layers": 1}, "mtp"),
        ({"architectures": ["LlamaForCausalLM"]}, "draft_model"),
    ],
)
def test_drafter_kinds(config, kind):
    assert drafter_kind(config) == kind


def test_eagle3_mtp_and_draft_model_checks():
    eagle3 = ModelFiles("e", {"architectures": ["LlamaForCausalLMEagle3"], "hidden_size": 2048, "eagle_aux_hidden_state_layer_ids": [2, 20, 41], "vocab_size": 248320}, {}, None)
    assert "eagle_aux_hidden_state_layer_ids" in problems(check(eagle3, TARGET))
    mtp = ModelFiles("m", {"architectures": ["X"], "num_nextn_predict_layers": 1, "vocab_size": 248320}, {}, None)
    assert "num_speculative_tokens" in problems(check(mtp, TARGET, k=3), "warning")
    small = ModelFiles("d", {"architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936}, {}, None)
    assert "vocab_size" in problems(check(small, TARGET))


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exporter", "check-config", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.slow  # the CLI as a process
def test_cli_exit_statuses_and_json(tmp_path):
    assert run(str(CONFIGS / "dflash-good"), "--target", str(CONFIGS / "qwen3.5-35b-a3b")).returncode == 0
    real = run(str(CONFIGS / "dflash-real-case"), "--target", str(CONFIGS / "qwen3.5-35b-a3b"), "--format", "json")
    assert real.returncode == 2
    document = json.loads(real.stdout)
    assert document["kind"] == "dflash" and document["status"] == 2
    assert {"severity", "field", "found", "expected", "why"} <= set(document["findings"][0])
    warn = tmp_path / "config.json"
    warn.write_text(json.dumps({**dict(GOOD.config), "dflash_config": {**GOOD.config["dflash_config"], "mask_token_id": 1234}}))
    assert run(str(warn), "--target", str(CONFIGS / "qwen3.5-35b-a3b")).returncode == 1
    missing = run(str(tmp_path / "nope"))
    assert missing.returncode == 3 and "cannot read" in missing.stderr


SEED_INCIDENT = Path(__file__).parent / "golden" / "vllm-0.26.0" / "seed-incident"


def test_the_seed_incident_stale_drafter_is_named_by_its_tied_head():
    """The real run's stale config.json (tests/golden/vllm-0.26.0/seed-incident/): vLLM loaded it
    without a word and position-0 acceptance fell from 61% to 0%. Found against its own weights."""
    target = load_model(str(SEED_INCIDENT / "target"))
    stale = check(load_model(str(SEED_INCIDENT / "drafter-stale")), target, k=8, method="draft_model", vllm_version="0.26.0")
    assert [(f.severity, f.field, f.found) for f in stale] == [("error", "tie_word_embeddings", "true")]
    assert "lm_head.weight" in stale[0].expected and "skips" in stale[0].why
    fixed = check(load_model(str(SEED_INCIDENT / "drafter-fixed")), target, k=8, method="draft_model", vllm_version="0.26.0")
    assert fixed == []


def test_an_untied_draft_model_without_its_head_is_an_error():
    drafter = load_model(str(SEED_INCIDENT / "drafter-fixed"))
    headless = ModelFiles(drafter.path, drafter.config, {k: v for k, v in drafter.tensor_shapes.items() if k != "lm_head.weight"}, None)
    assert [(f.field, f.found) for f in check(headless, None) if f.severity == "error"] == [("tie_word_embeddings", "false")]
    assert problems(check(ModelFiles(drafter.path, drafter.config, {}, None), None)) == set()  # no weights: nothing to compare
