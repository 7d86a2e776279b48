"""The pay-off at load in analyze's table: speed-up over plain decoding by load band, the break-even
load and the k per batch size in the form vLLM takes it (judge/payoff.py computes; this prints)."""

from __future__ import annotations

import json
from typing import Any

DYNAMIC_SINCE = "0.26.0"  # vLLM first takes num_speculative_tokens_per_batch_size (config/speculative.py:177-183 of 0.26.0)


def payoff_lines(series: dict[str, Any]) -> list[str]:
    payoff = series.get("payoff")
    if payoff is None:
        return []
    if payoff["reason"] is not None:
        return [f"  pay-off at load: unknown — {payoff['reason']}"]
    out = [f"  pay-off at load, against plain decoding on this server ({payoff['calibration']}):"]
    out.append("      running     tok/s   plain tok/s   speed-up   best k   (steady stats intervals)")
    out.extend(
        f"    {band['running']:9.1f} {band['tokens_per_second']:9.0f} {_number(band['plain_tokens_per_second'], '.0f'):>13}"
        f" {_times(band['speedup']):>10} {_number(band['best_k'], 'd'):>8}   ({band['intervals']}{_flags(band)})"
        for band in payoff["by_load"]
    )
    now = payoff["now"]
    if now is not None:
        out.append(f"    now: {_times(now['speedup'])} at {now['running']:.0f} running requests; best k here {_number(now['best_k'], 'd')}")
    even = payoff["break_even_running"]
    out.append(f"    break-even: {'none' if even is None else f'≈ {even:.0f} running requests'} — {payoff['break_even_reason']}")
    schedule = payoff["num_speculative_tokens_per_batch_size"]
    if schedule:
        out.append(f"    k per batch size (vLLM ≥ {DYNAMIC_SINCE}, in --speculative-config): "
                   f"\"num_speculative_tokens_per_batch_size\": {json.dumps(schedule)}")
    return out


def _flags(band: dict[str, Any]) -> str:
    flags = [name for name, key in (("plain extrapolated", "extrapolated"), ("calibration mismatch", "calibration_mismatch")) if band[key]]
    return "; " + ", ".join(flags) if flags else ""


def _times(value: float | None) -> str:
    return "?" if value is None else f"×{value:.2f}"


def _number(value: float | int | None, spec: str) -> str:
    return "?" if value is None else format(value, spec)
