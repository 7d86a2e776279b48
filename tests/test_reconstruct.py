"""Reconstruction of D and A_i from a printed V1 line: worked examples and the error bound.

The property test builds exact counts (D, T, A, A_i) — fixed-length drafts and shortened (n-gram
style) ones — prints them exactly as vLLM does (`%.2f` mean length, `%.3f` rates), reconstructs,
and checks every bound documented in exporter/intervals/reconstruct.py.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import prefix_counts

from exporter.intervals.reconstruct import reconstruct, split_positions
from exporter.judge.derive import conditional_acceptance, position_acceptance


def printed(drafts: int, accepted_per_position: list[int]) -> tuple[float, tuple[float, ...]]:
    """What a vLLM V1-e line prints for these counts (then parsed back to floats)."""
    accepted = sum(accepted_per_position)
    mean_length = float(f"{1 + accepted / drafts:.2f}")
    rates = tuple(float(f"{count / drafts:.3f}") for count in accepted_per_position)
    return mean_length, rates


def test_reference_worked_example():
    """reference §7: A = 89, M = 2.37, T = 975, k = 15 → D = 65 and A_i = 39, 25, 14, 7, 4, 0 …"""
    rates = (0.600, 0.385, 0.215, 0.108, 0.062) + (0.0,) * 10
    result = reconstruct(89, 975, 2.37, rates)
    assert result is not None
    assert result.drafts == 65 and result.exact
    assert result.accepted_per_position == (39, 25, 14, 7, 4) + (0,) * 10
    assert sum(result.accepted_per_position) == 89


def test_shortened_drafts_are_not_assumed_to_be_k_long():
    """n-gram: 100 drafts of 3 tokens on average with k = 5 — T/k = 60 must not be taken."""
    counts = [70, 30, 20]  # positions 3 and 4 never accepted
    mean_length, rates = printed(100, [*counts, 0, 0])
    result = reconstruct(sum(counts), 300, mean_length, rates)
    assert result is not None
    assert result.drafts_low <= 100 <= result.drafts_high
    assert result.drafts == 100


def test_first_line_of_the_capture():
    """`Accepted: 2 tokens, Drafted: 8 tokens, … 1.000, 1.000, 0.000 …` is one draft of 8."""
    result = reconstruct(2, 8, 3.00, (1.0, 1.0) + (0.0,) * 6)
    assert result is not None and result.drafts == 1 and result.accepted_per_position == (1, 1) + (0,) * 6


def test_layouts_without_mean_length_or_rates_cannot_know_d():
    assert reconstruct(1346, 2000, None, None) is None
    assert reconstruct(0, 0, None, ()) is None


def test_inconsistent_numbers_yield_no_reconstruction():
    # L = 3.00 says A/D = 2, but rates of 0.1 say A/D ≈ 0.1: no D satisfies both
    assert reconstruct(200, 800, 3.00, (0.1,) * 8) is None


def test_split_positions_matches_the_accepted_total_within_rounding():
    counts = split_positions((0.615, 0.453, 0.405), 1000, 1473)
    assert sum(counts) == 1473
    assert all(abs(c - r * 1000) <= 0.5 + 1e-9 for c, r in zip(counts, (0.615, 0.453, 0.405), strict=True))


@st.composite
def spec_intervals(draw: st.DrawFn) -> tuple[int, int, list[int], int]:
    """Exact (D, k, A_i, T): A_i non-increasing (prefix acceptance), T between its bounds."""
    k = draw(st.integers(1, 16))
    drafts = draw(st.integers(1, 6000))
    counts = prefix_counts(draw, k, drafts, tail=3)  # a rate printed 0.000 allows up to 0.0005·D
    accepted = sum(counts)
    fixed = draw(st.booleans())
    # a draft that accepted j tokens drafted at least max(1, j) of them
    shortest = accepted + drafts - counts[0]
    draft_tokens = drafts * k if fixed else draw(st.integers(shortest, drafts * k))
    return drafts, k, counts, draft_tokens


@settings(max_examples=150, deadline=None)
@given(spec_intervals())
def test_error_bound_holds_for_any_counts(case):
    drafts, k, counts, draft_tokens = case
    accepted = sum(counts)
    mean_length, rates = printed(drafts, counts)
    result = reconstruct(accepted, draft_tokens, mean_length, rates)
    assert result is not None
    # the truth and the estimate both lie in the range the printed numbers allow
    assert result.drafts_low <= drafts <= result.drafts_high
    assert result.drafts_low <= result.drafts <= result.drafts_high
    # from the mean length alone: D_hi − D_lo ≤ 0.01·A/((M−1)² − 0.005²) + 1
    excess = mean_length - 1
    if accepted > 0 and excess > 0.005:
        assert result.drafts_high - result.drafts_low <= 0.01 * accepted / (excess**2 - 0.005**2) + 1
    # fixed-length drafts are recovered exactly
    if draft_tokens == drafts * k:
        assert result.drafts == drafts
    # per position: |Â_i − A_i| ≤ 0.0005·(D + D̂) + r_i·|D̂ − D| + 1
    error_d = abs(result.drafts - drafts)
    for estimate, truth, rate in zip(result.accepted_per_position, counts, rates, strict=True):
        assert abs(estimate - truth) <= 0.0005 * (drafts + result.drafts) + rate * error_d + 1
    assert sum(result.accepted_per_position) == accepted
    assert_plausible(result.accepted_per_position, result.drafts)


def assert_plausible(counts: tuple[int, ...], drafts: int) -> None:
    """Position i is reached only through i − 1: A_0 ≤ D, A_i ≤ A_{i−1}, every conditional rate in [0, 1]."""
    assert all(0 <= count <= drafts for count in counts)
    assert all(later <= earlier for earlier, later in itertools.pairwise(counts)), counts
    assert all(c is None or 0.0 <= c <= 1.0 for c in conditional_acceptance(position_acceptance(counts, drafts)))


def test_a_k15_drafter_with_a_dead_tail_stays_non_increasing():
    """Issue 18: the leftover tokens of the rounding went to the last positions (A_11 > A_10, c_13 = 1.5)."""
    truth = [4081, 3225, 1782, 1424, 647, 219, 131, 41, 16, 1, 0, 0, 0, 0, 0]
    mean_length, rates = printed(5512, truth)
    assert (mean_length, rates[9:]) == (3.10, (0.0,) * 6)
    result = reconstruct(sum(truth), 5512 * 15, mean_length, rates)
    assert result is not None and result.drafts == 5512
    assert sum(result.accepted_per_position) == sum(truth)
    assert_plausible(result.accepted_per_position, 5512)
    for estimate, count in zip(result.accepted_per_position, truth, strict=True):  # the bound, at D̂ = D
        assert abs(estimate - count) <= 0.0005 * 2 * 5512 + 1
    # a window pools intervals: sums of non-increasing counts stay non-increasing
    pooled = [sum(pair) for pair in zip(result.accepted_per_position, split_positions(rates, 5512, sum(truth)), strict=True)]
    assert_plausible(tuple(pooled), 2 * 5512)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 1000).map(lambda n: n / 1000), min_size=1, max_size=16),
    st.integers(1, 20_000),
    st.integers(0, 40_000),
)
def test_any_split_is_non_increasing_even_for_rates_that_are_not(rates, drafts, accepted):
    """A fork or a damaged line may print rates that climb; the split still never does."""
    counts = split_positions(tuple(rates), drafts, accepted)
    assert_plausible(counts, drafts)
