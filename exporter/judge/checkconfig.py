"""`check-config`: lint a speculative drafter's config.json against its target's (reference §6.2).

The real case behind this tool lost days to a DFlash drafter whose config.json held stale values
(`mask_token_id`, `target_layer_ids`, `layer_types`, `sliding_window`): vLLM loaded it without a
word and acceptance fell to L 1.1. These checks are pure functions over the two JSON documents (and
the safetensors header, which names tensor shapes without loading weights).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from exporter.judge.config_fields import target_findings, weights_findings
from exporter.judge.methods import method_problem, runs_as
from exporter.judge.model_files import Finding, ModelFiles
from exporter.judge.model_files import field_of as _target
from exporter.judge.model_files import text as _text

__all__ = ["Finding", "ModelFiles", "check", "drafter_kind", "exit_status", "findings_json", "load_model", "safetensors_shapes"]

SEVERITIES = ("error", "warning", "info")
LAYER_TYPES = ("sliding_attention", "full_attention")


def load_model(path: str) -> ModelFiles:
    """Read `path` (a directory or a config.json); ValueError with a clear message if unusable."""
    location = Path(path)
    config_path = location / "config.json" if location.is_dir() else location
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"cannot read {config_path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{config_path} is not valid JSON: {error}") from None
    if not isinstance(config, dict):
        raise ValueError(f"{config_path} does not hold a JSON object")
    directory = config_path.parent
    shapes: dict[str, tuple[int, ...]] = {}
    for weights in sorted(directory.glob("*.safetensors")):
        shapes.update(safetensors_shapes(weights))
    return ModelFiles(str(location), config, shapes, _added_tokens(directory))


def safetensors_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Tensor shapes from a .safetensors header: 8-byte little-endian length, then JSON. No weights read."""
    try:
        with open(path, "rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8))
            if length > 100 << 20:
                return {}
            header = json.loads(handle.read(length))
    except (OSError, struct.error, ValueError):
        return {}
    return {name: tuple(entry["shape"]) for name, entry in header.items() if isinstance(entry, dict) and "shape" in entry}


def _added_tokens(directory: Path) -> frozenset[int] | None:
    try:
        tokenizer = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    decoder = tokenizer.get("added_tokens_decoder")
    if not isinstance(decoder, dict):
        return None
    return frozenset(int(key) for key in decoder if str(key).isdigit())


def drafter_kind(config: Mapping[str, Any]) -> str:
    """dflash | eagle3 | eagle | mtp | draft_model, from the architecture and the config's own sections."""
    architectures = " ".join(config.get("architectures") or []).lower()
    speculators = str(config.get("speculators_model_type", "")).lower()
    if "dflash" in architectures or "dflash_config" in config or speculators == "dflash":
        return "dflash"
    if "eagle3" in architectures or speculators == "eagle3" or "eagle_aux_hidden_state_layer_ids" in config:
        return "eagle3"
    if "eagle" in architectures or speculators == "eagle" or config.get("model_type") == "eagle":
        return "eagle"
    if "mtp" in architectures or "num_nextn_predict_layers" in config:
        return "mtp"
    return "draft_model"


def check(
    drafter: ModelFiles, target: ModelFiles | None, k: int | None = None, method: str | None = None, vllm_version: str | None = None,
    max_model_len: int | None = None,
) -> list[Finding]:
    """Every finding for this drafter (and target, when given; `max_model_len`: the length it is
    served with, where known), most severe first."""
    kind = drafter_kind(drafter.config)
    weights = weights_findings(drafter, kind)
    findings: list[Finding] = list(weights)
    if method is not None:
        problem = method_problem(method, vllm_version)
        if problem is not None:
            expected = f"a method of vLLM {vllm_version}" if problem[0] == "error" else runs_as(method)
            findings.append(Finding(problem[0], "method", method, expected, problem[1]))
    if kind == "dflash":
        findings += _dflash(drafter, target, k)
    elif kind in ("eagle", "eagle3"):
        findings += _eagle(drafter, target, kind)
    elif kind == "mtp":
        findings += _mtp(drafter, k)
    else:
        findings += _output_head(drafter)
    findings += _vocabulary(drafter, target, kind)
    findings += target_findings(drafter, target, kind, max_model_len)
    if target is None:
        findings.append(Finding("info", "--target", "absent", "the target's config.json", "checks against the target were skipped"))
    # one finding per field: where the weights already contradict a field (the first said), the target's word on it adds nothing
    said = {f.field for f in findings[: len(weights)]}
    findings = weights + [f for f in findings[len(weights):] if f.field not in said]
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))


