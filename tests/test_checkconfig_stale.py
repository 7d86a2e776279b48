"""check-config on config.json files gone stale the ways they really do (issue #32, item 5): each field
its own weights (tensor shapes from the safetensors header) or its target contradict, one fixture per
field, on the seed incident's real drafter and target (tests/golden/vllm-0.26.0/seed-incident: the
run's configs and safetensors headers); and the command the verdict's advice gives is the command
that works."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import GOLDEN

from exporter.config import DeriveSettings
from exporter.judge.checkconfig import check, exit_status, load_model
from exporter.report.analyze import AnalyzeOptions, analyze

SEED = GOLDEN / "vllm-0.26.0" / "seed-incident"


def drafter_with(tmp_path: Path, name: str = "drafter", **changes: Any) -> Path:
    """The run's working drafter (its config.json and safetensors header), its config.json changed."""
    directory = tmp_path / name
    shutil.copytree(SEED / "drafter-fixed", directory)
    config = json.loads((directory / "config.json").read_text())
    for key, value in changes.items():
        if "." in key:
            outer, inner = key.split(".")
            config[outer][inner] = value
        else:
            config[key] = value
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def target_with(tmp_path: Path, **changes: Any) -> Path:
    return drafter_with(tmp_path, "target", **changes) if changes else SEED / "target"


def findings(drafter: Path, target: Path | None = None, **options: Any) -> list[tuple[str, str]]:
    return [(f.severity, f.field) for f in check(load_model(str(drafter)), load_model(str(target or SEED / "target")), **options)]


# Each: how the file went stale, the change, what check-config must say
STALE = [
    pytest.param({"num_hidden_layers": 12}, ("error", "num_hidden_layers"), id="layers-of-the-12-layer-sibling"),
    pytest.param({"hidden_size": 768}, ("error", "hidden_size"), id="width-of-a-bigger-sibling"),
    pytest.param({"intermediate_size": 2048}, ("error", "intermediate_size"), id="mlp-of-a-sibling"),
    pytest.param({"vocab_size": 8064}, ("error", "vocab_size"), id="vocabulary-padded-to-64-by-another-release"),
    pytest.param({"num_attention_heads": 16}, ("error", "num_attention_heads"), id="heads-of-a-sibling"),
    pytest.param({"num_key_value_heads": 2}, ("error", "num_key_value_heads"), id="kv-heads-of-a-gqa-sibling"),
    pytest.param({"rope_parameters.rope_theta": 500000.0}, ("warning", "rope_theta"), id="llama-3-rope-base-for-a-llama-2-style-target"),
    pytest.param({"eos_token_id": 2}, ("warning", "eos_token_id"), id="another-familys-end-token"),
]


@pytest.mark.parametrize(("changes", "finding"), STALE)
def test_each_stale_field_is_named(tmp_path, changes, finding):
    found = findings(drafter_with(tmp_path, **changes))
    assert finding in found, found
    assert len([f for f in found if f[0] in ("error", "warning")]) == 1  # one cause, one finding


def test_the_working_drafter_is_clean():
    assert findings(SEED / "drafter-fixed", k=8, method="draft_model", vllm_version="0.26.0", max_model_len=2048) == []


def test_a_drafter_shorter_than_its_targets_context(tmp_path):
    """The posted case: a drafter shipped with max_position_embeddings 2048 for a 32k target; vLLM capped
    and clamped its positions and acceptance collapsed past 2048."""
    long_target = drafter_with(tmp_path, "target", max_position_embeddings=32768)
    assert findings(SEED / "drafter-fixed", long_target) == [("warning", "max_position_embeddings")]  # unless served shorter
    assert findings(SEED / "drafter-fixed", long_target, max_model_len=8192) == [("error", "max_position_embeddings")]
    assert findings(SEED / "drafter-fixed", long_target, max_model_len=2048) == []


def _safetensors(path: Path, shapes: dict[str, list[int]]) -> None:
    """A valid safetensors file of zeros (8-byte header length, the JSON header, the data)."""
    header: dict[str, Any] = {}
    offset = 0
    for name, shape in shapes.items():
        size = 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(offset))


def test_a_tiny_gqa_checkpoint_built_here_against_a_config_without_gqa(tmp_path):
    directory = tmp_path / "tiny"
    directory.mkdir()
    layer = "model.layers.{}."
    shapes = {"model.embed_tokens.weight": [64, 16], "lm_head.weight": [64, 16], "model.norm.weight": [16]}
    for i in range(2):
        shapes |= {layer.format(i) + "self_attn.q_proj.weight": [16, 16], layer.format(i) + "self_attn.k_proj.weight": [4, 16],
                   layer.format(i) + "self_attn.v_proj.weight": [4, 16], layer.format(i) + "mlp.gate_proj.weight": [48, 16]}
    _safetensors(directory / "model.safetensors", shapes)
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 16, "num_hidden_layers": 2, "intermediate_size": 48, "vocab_size": 64,
              "num_attention_heads": 4, "num_key_value_heads": 4, "tie_word_embeddings": False}
    (directory / "config.json").write_text(json.dumps(config))
    (tmp_path / "target.json").write_text(json.dumps({**config, "num_key_value_heads": 1}))
    found = check(load_model(str(directory)), load_model(str(tmp_path / "target.json")))
    assert [(f.severity, f.field, f.found) for f in found] == [("error", "num_key_value_heads", "4")]
    assert found[0].expected.startswith("1 (4 rows") and exit_status(found) == 2
    (directory / "config.json").write_text(json.dumps({**config, "num_key_value_heads": 1}))
    assert check(load_model(str(directory)), load_model(str(tmp_path / "target.json"))) == []


def broken_now(tmp_path: Path) -> dict[str, Any]:
    """analyze of the run's log up to the fixed life's start: the stale life is what is true now."""
    lines = (SEED / "server.log").read_text().splitlines(keepends=True)
    fixed_life = [i for i, line in enumerate(lines) if "non-default args" in line][2]
    stale_end = max(i for i, line in enumerate(lines[:fixed_life]) if "SpecDecoding metrics" in line)
    log = tmp_path / "server.log"
    log.write_text("".join(lines[: stale_end + 1]))
    (series,) = analyze([str(log)], DeriveSettings(), AnalyzeOptions(progress=False))["series"]
    return series  # type: ignore[no-any-return]


def test_the_advised_command_is_the_command_that_works(tmp_path):
    """The verdict's advice said `specdecode-exporter check-config DRAFTER TARGET`, which exited with
    "Got unexpected extra argument": run as written, with the run's drafter and target."""
    series = broken_now(tmp_path)
    assert series["health"] == "broken"
    advice = series["current_period"]["advice"]
    (command,) = re.findall(r"specdecode-exporter (check-config [A-Z ]+)\)", advice)
    words = [{"DRAFTER": str(SEED / "drafter-stale"), "TARGET": str(SEED / "target")}.get(word, word) for word in command.split()]
    done = subprocess.run([sys.executable, "-m", "exporter", *words], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "tie_word_embeddings" in done.stdout and "1 errors" in done.stdout
    fixed = [str(SEED / "drafter-fixed") if word == str(SEED / "drafter-stale") else word for word in words]
    assert subprocess.run([sys.executable, "-m", "exporter", *fixed], capture_output=True, text=True, timeout=60).returncode == 0
    both = subprocess.run([sys.executable, "-m", "exporter", *words, "--target", str(SEED / "drafter-fixed")], capture_output=True, text=True,
                          timeout=60)
    assert both.returncode == 3 and "two targets" in both.stderr
