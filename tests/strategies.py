"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st


def prefix_counts(draw: st.DrawFn, k: int, drafts: int, tail: int = 2) -> list[int]:
    """A_i of k positions under D drafts: non-increasing (a position is accepted only after the one
    before it), often with a near-zero tail, where the printed rates' rounding leaves most room."""
    counts, ceiling = [], drafts
    for _ in range(k):
        count = draw(st.integers(0, ceiling) | st.integers(0, min(ceiling, tail)))
        counts.append(count)
        ceiling = count
    return counts
