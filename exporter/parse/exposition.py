"""Read the spec-decode families out of a server's /metrics payload, for every engine we know.

A vLLM payload is 50–300 KB and we need a few dozen lines of it. A general parser builds an
object for each of its thousands of samples (prometheus_client takes 25–35 ms on 250 KB), so the
sample lines of the spec-decode families are found with `str.find` on their family prefix and
only those are parsed, by the text-format grammar below; the rest of the payload is never
looked at. Samples are keyed by name, never by prefix (`…num_drafts` vs `…num_draft_tokens` is
the classic bug of prefix matching).

Engines (reference §3–§5):
  vllm      vllm:spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total and
            …_num_accepted_tokens_per_pos_total{position}; `_created` gauges mark restarts.
            The V0 engine's counters are corrupt (incremented by cumulative totals), so for V0
            only its gauges are read, as sampled values.
  llamacpp  llamacpp:spec_decode_*: vLLM's schema, with or without `_total`.
  trtllm    trtllm_spec_decode_num_{draft,accepted}_tokens_total, per position
            trtllm_spec_decode_{drafted,accepted}_tokens_total{token_position} (drafts = drafted
            at position 0), trtllm_speculative_config_info.
  sglang    sglang:spec_accept_length / spec_accept_rate / spec_num_draft_tokens gauges:
            snapshots of the last batch window, not counts — kept as sampled values.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_FAMILY_PREFIXES = {
    "vllm": "vllm:spec_decode_",
    "llamacpp": "llamacpp:spec_decode_",
    "trtllm": "trtllm_spec",
    "sglang": "sglang:spec_",
}
PROCESS_START = "process_start_time_seconds"  # prometheus_client's process collector (vLLM's API server exports it)
# Text format 0.0.4: name{label="value",…} value [timestamp]; label values escape \\ \" \n.
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_PLAIN_LABELS = re.compile(r'(?:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"[^"\\]*"[ \t]*,)*(?:[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"[^"\\]*"[ \t]*)?')
_PLAIN_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"([^"]*)"')
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*(?:,[ \t]*|$)')
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPED = {"n": "\n", '"': '"', "\\": "\\"}


class ExpositionError(ValueError):
    """The payload is not Prometheus text exposition (HTML, JSON, garbage)."""


# Which counter a `_created` sample stamps, whatever the engine calls it: (quantity, position).
# quantity is one of drafts, draft_tokens, accepted_tokens, accepted_per_position; position is
# set only for accepted_per_position.
CounterId = tuple[str, int | None]


@dataclass
class CounterSet:
    """Cumulative spec-decode counters of one model/engine as one scrape saw them."""

    drafts: float | None = None
    draft_tokens: float | None = None
    accepted_tokens: float | None = None
    accepted_per_position: dict[int, float] = field(default_factory=dict)
    created: dict[CounterId, float] = field(default_factory=dict)  # when each counter was (re)created
    # the load beside the spec counters (vLLM): requests running now, tokens emitted since start
    running: float | None = None
    generation_tokens: float | None = None


@dataclass
class ExpositionSnapshot:
    """What one payload says: counters per (model_name, engine), sampled gauges, config labels."""

    engine_kind: str | None
    counters: dict[tuple[str, str], CounterSet] = field(default_factory=dict)
    sampled: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)
    started: float | None = None  # process_start_time_seconds: which server answered, with `_created` (intervals/instances.py)

    @property
    def empty(self) -> bool:
        return not self.counters and not self.sampled


def spec_samples(text: str, prefix: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of every sample line whose name starts with `prefix`; ExpositionError if malformed."""
    find = text.find
    at = find(prefix)
    while at >= 0:
        end = find("\n", at)
        if end < 0:
            end = len(text)
        if at == 0 or text[at - 1] == "\n":  # a sample line; not a HELP/TYPE comment or a label value
            yield _parse_sample(text[at:end].rstrip("\r"))
        at = find(prefix, end)


def _parse_sample(line: str) -> tuple[str, dict[str, str], float]:
    name, labels, value_text = _split_sample(line)
    try:
        return name, labels, float(value_text)
    except ValueError:
        raise ExpositionError(f"unparsable sample value: {line[:120]!r}") from None


def _split_sample(line: str) -> tuple[str, dict[str, str], str]:
    """(name, labels, value text). A target repeats the same `name{labels}` every scrape with new
    values, so the part before the value is parsed once and then looked up."""
    head, _, value_text = line.rpartition(" ")
    cached = _parsed_head(head) if head and not head.endswith((" ", "\t")) else None
    if cached is not None:
        return cached[0], cached[1], value_text
    return _split_slowly(line)


@functools.lru_cache(maxsize=16384)
def _parsed_head(head: str) -> tuple[str, dict[str, str]] | None:
    """`name` or `name{labels}` alone (never mutate the labels); None if `head` is more than that
    (a timestamp after the value, tabs) — the slow path decides."""
    name_match = _NAME.match(head)
    if name_match is None:
        return None
    at = name_match.end()
    if at == len(head):
        return name_match.group(), {}
    if head[at] != "{" or not head.endswith("}"):
        return None
    try:
        return name_match.group(), _labels(head[at + 1 : -1], name_match.group())
    except ExpositionError:
        return None


