"""What the sidecar bounds, with numbers: the limits input can never pass (README: "Security and limits").

A count larger than a float64 holds exactly cannot be exported as a counter (and a 400-digit one
failed every /metrics and /api/v1/status: OverflowError, saved in state.json for good); a
per-position list longer than any drafter drafts (a 100,000-position plugin record took RSS to 284
MB) is no speculative decoding. Both are refused where they are read — `bad_value` for a log line
or a plugin record, `invalid_values` for a scraped series — and a saved state holding them starts
that series afresh with a warning. This module is the bottom of the import layers: every stage,
the plugin's record format included, may import it.
"""

from __future__ import annotations

MAX_COUNT = 2**53  # 9,007,199,254,740,992: the largest integer a float64 (a Prometheus sample) holds exactly
# positions of a per-position list: DFlash drafts 15, and n-gram users have configured k = 300 (a
# 2 KB spec line, ../shared/reference/telemetry-formats.md §2); a window's sums are as wide as the widest
MAX_POSITIONS = 1024
