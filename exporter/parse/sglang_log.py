"""SGLang's `Decode batch` log line (reference §4): `accept len` and `accept rate` are snapshots.

    [2026-04-05 20:02:51 DP1 TP0] Decode batch, #running-req: 32, …, accept len: 3.21, accept rate: 0.55, …

No counts are printed, so nothing can be reconstructed beyond the two ratios, and `accept rate`
changed its definition three times across SGLang versions. Only the TP-rank-0 scheduler logs it.
Variants: SG-a (`Decode batch.`, accept len only), SG-b (adds `cuda graph:`), SG-c (adds
`accept rate`), SG-d (`Decode batch,` with a comma).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from exporter.parse.vllm_log import SpecLineError

_LINE = re.compile(
    r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?P<ranks>[^\]]*)\] Decode batch(?: \[\d+\])?(?P<sep>[.,])"
)
# Each value as SGLang prints it, `{x:.2f}` and the `, ` every field ends with (SG-c/SG-d:
# scheduler_components/metrics_reporter.py:1003 in sglang 0.5.23, `accept len: {…:.2f}, accept
# rate: {…:.2f}, `; SG-a/SG-b: `accept len: {…:.2f}, ` then more fields). A value without both —
# `accept rate: 0` at the end of the text — was cut there (a paste, a shipper's limit).
_ACCEPT_LEN = re.compile(r"accept len: (?P<value>[^,]*)(?P<end>, )?")
_ACCEPT_RATE = re.compile(r"accept rate: (?P<value>[^,]*)(?P<end>, )?")
_PRINTED = re.compile(r"\d+\.\d\d")
_DP = re.compile(r"\bDP(\d+)\b")
_TP = re.compile(r"\bTP(\d+)\b")
# No SGLang drafter verifies more than this many draft tokens a step (its documented EAGLE tree of
# topk 8 and 5 steps is 64): under every definition `accept rate` has had (reference §4),
# L − 1 ≤ (rate + 0.005) × this, so `accept len: 1.44, accept rate: 0.00` is no snapshot at all.
MAX_DRAFT_TOKENS_PER_VERIFY = 64


@dataclass(frozen=True, slots=True)
class SglangDecodeLine:
    time: str  # "YYYY-MM-DD HH:MM:SS", local time
    engine: str  # the DP rank, "0" without DP
    mean_acceptance_length: float
    draft_acceptance_ratio: float | None
    variant: str


def _value(match: re.Match[str], name: str) -> float:
    """A field's value, printed whole (`3.21, `), else why the line cannot be used."""
    value = match["value"]
    if _PRINTED.fullmatch(value) and match["end"]:
        return float(value)
    if match["end"] is None and match.end() == len(match.string.rstrip()):
        raise SpecLineError("truncated", f"{name}: {value}")
    raise SpecLineError("bad_value", f"{name}: {value!r}")


def parse_sglang_decode(text: str) -> SglangDecodeLine | None:
    """Parse a `Decode batch` line with spec-decode fields; None for any other line (and for TP ranks
    other than 0, which repeat rank 0); SpecLineError for one that cannot be used: cut inside its
    fields (`truncated`), or a rate its acceptance length rules out (`inconsistent_counts`)."""
    match = _LINE.match(text)
    if match is None:
        return None
    length = _ACCEPT_LEN.search(text, match.end())
    if length is None:
        return None
    tp = _TP.search(match["ranks"])
    if tp is not None and tp[1] != "0":
        return None
    mean_length = _value(length, "accept len")
    found = _ACCEPT_RATE.search(text, length.end())
    rate = _value(found, "accept rate") if found is not None else None
    if rate is not None and mean_length - 1.0 > (rate + 0.005) * MAX_DRAFT_TOKENS_PER_VERIFY:
        raise SpecLineError("inconsistent_counts", f"accept len {mean_length} with accept rate {rate}")
    dp = _DP.search(match["ranks"])
    if match["sep"] == ",":
        variant = "SG-d"
    elif rate is not None:
        variant = "SG-c"
    else:
        variant = "SG-b" if "cuda graph:" in text else "SG-a"
    return SglangDecodeLine(
        time=match["time"],
        engine=dp[1] if dp else "0",
        mean_acceptance_length=mean_length,
        draft_acceptance_ratio=rate,
        variant=variant,
    )