def _dflash(drafter: ModelFiles, target: ModelFiles | None, k: int | None) -> list[Finding]:
    config = drafter.config
    dflash = config.get("dflash_config")
    out: list[Finding] = []
    if not isinstance(dflash, dict):
        out.append(Finding("warning", "dflash_config", _text(dflash), "an object", "vLLM reads mask_token_id and target_layer_ids from it"))
        dflash = {}
    out += _mask_token(drafter, target, dflash)
    out += _capture_layers(drafter, target, dflash)
    out += _layer_types(config, dflash)
    block = dflash.get("block_size", config.get("block_size"))
    if k is not None and isinstance(block, int) and k > block - 1:
        out.append(Finding("error", "num_speculative_tokens", str(k), f"at most {block - 1} (block_size − 1)",
                           "DFlash is trained to fill block_size − 1 mask positions; positions past that are never right"))
    return out


def _mask_token(drafter: ModelFiles, target: ModelFiles | None, dflash: Mapping[str, Any]) -> list[Finding]:
    mask = dflash.get("mask_token_id", drafter.config.get("mask_token_id"))
    field = "dflash_config.mask_token_id"
    if mask is None:
        return [Finding("error", field, "absent", "the id of the mask token", "vLLM refuses to start a DFlash drafter without it")]
    if not isinstance(mask, int) or isinstance(mask, bool):
        return [Finding("error", field, _text(mask), "an integer token id", "it indexes the embedding table")]
    out = []
    vocab = _target(target.config, "vocab_size") if target else None
    if isinstance(vocab, int) and not 0 <= mask < vocab:
        out.append(Finding("error", field, str(mask), f"0 ≤ id < {vocab} (the target's vocab_size)",
                           "a mask id outside the vocabulary is a stale value from another tokenizer: every draft position reads garbage"))
    rows = drafter.tensor_shapes.get("model.embed_tokens.weight") or drafter.tensor_shapes.get("embed_tokens.weight")
    if rows and mask >= rows[0] and not out:  # one finding per cause: the vocabulary one already says it
        out.append(Finding("error", field, str(mask), f"< {rows[0]} (rows of the drafter's embedding)", "the mask embedding would be read out of bounds"))
    if target is not None and target.added_token_ids is not None and mask not in target.added_token_ids and not out:
        out.append(Finding("warning", field, str(mask), "one of the target tokenizer's added (special) tokens",
                           "the mask token is normally a reserved token; an ordinary token id suggests a stale value"))
    return out