def _split_slowly(line: str) -> tuple[str, dict[str, str], str]:
    name_match = _NAME.match(line)
    if name_match is None:
        raise ExpositionError(f"unparsable sample line: {line[:120]!r}")
    name, at = name_match.group(), name_match.end()
    labels: dict[str, str] = {}
    if line.startswith("{", at):
        close = line.rfind("}")  # values and timestamps hold no "}", label values may
        if close < at:
            raise ExpositionError(f"unparsable sample line: {line[:120]!r}")
        labels = _labels(line[at + 1 : close], name)
        at = close + 1
    rest = line[at:].split()
    if not 1 <= len(rest) <= 2 or (at < len(line) and line[at] not in " \t"):
        raise ExpositionError(f"unparsable sample line: {line[:120]!r}")
    return name, labels, rest[0]


@functools.lru_cache(maxsize=8192)
def _labels(text: str, line: str) -> dict[str, str]:
    """The label set of a sample (cached: a target repeats the same label sets every scrape; never mutate)."""
    if "\\" not in text and _PLAIN_LABELS.fullmatch(text):  # the common case: no escapes
        return dict(_PLAIN_PAIR.findall(text))
    labels: dict[str, str] = {}
    at = 0
    while at < len(text):
        label = _LABEL.match(text, at)
        if label is None or label.end() == at:
            raise ExpositionError(f"unparsable labels of {line!r}: {text[:120]!r}")
        value = label.group(2)
        labels[label.group(1)] = _ESCAPE.sub(lambda m: _UNESCAPED.get(m.group(1), m.group(0)), value) if "\\" in value else value
        at = label.end()
    return labels


def detect_engine(text: str) -> str | None:
    """Which server wrote this payload, judged by its spec-decode family names."""
    for engine, prefix in _FAMILY_PREFIXES.items():
        if prefix in text:
            return engine
    return None


def _key(labels: dict[str, str]) -> tuple[str, str]:
    model = labels.get("model_name", "unknown")
    engine = labels.get("engine", labels.get("dp_rank", "0"))
    return model, engine


DRAINED_DETAIL = (
    "TensorRT-LLM's JSON /metrics: each read drains the engine's iteration-stats queue (trtllm-serve "
    "get_iteration_stats → get_stats_async), so what one reader takes no other reader — nor TensorRT-LLM's own "
    "Prometheus counters, fed from the same queue — ever sees; it is not read as counters and not scraped again: "
    "point the target at <server>/prometheus/metrics (return_perf_metrics), scraped by Prometheus or the sidecar"
)


DRAINED_COUNTERS_DETAIL = (
    "a spec-decode counter went down while its _created stayed the same: no restart, so this endpoint is drained on "
    "read (each scrape gets what accumulated since the last read, by anyone) or its counters are not cumulative; "
    "read as counters it would undercount, so it is not used and not scraped again"
)


def looks_drained(text: str) -> bool:
    """TensorRT-LLM's JSON iteration stats (`GET /metrics` of trtllm-serve): a JSON list of per-iteration
    objects (`{"iter": …, "specDecodingStats": {…}}`), `[]` when nothing ran since the last read."""
    body = text.strip()
    if not body.startswith("[") or not body.endswith("]"):
        return False
    import json  # only for such a body (start-up time)

    try:
        stats = json.loads(body)
    except ValueError:
        return False
    return isinstance(stats, list) and all(isinstance(stat, dict) and "iter" in stat for stat in stats)


def parse_exposition(text: str, engine: str | None = None) -> ExpositionSnapshot:
    """Parse the spec-decode part of a payload; ExpositionError if it is not text exposition."""
    stripped = text.lstrip()[:64].lower()
    if stripped.startswith(("<!doctype", "<html", "{", "[")):
        raise ExpositionError("payload is HTML or JSON, not Prometheus text")
    kind = engine or detect_engine(text)
    snapshot = ExpositionSnapshot(engine_kind=kind)
    if kind is None:
        return snapshot
    if kind == "vllm" and ("vllm:spec_decode_efficiency" in text or "vllm:spec_decode_num_emitted_tokens" in text):
        snapshot.config["v0"] = "1"  # a V0 server: its counters are corrupt (sum-of-sums), only gauges count
    reader = {"vllm": _read_vllm, "llamacpp": _read_vllm, "trtllm": _read_trtllm, "sglang": _read_sglang}[kind]
    for name, labels, value in spec_samples(text, _FAMILY_PREFIXES[kind]):
        reader(snapshot, name, labels, value)
    for name, _, value in spec_samples(text, PROCESS_START):
        if name == PROCESS_START:
            snapshot.started = value
    if kind == "vllm" and snapshot.counters:
        _read_vllm_load(snapshot, text)
    return snapshot


_LOAD_FAMILIES = ("vllm:num_requests_running", "vllm:generation_tokens_total")


