"""check-config: the fields of a drafter's config.json that its own weights or its target contradict.

A config.json goes stale by being copied — from a sibling checkpoint of another size (depth, widths,
heads), from another release of the family (a padded vocabulary, another RoPE base, another context
length), from another family (its special tokens) — and nothing in the file says so. Its weights and
its target do:

  * the weights (tensor shapes from the safetensors header, no weights read): the number of layers,
    hidden_size, intermediate_size, vocab_size (rows of the embedding and of the output head), and
    the attention heads (rows of q_proj and k_proj over head_dim). vLLM builds the model from
    config.json and refuses the checkpoint when they disagree (vLLM 0.26.0: a tensor of a layer the
    config does not build, model_executor/models/utils.py:389-395; a layer it builds that the weights
    lack, model_loader/default_loader.py:465-470; a shape, model_loader/weight_utils.py:1242);
  * the target: its RoPE base (a head drafting on the target's hidden states runs at its positions;
    a draft model of the family shares it), its context length and the served max_model_len (vLLM
    caps the draft model's length at its max_position_embeddings, config/speculative.py:1089-1131,
    and clamps a draft position past it to 0, v1/spec_decode/utils.py:64-66: acceptance collapses
    past it — a real posted case, a drafter shipped with 2048 for a 32k target), and its special
    tokens (the same tokenizer has the same eos).

Pure functions over ModelFiles (judge/model_files.py); `checkconfig.check` calls them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from exporter.judge.model_files import Finding, ModelFiles, field_of, text

_LAYER = re.compile(r"^(?:model\.)?layers\.(\d+)\.")
HEADS = ("eagle", "eagle3", "dflash", "mtp")  # drafters that run on the target's hidden states and positions


def _shape(shapes: Mapping[str, tuple[int, ...]], *names: str) -> tuple[int, ...] | None:
    for name in names:
        shape = shapes.get(name)
        if shape:
            return shape
    return None


def _int(config: Mapping[str, Any], key: str) -> int | None:
    value = field_of(config, key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _layers(shapes: Mapping[str, tuple[int, ...]]) -> tuple[str, int] | None:
    """(the prefix of the layers' tensors, how many layers) where they are numbered 0…n−1, else None."""
    found: dict[str, set[int]] = {}
    for name in shapes:
        match = _LAYER.match(name)
        if match is not None:
            found.setdefault(name[: name.index("layers.")], set()).add(int(match[1]))
    if len(found) != 1:
        return None
    ((prefix, numbers),) = found.items()
    return (prefix, len(numbers)) if numbers == set(range(len(numbers))) else None


def weights_findings(drafter: ModelFiles, kind: str) -> list[Finding]:
    """config.json against the tensor shapes beside it (none without weights)."""
    shapes, config = drafter.tensor_shapes, drafter.config
    if not shapes:
        return []
    out: list[Finding] = []
    layers = _layers(shapes) if kind != "mtp" else None  # an MTP drafter's layers are numbered after the target's
    prefix = layers[0] if layers else "model."
    embed = _shape(shapes, "model.embed_tokens.weight", "embed_tokens.weight")
    hidden = embed[1] if embed and len(embed) == 2 else None

    def differs(field: str, stated: int | None, weights: int | None, where: str) -> None:
        if stated is not None and weights is not None and stated != weights:
            out.append(Finding("error", field, str(stated), f"{weights} ({where})",
                               "config.json disagrees with the weights beside it (a config copied from another checkpoint): vLLM "
                               "builds the model from the config and refuses these weights, or drafts with layers it never loaded"))

    differs("num_hidden_layers", _int(config, "num_hidden_layers") if kind not in ("eagle3", "dflash") else None,
            layers[1] if layers else None, f"layers numbered 0…{layers[1] - 1} in the weights" if layers else "")
    differs("hidden_size", _int(config, "hidden_size"), hidden, "columns of embed_tokens.weight")
    differs("vocab_size", _int(config, "vocab_size"), embed[0] if embed else None, "rows of embed_tokens.weight")
    head = _shape(shapes, "lm_head.weight", "model.lm_head.weight")
    if head and "draft_vocab_size" in config:
        differs("draft_vocab_size", _int(config, "draft_vocab_size"), head[0], "rows of lm_head.weight")
    elif head and embed and head[0] != embed[0]:
        differs("vocab_size", _int(config, "vocab_size"), head[0], "rows of lm_head.weight")
    first = f"{prefix}layers.0."
    gate = _shape(shapes, first + "mlp.gate_proj.weight", first + "mlp.up_proj.weight")
    differs("intermediate_size", _int(config, "intermediate_size"), gate[0] if gate else None, "rows of the first layer's mlp.gate_proj.weight")
    out += _heads(config, shapes, first)
    return out


def _heads(config: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]], first: str) -> list[Finding]:
    """q_proj holds num_attention_heads × head_dim rows, k_proj num_key_value_heads × head_dim."""
    heads, hidden = _int(config, "num_attention_heads"), _int(config, "hidden_size")
    head_dim = _int(config, "head_dim") or (hidden // heads if heads and hidden else None)
    if not head_dim:
        return []
    out = []
    q = _shape(shapes, first + "self_attn.q_proj.weight")
    k = _shape(shapes, first + "self_attn.k_proj.weight")
    kv = _int(config, "num_key_value_heads") or heads
    for field, stated, shape, tensor in (("num_attention_heads", heads, q, "q_proj"), ("num_key_value_heads", kv, k, "k_proj")):
        if stated is None or not shape or shape[0] == stated * head_dim:
            continue
        whole = shape[0] % head_dim == 0
        out.append(Finding("error", field, str(stated),
                           f"{shape[0] // head_dim} ({shape[0]} rows of the first layer's self_attn.{tensor}.weight over head_dim {head_dim})"
                           if whole else f"a head count that divides the {shape[0]} rows of self_attn.{tensor}.weight",
                           "config.json disagrees with the weights beside it (a config copied from a sibling with another attention "
                           "layout): vLLM splits the projection into the config's heads and refuses these weights"))
    return out


def _rope_theta(config: Mapping[str, Any]) -> Any:
    """The RoPE base as written: `rope_theta`, or inside `rope_parameters` (transformers 5) / `rope_scaling`."""
    value = field_of(config, "rope_theta")
    if value is None:
        for key in ("rope_parameters", "rope_scaling"):
            inner = field_of(config, key)
            if isinstance(inner, dict) and inner.get("rope_theta") is not None:
                return inner["rope_theta"]
    return value


def _ids(value: Any) -> frozenset[int] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return frozenset({value})
    if isinstance(value, list) and value and all(isinstance(i, int) for i in value):
        return frozenset(value)
    return None


def target_findings(drafter: ModelFiles, target: ModelFiles | None, kind: str, max_model_len: int | None) -> list[Finding]:
    """The drafter's RoPE base, context length and special tokens against its target's (and the served length)."""
    if target is None:
        return _length(drafter, None, max_model_len)
    out = []
    mine, theirs = _rope_theta(drafter.config), _rope_theta(target.config)
    if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)) and float(mine) != float(theirs):
        head = kind in HEADS
        out.append(Finding("error" if head else "warning", "rope_theta", f"{mine:g}", f"{theirs:g} (the target's)",
                           "the drafter runs on the target's hidden states at the target's positions: another RoPE base rotates them "
                           "wrongly at every position" if head else
                           "a draft model of the target's family shares its RoPE base; another one is a config.json copied from another "
                           "model (Llama 2's 10000 for Llama 3's 500000): the drafter attends at positions it was not trained on"))
    out += _length(drafter, target, max_model_len)
    eos, target_eos = _ids(field_of(drafter.config, "eos_token_id")), _ids(field_of(target.config, "eos_token_id"))
    if eos is not None and target_eos is not None and not eos <= target_eos:
        out.append(Finding("warning", "eos_token_id", text(sorted(eos) if len(eos) > 1 else min(eos)),
                           f"{text(sorted(target_eos) if len(target_eos) > 1 else min(target_eos))} (the target's)",
                           "drafter and target share one tokenizer, so one end-of-sequence token: another one is a config.json "
                           "copied from another model, whose other fields are suspect too"))
    return out


def _length(drafter: ModelFiles, target: ModelFiles | None, max_model_len: int | None) -> list[Finding]:
    """The drafter's max_position_embeddings against the length it will be asked to draft at."""
    own = _int(drafter.config, "max_position_embeddings")
    if own is None:
        return []
    why = ("vLLM caps the draft model's length at its max_position_embeddings and clamps a draft position past it to 0: "
           "past that position every draft is wrong and acceptance collapses (a drafter shipped with 2048 for a 32k target)")
    if max_model_len is not None:
        if own < max_model_len:
            return [Finding("error", "max_position_embeddings", str(own), f"at least {max_model_len} (the served --max-model-len)", why)]
        return []
    longest = _int(target.config, "max_position_embeddings") if target is not None else None
    if longest is not None and own < longest:
        return [Finding("warning", "max_position_embeddings", str(own), f"at least {longest} (the target's), or a --max-model-len of at most {own}",
                        why + "; give --max-model-len to check against what you serve")]
    return []