def _capture_layers(drafter: ModelFiles, target: ModelFiles | None, dflash: Mapping[str, Any]) -> list[Finding]:
    config = drafter.config
    aux = config.get("eagle_aux_hidden_state_layer_ids")
    ids = [i - 1 for i in aux] if isinstance(aux, list) and all(isinstance(i, int) for i in aux) else dflash.get("target_layer_ids")
    field = "eagle_aux_hidden_state_layer_ids" if isinstance(aux, list) else "dflash_config.target_layer_ids"
    if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return [Finding("error", field, _text(ids), "a non-empty list of target layer indices",
            "they name the target layers whose hidden states the drafter reads")]
    out = []
    if len(set(ids)) != len(ids) or ids != sorted(ids):
        out.append(Finding("warning", field, _text(ids), "distinct, ascending indices",
            "duplicates or a shuffled order feed the drafter's fc layer in the wrong order"))
    layers = _target(target.config, "num_hidden_layers") if target else None
    if isinstance(layers, int):
        outside = [i for i in ids if not 0 <= i < layers]
        if outside:
            hint = " (they look shifted by vLLM's +1 capture convention)" if all(0 < i <= layers for i in ids) else ""
            out.append(Finding("error", field, _text(ids if field.startswith("dflash") else aux),
                               f"zero-based indices within 0…{layers - 1} (the target has {layers} layers){hint}",
                               "vLLM captures layer i + 1; an index past the target's depth reads a layer that does not exist"))
        elif max(ids) < 0.6 * (layers - 1):
            out.append(Finding("warning", field, _text(ids), f"indices spread over the target's {layers} layers",
                               f"they stop at layer {max(ids)}: values copied from a shallower target read the wrong layers"))
        stated = config.get("num_target_layers", dflash.get("num_target_layers"))
        if isinstance(stated, int) and stated != layers:
            out.append(Finding("error", "num_target_layers", str(stated), f"{layers} (the target's num_hidden_layers)",
                               "the drafter was configured for a different target; its capture layers are likely stale too"))
    hidden = _target(target.config, "hidden_size") if target else None
    target_hidden = config.get("target_hidden_size", config.get("hidden_size"))
    if isinstance(hidden, int) and isinstance(target_hidden, int) and target_hidden != hidden:
        out.append(Finding("error", "target_hidden_size", str(target_hidden), f"{hidden} (the target's hidden_size)",
                           "the drafter's fc layer expects hidden states of this width"))
    fc = drafter.tensor_shapes.get("fc.weight") or drafter.tensor_shapes.get("model.fc.weight")
    if fc and isinstance(target_hidden, int) and len(fc) == 2 and fc[1] != len(ids) * target_hidden:
        out.append(Finding("error", field, f"{len(ids)} capture layers ({len(ids)} × {target_hidden} = {len(ids) * target_hidden})",
                           f"{fc[1] // target_hidden} layers, to match the fc.weight input width {fc[1]}",
                           "vLLM rejects the drafter: the number of capture layers does not match what its fc layer was trained on"))
    return out


def _layer_types(config: Mapping[str, Any], dflash: Mapping[str, Any]) -> list[Finding]:
    types = config.get("layer_types")
    layers = config.get("num_hidden_layers")
    out: list[Finding] = []
    if types is None:
        return out
    if not isinstance(types, list):
        return [Finding("error", "layer_types", _text(types), "a list, one entry per drafter layer", "vLLM indexes it by layer")]
    if isinstance(layers, int) and len(types) != layers:
        out.append(Finding("error", "layer_types", f"{len(types)} entries", f"{layers} (the drafter's num_hidden_layers)",
                           "vLLM picks each layer's attention from this list by index: a length mismatch is a stale copy"))
    unknown = sorted({t for t in types if t not in LAYER_TYPES}, key=str)
    if unknown:
        out.append(Finding("error", "layer_types", _text(unknown), " or ".join(LAYER_TYPES), "vLLM knows only these attention kinds"))
    sliding = "sliding_attention" in types or dflash.get("use_swa") is True
    window = dflash.get("swa_window_size", config.get("sliding_window"))
    if sliding and not (isinstance(window, int) and window > 0):
        out.append(Finding("error", "sliding_window", _text(window), "a positive window size",
                           "a sliding-attention layer needs its window (dflash_config.swa_window_size or sliding_window)"))
    if "sliding_attention" in types and "full_attention" in types:
        out.append(Finding("info", "layer_types", "mixed sliding and full attention", "VLLM_USE_V2_MODEL_RUNNER=1",
                           "vLLM supports a mixed list only in its V2 model runner"))
    return out


def _eagle(drafter: ModelFiles, target: ModelFiles | None, kind: str) -> list[Finding]:
    config = drafter.config
    out: list[Finding] = []
    hidden = _target(target.config, "hidden_size") if target else None
    if isinstance(hidden, int) and isinstance(config.get("hidden_size"), int) and config["hidden_size"] != hidden:
        out.append(Finding("error", "hidden_size", str(config["hidden_size"]), f"{hidden} (the target's hidden_size)",
                           "an EAGLE head consumes the target's hidden states directly"))
    aux = config.get("eagle_aux_hidden_state_layer_ids")
    layers = _target(target.config, "num_hidden_layers") if target else None
    if kind == "eagle3" and isinstance(aux, list) and isinstance(layers, int):
        outside = [i for i in aux if not (isinstance(i, int) and 0 < i <= layers)]
        if outside:
            out.append(Finding("error", "eagle_aux_hidden_state_layer_ids", _text(aux), f"indices within 1…{layers} (vLLM's +1 convention)",
                               "an index past the target's depth reads a layer that does not exist"))
    return out