def _read_vllm_load(snapshot: ExpositionSnapshot, text: str) -> None:
    """vLLM's running requests (gauge) and emitted tokens (counter) of the series that speculate:
    the load the pay-off estimate compares with plain decoding (judge/payoff.py)."""
    for family in _LOAD_FAMILIES:
        for name, labels, value in spec_samples(text, family):
            counters = snapshot.counters.get(_key(labels)) if name == family else None
            if counters is None:
                continue
            if family == "vllm:num_requests_running":
                counters.running = value
            else:
                counters.generation_tokens = value


def _counters_of(snapshot: ExpositionSnapshot, key: tuple[str, str]) -> CounterSet:
    counters = snapshot.counters.get(key)  # setdefault would build a CounterSet for every sample
    if counters is None:
        counters = snapshot.counters[key] = CounterSet()
    return counters


def _counter_name(name: str, prefix: str) -> str:
    """`vllm:spec_decode_num_drafts_total` → `num_drafts`; `_created` kept as a suffix."""
    base = name[len(prefix) :]
    if base.endswith("_created"):
        return base
    return base.removesuffix("_total")


def _read_vllm(snapshot: ExpositionSnapshot, name: str, labels: dict[str, str], value: float) -> None:
    for prefix in ("vllm:spec_decode_", "llamacpp:spec_decode_"):
        if name.startswith(prefix):
            break
    else:
        return
    base = _counter_name(name, prefix)
    key = _key(labels)
    if base in ("draft_acceptance_rate", "efficiency"):  # V0 gauges, cumulative since start
        sampled_name = "draft_acceptance_ratio" if base == "draft_acceptance_rate" else "system_efficiency_ratio"
        snapshot.sampled.setdefault(key, {})[sampled_name] = value
        return
    if "v0" in snapshot.config:
        return
    counters = _counters_of(snapshot, key)
    if base.endswith("_created"):
        counter = _VLLM_COUNTERS.get(base.removesuffix("_created"))
        position = labels.get("position", "")
        if counter == "accepted_per_position" and position.isdigit():
            counters.created[(counter, int(position))] = value
        elif counter is not None and counter != "accepted_per_position":
            counters.created[(counter, None)] = value
    elif base == "num_drafts":
        counters.drafts = value
    elif base == "num_draft_tokens":
        counters.draft_tokens = value
    elif base == "num_accepted_tokens":
        counters.accepted_tokens = value
    elif base == "num_accepted_tokens_per_pos" and labels.get("position", "").isdigit():
        counters.accepted_per_position[int(labels["position"])] = value


def _read_trtllm(snapshot: ExpositionSnapshot, name: str, labels: dict[str, str], value: float) -> None:
    key = _key(labels)
    if name == "trtllm_speculative_config_info":
        snapshot.config.update({k: v for k, v in labels.items() if k != "model_name"})
        return
    created = name.endswith("_created")
    base = name.removeprefix("trtllm_spec_decode_").removesuffix("_created" if created else "_total")
    counters = _counters_of(snapshot, key)
    position = labels.get("token_position")
    if created:
        counter = _trtllm_counter(base, position)
        if counter is not None:
            counters.created[counter] = value
        return
    if base == "num_draft_tokens":
        counters.draft_tokens = value
    elif base == "num_accepted_tokens":
        counters.accepted_tokens = value
    elif base == "drafted_tokens" and position == "0":
        counters.drafts = value  # every draft has a position 0
    elif base == "accepted_tokens" and position is not None and position.isdigit():
        counters.accepted_per_position[int(position)] = value
    elif base == "acceptance_length":
        snapshot.sampled.setdefault(key, {})["mean_acceptance_length"] = value


_VLLM_COUNTERS = {  # vLLM's (and llama.cpp's) counter names, without prefix and suffix
    "num_drafts": "drafts",
    "num_draft_tokens": "draft_tokens",
    "num_accepted_tokens": "accepted_tokens",
    "num_accepted_tokens_per_pos": "accepted_per_position",
}


def _trtllm_counter(base: str, position: str | None) -> CounterId | None:
    """TensorRT-LLM counts drafts as the drafted tokens at position 0, and positions by label."""
    if base == "num_draft_tokens":
        return ("draft_tokens", None)
    if base == "num_accepted_tokens":
        return ("accepted_tokens", None)
    if base == "drafted_tokens" and position == "0":
        return ("drafts", None)
    if base == "accepted_tokens" and position is not None and position.isdigit():
        return ("accepted_per_position", int(position))
    return None


_SGLANG_GAUGES = {
    "sglang:spec_accept_length": "mean_acceptance_length",
    "sglang:spec_accept_rate": "draft_acceptance_ratio",
    "sglang:spec_num_draft_tokens": "num_draft_tokens",
}


def _read_sglang(snapshot: ExpositionSnapshot, name: str, labels: dict[str, str], value: float) -> None:
    sampled_name = _SGLANG_GAUGES.get(name)
    if sampled_name is None:
        return
    if labels.get("tp_rank", "0") != "0":  # one series per scheduler rank: TP ranks repeat the leader
        return
    snapshot.sampled.setdefault(_key(labels), {})[sampled_name] = value
