"""The one catalogue of exported metric names, types, labels and help texts.

The exporter, the README table, the rules and the dashboards all read it, so a renamed metric
cannot leave a panel or an alert querying nothing. Conventions: prefix `specdecode_`, no colons,
base units, `_total` on counters (added by the exposition), `_ratio` for 0–1 values.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "specdecode_"
SERIES_LABELS = ("upstream", "model_name", "engine", "source")


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str  # counters are exposed as name + "_total"; other samples carry the name as is
    type: str  # "counter" | "gauge" | "info" | "stateset"
    help: str
    labels: tuple[str, ...]

    @property
    def sample_name(self) -> str:
        return self.name + "_total" if self.type == "counter" else self.name


def _m(name: str, type_: str, help_: str, *labels: str) -> MetricSpec:
    return MetricSpec(PREFIX + name, type_, help_, labels)


S = SERIES_LABELS
W = (*SERIES_LABELS, "window")

# Counters rebuilt from the sources: rate() and sum them across a fleet.
DRAFTS = _m("drafts", "counter", "Speculative drafts verified (D; reconstructed from logs where not printed).", *S)
DRAFT_TOKENS = _m("draft_tokens", "counter", "Draft tokens proposed (T).", *S)
ACCEPTED_TOKENS = _m("accepted_tokens", "counter", "Draft tokens accepted by the target (A, prefix-accepted).", *S)
ACCEPTED_PER_POSITION = _m(
    "accepted_tokens_per_position", "counter", "Draft tokens accepted at each draft position (A_i).", *S, "position"
)
DRAFT_TOKENS_PER_POSITION = _m(
    "draft_tokens_per_position", "counter",
    "Draft tokens proposed at each draft position (T_i; from the vLLM plugin only): A_i/T_i is acceptance among drafts that reached i.",
    *S, "position",
)

# Windowed gauges computed by the sidecar.
MEAN_ACCEPTANCE_LENGTH = _m(
    "mean_acceptance_length", "gauge", "Mean tokens per verification step, bonus token included (1 + A/D) over the window.", *W
)
DRAFT_ACCEPTANCE_RATIO = _m("draft_acceptance_ratio", "gauge", "Accepted over drafted tokens (A/T) over the window.", *W)
MEAN_DRAFT_LENGTH = _m("mean_draft_length_tokens", "gauge", "Draft tokens per draft (T/D) over the window; below k when drafts are shortened.", *W)
POSITION_ACCEPTANCE = _m(
    "position_acceptance_ratio", "gauge", "Share of drafts whose positions 0..i were all accepted (A_i/D) over the window.", *W, "position"
)
POSITION_CONDITIONAL = _m(
    "position_conditional_acceptance_ratio", "gauge",
    "Acceptance at position i given position i-1 was accepted (r_i/r_{i-1}) over the window.", *W, "position",
)
RECOMMENDED_K = _m(
    "recommended_speculative_tokens", "gauge",
    "Number of speculative tokens that maximises the estimated speed-up E(k)/(1+k*cost) over the window.", *W,
)
WASTED_TOKENS_RATE = _m(
    "wasted_draft_tokens_per_second", "gauge", "Draft tokens rejected per second ((T-A)/seconds) over the window.", *W
)
HEALTH = _m(
    "health",
    "gauge",
    "Drafter health verdict (ok, wasteful, degraded, broken, no_data) over the health window against the series' reference: 1 for the current state.",
    *S,
    "state",
)
VERDICT_INFO = _m(
    "verdict_info", "info",
    "Why the health verdict is what it is: a stable reason code (the sentence with the numbers is in /api/v1/status).",
    *S, "state", "reason",
)
# The verdict's memory (issue 17): the reference learned while healthy, frozen while degraded.
HEALTH_SINCE = _m(
    "health_since_timestamp_seconds", "gauge",
    "Unix time (UTC) the series' current health state began: with specdecode_health, how long it has been degraded.", *S,
)
REFERENCE_MEAN_ACCEPTANCE_LENGTH = _m(
    "reference_mean_acceptance_length", "gauge",
    "Mean acceptance length (1 + A/D pooled) of the reference the verdict judges against: the best day of healthy traffic "
    "within the hold, frozen while degraded or broken; absent while it is still learning.", *S,
)
REFERENCE_POSITION_ACCEPTANCE = _m(
    "reference_position_acceptance_ratio", "gauge", "Per-position acceptance (A_i/D pooled) of the verdict's reference.", *S, "position",
)

EXPECTED_SPEEDUP = _m(
    "expected_speedup", "gauge",
    "Estimated speed-up over plain decoding if only the first speculative_tokens positions were drafted (E(k)/step cost(k)).",
    *W, "speculative_tokens",
)
# Pay-off at the server's load (judge/payoff.py): its own tokens/s against plain decoding's at the same
# running requests, from a calibration (--calibration); absent without one, or without load in the log.
PAYOFF_SPEEDUP = _m(
    "payoff_speedup", "gauge",
    "Tokens/s the server emits over what plain decoding emits at the same running requests (the calibration), over the window: "
    "below 1, speculation is slower than not speculating at this load.", *W,
)
PAYOFF_RUNNING = _m("payoff_running_requests", "gauge", "Mean requests running over the window: the load the pay-off speed-up is for.", *W)
PAYOFF_BEST_K = _m(
    "payoff_recommended_speculative_tokens", "gauge",
    "Number of speculative tokens with the most tokens/s at the window's load (0: plain decoding is faster), from the measured step costs.", *W,
)
BREAK_EVEN_RUNNING = _m(
    "break_even_running_requests", "gauge",
    "Running requests above which speculation is slower than plain decoding (measured between load bands, or extrapolated past the "
    "busiest); absent when none is known.", *S,
)
SPECULATED_SHARE = _m(
    "speculated_steps_ratio", "gauge",
    "Share of decode steps that drafted over the window (D / (emitted - accepted tokens)): below 1 while speculation is partly off "
    "(requests past the drafter's length, dynamic k at 0, adaptive verification).", *W,
)
INFO = _m(
    "info", "info", "Speculative config the server announced at startup.",
    "upstream", "model_name", "method", "num_speculative_tokens", "draft_model", "server_version",
)

# Values the server reports as snapshots (SGLang gauges and log lines, vLLM V0 gauges): not counts.
SAMPLED_MEAN_ACCEPTANCE_LENGTH = _m(
    "sampled_mean_acceptance_length", "gauge",
    "Mean acceptance length as the server last reported it for its own last batch window (sampled, not pooled; SGLang accept len).", *S,
)
SAMPLED_DRAFT_ACCEPTANCE_RATIO = _m(
    "sampled_draft_acceptance_ratio", "gauge",
    "Draft acceptance as the server last reported it, in the server's own definition (sampled; SGLang's changed across versions; vLLM V0: since start).", *S,
)
SAMPLED_SYSTEM_EFFICIENCY = _m(
    "sampled_system_efficiency_ratio", "gauge", "vLLM V0 system efficiency (emitted / max emittable tokens) since start, as reported (sampled).", *S
)
SAMPLED_NUM_DRAFT_TOKENS = _m(
    "sampled_num_draft_tokens", "gauge", "Draft tokens per step the server currently uses (SGLang adaptive setting, sampled).", *S
)
SAMPLED_TIMESTAMP = _m("sampled_timestamp_seconds", "gauge", "Unix time of the last sampled values of a series.", *S)

# Log and /metrics of the same server compared.
DISAGREEMENT = _m(
    "source_disagreement_ratio", "gauge",
    "Relative difference |compared - reference| / reference of one quantity over the same window, for a server read two ways; "
    "the reference (upstream) is the more exact source: plugin records, else /metrics, else the log.",
    "upstream", "compared_upstream", "model_name", "engine", "window", "quantity",
)

# Self-metrics.
BUILD_INFO = _m("exporter_build_info", "info", "Version of specdecode-exporter and its Python.", "version", "python_version")
SOURCE_UP = _m("source_up", "gauge", "1 when the source can be read (log file present), 0 when not.", "source", "upstream")
SOURCE_LAST_SUCCESS = _m(
    "source_last_success_timestamp_seconds", "gauge", "Unix time the source was last read successfully.", "source", "upstream"
)
LOG_LINES = _m("log_lines", "counter", "Log lines read.", "upstream")
LOG_SPEC_LINES = _m("log_spec_lines", "counter", "Spec-decode log lines recognised, by layout.", "upstream", "format")
LOG_PARSE_ERRORS = _m(
    "log_parse_errors", "counter", "Lines that looked like spec-decode lines (or container records) but could not be used.",
    "upstream", "reason",
)
LAST_SPEC_LINE = _m(
    "last_spec_line_timestamp_seconds", "gauge", "Unix time the last spec-decode line was read.", "upstream"
)
LOG_ROTATIONS = _m("log_rotations", "counter", "Times the file behind a followed path was replaced.", "upstream")
LOG_TRUNCATIONS = _m("log_truncations", "counter", "Times a followed file was truncated (copytruncate).", "upstream")
SERIES_DROPPED = _m("series_dropped", "counter", "Series dropped because the series cap was reached.")
SCRAPE_DURATION = _m("scrape_duration_seconds", "gauge", "Duration of the last scrape of a target.", "upstream")
SCRAPE_ERRORS = _m(
    "scrape_errors", "counter",
    "Failed scrapes by reason: refused, timeout, http_status, too_large, unparsable, no_spec_families, transport, internal_error; "
    "invalid_values counts series skipped for NaN/Inf/negative or contradictory counters.",
    "upstream", "reason",
)
SERVER_RESTARTS = _m("server_restarts", "counter", "Server restarts seen as counter resets or V0 count drops (the interval across each is dropped).",
    "upstream")
TARGET_INFO = _m("target_info", "info", "A scrape target and the labels its targets file gives it.", "upstream", "(labels from the targets file)")

# Read, not exported: vLLM's own V1 families (reference/telemetry-formats.md §3.2), so the mixin's
# rules and dashboards take their names from here too. Kept out of ALL, which lists what we export.
VLLM_DRAFTS = MetricSpec("vllm:spec_decode_num_drafts", "counter", "Number of spec decoding drafts.", ("model_name", "engine"))
VLLM_DRAFT_TOKENS = MetricSpec("vllm:spec_decode_num_draft_tokens", "counter", "Number of draft tokens.", ("model_name", "engine"))
VLLM_ACCEPTED_TOKENS = MetricSpec("vllm:spec_decode_num_accepted_tokens", "counter", "Number of accepted tokens.", ("model_name", "engine"))
VLLM_ACCEPTED_PER_POSITION = MetricSpec(
    "vllm:spec_decode_num_accepted_tokens_per_pos", "counter", "Accepted tokens per draft position.", ("model_name", "engine", "position")
)
VLLM_GENERATION_TOKENS = MetricSpec("vllm:generation_tokens", "counter", "Number of generation tokens processed.", ("model_name", "engine"))

ALL: tuple[MetricSpec, ...] = tuple(v for v in list(globals().values()) if isinstance(v, MetricSpec) and v.name.startswith(PREFIX))
VLLM: tuple[MetricSpec, ...] = tuple(v for v in list(globals().values()) if isinstance(v, MetricSpec) and v.name.startswith("vllm:"))


HEALTH_STATES = 5  # ok, wasteful, degraded, broken, no_data (judge/verdict.py's STATES; a test keeps them equal)


def series_samples(
    k: int, *, plugin: bool = False, derived_windows: int = 1, speedup_all: bool = False, conditional: bool = False, payoff: bool = False
) -> dict[str, int]:
    """The most `specdecode_*` samples one (model, engine) series exports at k, by sample name.

    Counters once (Prometheus computes rates over any window from them); the verdict and the
    reference once; the derived gauges once per derived window (`--derived-windows`), with the
    expected speed-up for the recommended and the running k (two at most) unless
    `--speedup-candidates all`, and the conditional acceptance only with `--conditional-gauges`.
    A gauge that cannot be known (no drafts in the window, a position never reached) is absent;
    `payoff`: the server's lines print its load and the sidecar has a --calibration (the pay-off
    gauges and the share of steps that speculated are there; without them, absent).
    """
    counts = {
        DRAFTS.sample_name: 1, DRAFT_TOKENS.sample_name: 1, ACCEPTED_TOKENS.sample_name: 1,
        ACCEPTED_PER_POSITION.sample_name: k, DRAFT_TOKENS_PER_POSITION.sample_name: k if plugin else 0,
        HEALTH.sample_name: HEALTH_STATES, VERDICT_INFO.sample_name: 1, HEALTH_SINCE.sample_name: 1,
        REFERENCE_MEAN_ACCEPTANCE_LENGTH.sample_name: 1, REFERENCE_POSITION_ACCEPTANCE.sample_name: k,
        INFO.sample_name: 1,  # one per upstream and model
        BREAK_EVEN_RUNNING.sample_name: 1 if payoff else 0,
    }
    per_window = {
        DRAFT_ACCEPTANCE_RATIO.sample_name: 1, WASTED_TOKENS_RATE.sample_name: 1, MEAN_ACCEPTANCE_LENGTH.sample_name: 1,
        MEAN_DRAFT_LENGTH.sample_name: 1, RECOMMENDED_K.sample_name: 1, POSITION_ACCEPTANCE.sample_name: k,
        POSITION_CONDITIONAL.sample_name: k if conditional else 0, EXPECTED_SPEEDUP.sample_name: k + 1 if speedup_all else min(2, k + 1),
        **{spec.sample_name: 1 if payoff else 0 for spec in (SPECULATED_SHARE, PAYOFF_SPEEDUP, PAYOFF_RUNNING, PAYOFF_BEST_K)},
    }
    counts.update({name: count * derived_windows for name, count in per_window.items()})
    return {name: count for name, count in counts.items() if count}


def samples_table(ks: tuple[int, ...] = (1, 2, 4, 8, 15, 16)) -> str:
    """Samples per series by k: the default, with the plugin's per-position drafts, and every option on."""
    rows = [
        "| k | default (log or /metrics) | default, vLLM plugin | `--derived-windows all --speedup-candidates all --conditional-gauges` (3 windows, plugin) |",
        "|---|---|---|---|",
    ]
    for k in ks:
        default = sum(series_samples(k).values())
        plugin = sum(series_samples(k, plugin=True).values())
        full = sum(series_samples(k, plugin=True, derived_windows=3, speedup_all=True, conditional=True).values())
        rows.append(f"| {k} | {default} | {plugin} | {full} |")
    return "\n".join(rows) + "\n"


def markdown_table() -> str:
    """The README's metric table, generated so it cannot drift from what is exported."""
    rows = ["| metric | type | labels | help |", "|---|---|---|---|"]
    for spec in ALL:
        labels = ", ".join(f"`{label}`" for label in spec.labels) or "—"
        help_text = spec.help.replace("|", "\\|")
        rows.append(f"| `{spec.sample_name}` | {spec.type} | {labels} | {help_text} |")
    rows += ["", "Samples per (model, engine) series at most, by k (`series_samples` in exporter/metric_names.py; a test renders them):", ""]
    return "\n".join(rows) + "\n" + samples_table()


if __name__ == "__main__":
    print(markdown_table(), end="")
