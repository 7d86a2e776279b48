"""Which speculative methods each vLLM version accepts (its `SpeculativeMethod` Literal).

From the wheels (docs/vllm-versions.md §6; speculative.py:34/60 in 0.24, :38/74 in 0.33):
`dspark` arrived in 0.25.0, `medusa` and `mlp_speculator` left in 0.33.0, `custom_class` in
0.34.0; the model-specific MTP types (`MTPModelTypes`) grew from 19 in 0.24 to 28 in 0.33, and
vLLM runs every one of them as `mtp` after a deprecation warning (speculative.py:1247 in 0.33).
Used by check-config to say whether the method you serve with exists in your vLLM.
"""

from __future__ import annotations

import re

BASE_METHODS = frozenset({
    "ngram", "ngram_gpu", "draft_model", "suffix", "eagle", "eagle3", "extract_hidden_states", "dflash",
})
# method → (first version that has it, first version without it); None: still there in 0.34
LIFESPANS: dict[str, tuple[tuple[int, int], tuple[int, int] | None]] = {
    "custom_class": ((0, 24), (0, 34)),
    "medusa": ((0, 0), (0, 33)),
    "mlp_speculator": ((0, 0), (0, 33)),
    "dspark": ((0, 25), None),
}
MTP_TYPES_024 = frozenset({
    "deepseek_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp", "glm_ocr_mtp", "ernie_mtp",
    "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp", "qwen3_5_mtp", "longcat_flash_mtp",
    "minimax_m3_mtp", "mtp", "pangu_ultra_moe_mtp", "step3p5_mtp", "hy_v3_mtp", "gemma4_mtp",
})
MTP_TYPES_ADDED: dict[str, tuple[int, int]] = {  # the nine new MTP types of 0.25–0.33, and 0.34's
    "bailing_hybrid_mtp": (0, 25), "inkling_mtp": (0, 26), "kimi_k3_mtp": (0, 27), "bailing_hybrid_v3_mtp": (0, 28),
    "dots3_note_mtp": (0, 28), "hy_v4_mtp": (0, 29), "qwen4_exp_mtp": (0, 29), "glm5_next_mtp": (0, 30),
    "step5_mtp": (0, 33), "nemotron3_5_transcribe_mtp": (0, 34),
}
_VERSION = re.compile(r"^v?(\d+)\.(\d+)")


def _minor(version: str) -> tuple[int, int] | None:
    match = _VERSION.match(version)
    return None if match is None else (int(match[1]), int(match[2]))


def known_methods(version: str) -> frozenset[str] | None:
    """Every method name vLLM `version` accepts (MTP types included); None for an unreadable version."""
    minor = _minor(version)
    if minor is None:
        return None
    names = set(BASE_METHODS) | MTP_TYPES_024
    names |= {name for name, since in MTP_TYPES_ADDED.items() if minor >= since}
    names |= {name for name, (since, until) in LIFESPANS.items() if minor >= since and (until is None or minor < until)}
    return frozenset(names)


def runs_as(method: str) -> str:
    """The method vLLM actually runs: every MTP type becomes `mtp`."""
    return "mtp" if method.endswith("_mtp") else method


def method_problem(method: str, version: str | None) -> tuple[str, str] | None:
    """(severity, why) when `method` is wrong or renamed for vLLM `version`; None when it is fine."""
    minor = _minor(version) if version is not None else None
    names = known_methods(version) if version is not None else None
    if minor is not None and names is not None and method not in names:
        since, gone = LIFESPANS.get(method, (MTP_TYPES_ADDED.get(method), None))
        if gone is not None and minor >= gone:
            return "error", f"vLLM {version} has no method {method} (removed in {gone[0]}.{gone[1]})"
        if since is not None and minor < since:
            return "error", f"vLLM {version} has no method {method} (added in {since[0]}.{since[1]})"
        return "error", f"vLLM {version} has no speculative method {method}"
    if method != "mtp" and method.endswith("_mtp"):
        return "info", f"vLLM logs `method {method} is deprecated and replaced with mtp` and runs it as mtp"
    return None
