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

_LINE = re.compile(
    r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?P<ranks>[^\]]*)\] Decode batch(?P<sep>[.,])"
)
_ACCEPT_LEN = re.compile(r"accept len: (\d+(?:\.\d+)?)")
_ACCEPT_RATE = re.compile(r"accept rate: (\d+(?:\.\d+)?)")
_DP = re.compile(r"\bDP(\d+)\b")
_TP = re.compile(r"\bTP(\d+)\b")


@dataclass(frozen=True, slots=True)
class SglangDecodeLine:
    time: str  # "YYYY-MM-DD HH:MM:SS", local time
    engine: str  # the DP rank, "0" without DP
    mean_acceptance_length: float
    draft_acceptance_ratio: float | None
    variant: str


def parse_sglang_decode(text: str) -> SglangDecodeLine | None:
    """Parse a `Decode batch` line with spec-decode fields; None for any other line."""
    match = _LINE.match(text)
    if match is None:
        return None
    length = _ACCEPT_LEN.search(text, match.end())
    if length is None:
        return None
    rate = _ACCEPT_RATE.search(text, length.end())
    tp = _TP.search(match["ranks"])
    if tp is not None and tp[1] != "0":
        return None
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
        mean_acceptance_length=float(length[1]),
        draft_acceptance_ratio=float(rate[1]) if rate else None,
        variant=variant,
    )