def _mtp(drafter: ModelFiles, k: int | None) -> list[Finding]:
    layers = drafter.config.get("num_nextn_predict_layers")
    if k is not None and isinstance(layers, int) and k > layers:
        return [Finding("warning", "num_speculative_tokens", str(k), f"at most {layers} (num_nextn_predict_layers)",
                        "positions past the trained MTP layers reuse the last layer and are rarely accepted")]
    return []


HEAD_TENSORS = ("lm_head.weight", "model.lm_head.weight")


def _output_head(drafter: ModelFiles) -> list[Finding]:
    """A draft model's config.json against the weights beside it: which matrix scores its tokens.

    vLLM builds a draft_model drafter with the model's own class and honours `tie_word_embeddings`:
    tied, it skips the checkpoint's `lm_head.weight` and scores tokens with the embedding matrix
    (vllm/model_executor/models/llama.py:538 in 0.26.0); untied, it needs that tensor. A config.json copied from a sibling checkpoint (small models of a
    family often tie, large ones do not) loads without a word either way, and drafts garbage.
    """
    if not drafter.tensor_shapes:
        return []  # no weights beside the config: nothing to compare
    tied = drafter.config.get("tie_word_embeddings", _text_config(drafter.config).get("tie_word_embeddings"))
    has_head = any(name in drafter.tensor_shapes for name in HEAD_TENSORS)
    if tied is True and has_head:
        return [Finding("error", "tie_word_embeddings", "true", "false: the weights carry their own lm_head.weight",
                        "vLLM ties the output head to the embedding and skips the trained lm_head.weight: every draft is scored "
                        "with the wrong matrix (a config.json copied from a sibling that ties its embeddings)")]
    if tied is False and not has_head:
        return [Finding("error", "tie_word_embeddings", "false", "true: the weights have no lm_head.weight",
                        "an untied model needs its own output head: vLLM refuses to load the drafter (lm_head.weight not initialized from checkpoint)")]
    return []


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    text = config.get("text_config")
    return text if isinstance(text, dict) else {}


def _vocabulary(drafter: ModelFiles, target: ModelFiles | None, kind: str) -> list[Finding]:
    if target is None:
        return []
    target_vocab = _target(target.config, "vocab_size")
    draft_vocab = drafter.config.get("draft_vocab_size", drafter.config.get("vocab_size"))
    if not (isinstance(target_vocab, int) and isinstance(draft_vocab, int)) or draft_vocab == target_vocab:
        return []
    field = "draft_vocab_size" if "draft_vocab_size" in drafter.config else "vocab_size"
    if kind in ("eagle3", "dflash") and draft_vocab < target_vocab:
        if drafter.tensor_shapes and "d2t" not in drafter.tensor_shapes:
            return [Finding("error", field, str(draft_vocab), f"{target_vocab}, or a d2t mapping in the weights",
                            "a reduced draft vocabulary needs the d2t tensor to map draft ids to target ids")]
        return []
    return [Finding("error", field, str(draft_vocab), f"{target_vocab} (the target's vocab_size)",
                    "drafter and target must share one vocabulary: token ids are compared one to one")]


def findings_json(findings: list[Finding], drafter: ModelFiles, target: ModelFiles | None) -> dict[str, Any]:
    return {
        "drafter": drafter.path,
        "target": target.path if target else None,
        "kind": drafter_kind(drafter.config),
        "findings": [asdict(f) for f in findings],
        "status": exit_status(findings),
    }


def exit_status(findings: list[Finding]) -> int:
    """0 clean, 1 warnings, 2 errors."""
    if any(f.severity == "error" for f in findings):
        return 2
    return 1 if any(f.severity == "warning" for f in findings) else 0
