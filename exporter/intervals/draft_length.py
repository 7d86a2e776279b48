"""Does a drafter always propose k tokens? The one fact that turns T into D on the older lines.

V1-a and V1-b lines print A and T but not D, and V1-e lines pin D only to a range. When every
draft has exactly k tokens, D = T/k. Facts from the vLLM wheels (docs/vllm-versions.md §6):

  * eagle, eagle3, draft_model, dflash, dspark and mtp with all its aliases (`*_mtp`) fill all k
    slots in every vLLM that has them;
  * ngram and ngram_gpu drafts are shorter than k when no n-gram matches on the V1 model runner
    (vLLM ≤ 0.31); from 0.32 Model Runner V2 runs them and its n-gram kernel writes all k slots
    (`v1/worker/gpu/spec_decode/ngram/speculator.py:145-148`);
  * suffix and custom_class propose variable lengths in every version.

Even a fixed-length drafter gives T < k·D when structured output invalidates draft tokens
(scheduler.py:3305-3322 in 0.33), with dynamic k (`num_speculative_tokens_per_batch_size`) or
dspark's `enable_adaptive_verification`; a T that is not a multiple of k therefore never pins D.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FIXED_LENGTH_METHODS = frozenset({"eagle", "eagle3", "draft_model", "dflash", "dspark", "mtp"})
VARIABLE_LENGTH_METHODS = frozenset({"suffix", "custom_class"})
NGRAM_METHODS = frozenset({"ngram", "ngram_gpu"})
NGRAM_FIXED_FROM = (0, 32)  # the first vLLM whose Model Runner V2 runs the n-gram drafter

_VERSION = re.compile(r"^v?(\d+)\.(\d+)")


@dataclass(frozen=True, slots=True)
class DraftLength:
    """Whether every draft holds k tokens; `reason` says why not (or why it cannot be known)."""

    fixed: bool
    reason: str


def is_mtp(method: str) -> bool:
    """`mtp` and every model-specific alias (`deepseek_mtp`, `qwen3_next_mtp`, `step5_mtp`, …)."""
    return method == "mtp" or method.endswith("_mtp")


def minor_version(version: str | None) -> tuple[int, int] | None:
    match = _VERSION.match(version or "")
    return None if match is None else (int(match[1]), int(match[2]))


def draft_length(method: str | None, server_version: str | None, variable_drafts: str | None = None) -> DraftLength:
    """Fixed (T = k·D) or not, for this method on this vLLM version (and what the startup lines said)."""
    if variable_drafts is not None and (method in NGRAM_METHODS or "runner" not in variable_drafts):
        return DraftLength(False, f"{variable_drafts}: D is not T/k")
    if method is None:
        return DraftLength(False, "the speculative method is unknown (no startup lines in the log), so D cannot be taken as T/k")
    if method in FIXED_LENGTH_METHODS or is_mtp(method):
        return DraftLength(True, f"{method} always drafts k tokens")
    if method in NGRAM_METHODS:
        version = minor_version(server_version)
        if version is None:
            return DraftLength(False, f"{method} drafts are shorter than k on vLLM ≤ 0.31 and the server version is unknown: D is not T/k")
        if version >= NGRAM_FIXED_FROM:
            return DraftLength(True, f"{method} on vLLM {server_version} (Model Runner V2) always drafts k tokens")
        return DraftLength(False, f"{method} drafts are shorter than k when nothing matches (vLLM {server_version} ≤ 0.31): D is not T/k")
    if method in VARIABLE_LENGTH_METHODS:
        return DraftLength(False, f"{method} drafts vary in length: D is not T/k")
    return DraftLength(False, f"{method} is not known to always draft k tokens: D is not taken as T/k")


def drafts_from_tokens(draft_tokens: int, k: int | None, length: DraftLength) -> int | None:
    """D = T/k for a fixed-length drafter whose T is a multiple of k; None otherwise."""
    if not length.fixed or not k or k <= 0 or draft_tokens % k:
        return None
    return draft_tokens // k


def unknown_drafts_reason(method: str | None, server_version: str | None, k: int | None, variable_drafts: str | None = None) -> str:
    """Why D stayed unknown for a line that prints only A and T (V1-a, V1-b)."""
    if not k:
        return "k is unknown (no startup lines in the log), so D cannot be taken as T/k"
    length = draft_length(method, server_version, variable_drafts)
    if not length.fixed:
        return length.reason
    return f"T is not a multiple of k = {k} in some interval (drafts cut short by structured output or a dynamic k), so D is not T/k"
