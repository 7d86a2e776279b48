"""Parse the message of a vLLM log line: spec-decode metrics, engine markers, startup config.

Every variant of reference §2 is recognised: V0-a, V0-b (`Speculative metrics:` with System
efficiency, cumulative counts), V1-a (`Speculative metrics:` without it) and V1-b … V1-e
(`SpecDecoding metrics:`). Fields are read as `Key: value` pairs in any order, so forks that add
keys still parse; the per-position list is taken as the run of numbers after its key because its
items use the same `, ` separator as the pairs.

A line cut short (a shipper's size limit, a paste) is refused with one reason, `truncated`,
wherever it was cut: its last field is incomplete (`…Drafted: 15 tokens, Per-pos`, a `%` field
without its `%`, a unit cut off), or it ends before the field its layout always ends with (V0's
closing `.`, V1-e's `Avg Draft acceptance rate`). Lines that newer vLLMs and forks print next to
the spec line (`DiffusionDecoding metrics:`, `SpecDecoding timing …`) are recognised as seen,
never as a spec line (SEEN_LINES).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from exporter.limits import MAX_COUNT, MAX_POSITIONS
from exporter.records import EngineLoad, EngineMarker, ParsedSpecLine, SpecConfig
from exporter.vocabulary import LogProblem

V0_PREFIX = "Speculative metrics: "
V1_PREFIX = "SpecDecoding metrics: "
SPEC_MARKERS = (V0_PREFIX, V1_PREFIX)
MAX_COUNT_DIGITS = len(str(MAX_COUNT))  # a longer number is refused before int() reads it
PER_POSITION_KEY = "Per-position acceptance rate"
TRUNCATED: LogProblem = "truncated"
# Lines printed near the spec line that are not spec-decode counts: the `format` they are counted
# under (sources' formats), never a series. DiffusionDecoding replaces the spec line for discrete
# diffusion models (V1-f, vllm/v1/spec_decode/metrics.py in 0.34.0, see docs/vllm-versions.md);
# `SpecDecoding timing (mean ms/step over N steps): …` is a research fork's per-step timing.
SEEN_LINES = (("DiffusionDecoding metrics: ", "V1-f"), ("SpecDecoding timing", "spec-timing"))


class SpecLineError(ValueError):
    """A line that starts like a spec-decode line but cannot be used; `reason` is a metric label."""

    def __init__(self, reason: LogProblem, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason: LogProblem = reason


_NUMBER = r"(?:\d+(?:\.\d+)?|nan|inf)"
# vLLM joins the per-position rates with ", " (v1/spec_decode/metrics.py:118 in 0.26.0); a fork or a
# paste that lost the spaces joins them with "," alone (`0.000,0.000`), the same list (issue #32)
_ITEM_SEPARATOR = r",[ \t]*"
_PER_POSITION = re.compile(
    re.escape(PER_POSITION_KEY) + rf": ((?:{_NUMBER}(?:{_ITEM_SEPARATOR}{_NUMBER})*)?)(?=, |$|,? *$)"
)
# A key starts at the message start or after ", ", begins with a letter and ends at ": ".
_KEY = re.compile(r"(?:^|, )([A-Za-z][A-Za-z0-9 ()/_-]*?): ")
_ENGINE = re.compile(r"^Engine (\d+): ")
_AGGREGATED = re.compile(r"^\d+ Engines Aggregated: ")
# the stats line's first four fields, the same in every V1 release 0.24 → 0.34 (v1/metrics/loggers.py
# LoggingStatLogger.log: 0.26.0 loggers.py:262-266; later fields vary by version and are not read)
LOAD_FIELDS = (
    r"Avg prompt throughput: ([0-9]+(?:\.[0-9]+)?) tokens/s, Avg generation throughput: ([0-9]+(?:\.[0-9]+)?) tokens/s, "
    r"Running: ([0-9]{1,9}) reqs, Waiting: ([0-9]{1,9}) reqs"
)
_LOAD = re.compile(LOAD_FIELDS)


def _pairs(body: str) -> dict[str, str]:
    """`Key: value, Key: value` → dict; a value runs to the next key."""
    keys = list(_KEY.finditer(body))
    pairs: dict[str, str] = {}
    for here, after in zip(keys, [*keys[1:], None], strict=False):
        end = after.start() if after is not None else len(body)
        pairs.setdefault(here[1], body[here.end() : end].strip().rstrip(",.").strip())
    return pairs


def _int(pairs: dict[str, str], key: str) -> int:
    raw = pairs.get(key)
    if raw is None:
        raise SpecLineError("missing_field", key)
    token = raw.split()[0] if raw.split() else ""
    if not token.isdigit() or len(token) > MAX_COUNT_DIGITS or int(token) > MAX_COUNT:  # what a counter can hold (limits.py)
        raise SpecLineError("bad_value", f"{key}={raw[:40]!r}")
    return int(token)


def _float(pairs: dict[str, str], key: str, *, suffix: str = "") -> float | None:
    raw = pairs.get(key)
    if raw is None:
        return None
    token = raw.split()[0] if raw.split() else ""
    if suffix and token.endswith(suffix):
        token = token[: -len(suffix)]
    try:
        return float(token)
    except ValueError:
        raise SpecLineError("bad_value", f"{key}={raw!r}") from None


def _positions(message: str) -> tuple[str, tuple[float, ...] | None]:
    """Cut the per-position list out of the message; return (rest, rates or None)."""
    match = _PER_POSITION.search(message)
    if match is None:
        if PER_POSITION_KEY in message:
            raise SpecLineError("bad_value", PER_POSITION_KEY)
        return message, None
    items = match[1]
    if items.count(",") >= MAX_POSITIONS:
        raise SpecLineError("bad_value", f"{PER_POSITION_KEY} longer than {MAX_POSITIONS} positions")
    rates = tuple(float(item) for item in re.split(_ITEM_SEPARATOR, items)) if items else ()
    if any(not 0.0 <= rate <= 1.0 for rate in rates):
        raise SpecLineError("bad_value", f"{PER_POSITION_KEY} outside 0..1")
    rest = message[: match.start()] + f"{PER_POSITION_KEY}: -" + message[match.end() :]
    return rest, rates


# The current layout (V1-e) exactly as vLLM ≥ 0.11 prints it: one regex instead of the general
# key/value reading below, which it must always agree with (tests/test_parse_vllm_log.py).
_V1E = re.compile(
    rf"Mean acceptance length: ({_NUMBER}), Accepted throughput: ({_NUMBER}) tokens/s, "
    rf"Drafted throughput: {_NUMBER} tokens/s, Accepted: (\d+) tokens, Drafted: (\d+) tokens, "
    rf"{re.escape(PER_POSITION_KEY)}: ((?:{_NUMBER}(?:, {_NUMBER})*)?), Avg Draft acceptance rate: ({_NUMBER})%"
)


def _parse_v1e(body: str) -> ParsedSpecLine | None:
    """The common case, fast; None when the body is not exactly V1-e (the general reader decides)."""
    match = _V1E.fullmatch(body)
    if match is None:
        return None
    mean_length, throughput, accepted, drafted, items, percent = match.groups()
    if len(accepted) > MAX_COUNT_DIGITS or len(drafted) > MAX_COUNT_DIGITS or items.count(",") >= MAX_POSITIONS:
        return None  # let the general reader name the error (bad_value)
    rates = tuple(map(float, items.split(", "))) if items else ()
    if not all(0.0 <= rate <= 1.0 for rate in rates) or int(accepted) > MAX_COUNT or int(drafted) > MAX_COUNT:
        return None  # let the general reader name the error
    return ParsedSpecLine(
        variant="V1-e",
        accepted_tokens=int(accepted),
        draft_tokens=int(drafted),
        cumulative=False,
        mean_acceptance_length=float(mean_length),
        position_rates=rates,
        draft_acceptance_percent=float(percent),
        accepted_throughput=float(throughput),
    )


# The last field of a spec line, complete: `Key: value` with the value's unit whole, or one
# item of the per-position list. Anything else at the end of a line means it was cut there.
_UNITS = {"Accepted": " tokens", "Drafted": " tokens", "Accepted throughput": " tokens/s", "Drafted throughput": " tokens/s",
          "Avg Draft acceptance rate": "%", "Draft acceptance rate": "%"}
_LAST_PAIR = re.compile(r"(?:^|, )([A-Za-z][A-Za-z0-9 ()/_-]*?): ([^:]*)$")
_LIST_ITEM = re.compile(rf"(?:^|{_ITEM_SEPARATOR}){_NUMBER}$")
# Each layout's keys in the order it prints them (reference §2): a line whose keys are a proper
# prefix of a layout's, and the full key list of none, stopped early.
_RATE, _MEAN = "Draft acceptance rate", "Mean acceptance length"
_V1_LAYOUTS = (
    (_MEAN, "Accepted throughput", "Drafted throughput", "Accepted", "Drafted", PER_POSITION_KEY, "Avg Draft acceptance rate"),  # V1-e
    (_RATE, _MEAN, "Accepted throughput", "Drafted throughput", "Accepted", "Drafted", PER_POSITION_KEY),  # V1-d
    (_RATE, _MEAN, "Accepted", "Drafted", PER_POSITION_KEY),  # V1-c
    (_RATE, "Accepted", "Drafted"),  # V1-b
)
_V0_LAYOUTS = (
    (_RATE, "System efficiency", "Number of speculative tokens", "Number of accepted tokens", "Number of draft tokens",
     "Number of emitted tokens"),  # V0-a/b (the typo's `tokens tokens` read as `tokens`)
    (_RATE, "Number of accepted tokens", "Number of draft tokens"),  # V1-a
)


def _stopped_early(body: str, layouts: tuple[tuple[str, ...], ...]) -> bool:
    keys = tuple(match[1] for match in _KEY.finditer(body.replace(" tokens tokens:", " tokens:")))
    if any(keys[: len(layout)] == layout for layout in layouts):
        return False  # every field of a layout is there (a fork may add more after them)
    return any(layout[: len(keys)] == keys for layout in layouts)


def _last_field_cut(text: str) -> bool:
    """The body ends inside a field: a key cut off (`…, Per-pos`), or a value without its whole unit."""
    last = _LAST_PAIR.search(text)
    if last is None:
        return _LIST_ITEM.search(text) is None
    key, value = last[1], last[2]
    if key == PER_POSITION_KEY:
        return value != "" and re.fullmatch(rf"{_NUMBER}(?:{_ITEM_SEPARATOR}{_NUMBER})*", value) is None
    unit = _UNITS.get(key)
    if unit is not None:
        return _value_cut(value, unit)
    if ", " in value:  # an unknown (fork) key whose value runs into a fragment that is no pair
        return _LIST_ITEM.search(value) is None and not value.endswith(("]", ")"))
    return value == ""


def _value_cut(value: str, unit: str) -> bool:
    """`value` stops inside `<number><unit>` (`15 tok`, `61.4`, `nan`'s `na`), or runs on into a key
    fragment (`15 tokens, Per-pos`); a value that is simply wrong (`lots`) is bad, not cut."""
    number = re.match(r"\d+(?:\.\d*)?|nan|inf", value)
    if number is None:
        return value == "" or "nan".startswith(value) or "inf".startswith(value)
    rest = value[number.end() :]
    if rest == unit:
        return False
    return unit.startswith(rest) or (rest.startswith(unit + ", ") and ": " not in rest)


def _cut_v1(body: str) -> bool:
    """A `SpecDecoding metrics:` body cut short (see the module's doc)."""
    text = body.rstrip()
    return _stopped_early(text, _V1_LAYOUTS) or _last_field_cut(text)


def _cut_v0(body: str) -> bool:
    """A `Speculative metrics:` body cut short: V0 always ends with `Number of emitted tokens: N.`."""
    text = body.rstrip()
    if _stopped_early(text, _V0_LAYOUTS):
        return True
    if "System efficiency" in text and "Number of emitted tokens" in text:
        return re.search(r"Number of emitted tokens(?: tokens)?: \d+\.$", text) is None
    return False


def parse_spec_message(message: str, *, fast: bool = True) -> ParsedSpecLine | None:
    """Parse a log message; None if it is not a spec-decode line; SpecLineError if it is but is bad."""
    if message.startswith(V1_PREFIX):
        body = message[len(V1_PREFIX) :]
        parsed = _parse_v1e(body) if fast else None
        if parsed is not None:
            return parsed
        if _cut_v1(body):
            raise SpecLineError(TRUNCATED, body[-40:])
        return _parse_v1(body)
    if message.startswith(V0_PREFIX):
        body = message[len(V0_PREFIX) :]
        if _cut_v0(body):
            raise SpecLineError(TRUNCATED, body[-40:])
        if "System efficiency" in body:
            return _parse_v0(body)
        return _parse_v1a(body)
    if message.startswith(BODY_STARTS):
        label = _label_of(message)
        return None if label is None else parse_spec_message(label + message, fast=fast)
    return None


# The first words of a spec line's body: a body pasted without its `SpecDecoding metrics: ` or
# `Speculative metrics: ` label (issue #32) is read where its keys are a layout's own, in order
BODY_STARTS = (f"{_MEAN}: ", f"{_RATE}: ")


def _label_of(body: str) -> str | None:
    """The label a body printed without one belongs to: the layout whose keys it prints, in order
    (all of them, or the first two or more of them: a cut line, refused as such); None where the
    keys are no layout's (a fork's, or a fragment), so nothing is guessed."""
    keys = tuple(match[1] for match in _KEY.finditer(body.replace(" tokens tokens:", " tokens:")))
    for label, layouts in ((V1_PREFIX, _V1_LAYOUTS), (V0_PREFIX, _V0_LAYOUTS)):
        if any(keys == layout or (2 <= len(keys) < len(layout) and layout[: len(keys)] == keys) for layout in layouts):
            return label
    return None


def seen_line(message: str) -> str | None:
    """The `format` of a line printed near the spec line that is not one (SEEN_LINES), else None."""
    for prefix, name in SEEN_LINES:
        if message.startswith(prefix):
            return name
    return None


def _parse_v0(body: str) -> ParsedSpecLine:
    typo = "Number of draft tokens tokens" in body
    pairs = _pairs(body.replace(" tokens tokens:", " tokens:"))
    rate = _float(pairs, "Draft acceptance rate")
    return ParsedSpecLine(
        variant="V0-a" if typo else "V0-b",
        accepted_tokens=_int(pairs, "Number of accepted tokens"),
        draft_tokens=_int(pairs, "Number of draft tokens"),
        cumulative=True,
        num_speculative_tokens=_int(pairs, "Number of speculative tokens"),
        emitted_tokens=_int(pairs, "Number of emitted tokens"),
        draft_acceptance_percent=None if rate is None else rate * 100.0,
    )


def _parse_v1a(body: str) -> ParsedSpecLine:
    pairs = _pairs(body)
    rate = _float(pairs, "Draft acceptance rate")
    return ParsedSpecLine(
        variant="V1-a",
        accepted_tokens=_int(pairs, "Number of accepted tokens"),
        draft_tokens=_int(pairs, "Number of draft tokens"),
        cumulative=False,
        draft_acceptance_percent=None if rate is None else rate * 100.0,
    )


def _parse_v1(body: str) -> ParsedSpecLine:
    rest, rates = _positions(body)
    pairs = _pairs(rest)
    keys = list(pairs)
    if keys and keys[0] == "Mean acceptance length":
        variant = "V1-e"
    elif "Accepted throughput" in pairs:
        variant = "V1-d"
    elif rates is not None or "Mean acceptance length" in pairs:
        variant = "V1-c"
    else:
        variant = "V1-b"
    percent = _float(pairs, "Avg Draft acceptance rate", suffix="%")
    if percent is None:
        percent = _float(pairs, "Draft acceptance rate", suffix="%")
    return ParsedSpecLine(
        variant=variant,
        accepted_tokens=_int(pairs, "Accepted"),
        draft_tokens=_int(pairs, "Drafted"),
        cumulative=False,
        mean_acceptance_length=_float(pairs, "Mean acceptance length"),
        position_rates=rates,
        draft_acceptance_percent=percent,
        accepted_throughput=_float(pairs, "Accepted throughput"),
    )


def parse_engine_marker(message: str) -> EngineMarker | None:
    """`Engine 001: …` → EngineMarker("1"); `4 Engines Aggregated: …` → EngineMarker("all"); a
    stats line's load (throughputs, running and waiting requests) comes with it."""
    match = _ENGINE.match(message)
    if match is not None:
        if message.startswith("Iteration(", match.end()):
            # `--enable-logging-iteration-details` (vLLM ≥ 0.26, loggers.py:182-183): one line per
            # step between a stats line and its spec line; neither, and must not move the engine
            return None
        return EngineMarker(engine=str(int(match[1])), load=_load(message, match.end()))
    aggregated = _AGGREGATED.match(message)
    if aggregated is not None:
        return EngineMarker(engine="all", load=_load(message, aggregated.end()))
    return None


def _load(message: str, at: int) -> EngineLoad | None:
    found = _LOAD.match(message, at)
    if found is None:
        return None
    return EngineLoad(prompt_throughput=float(found[1]), generation_throughput=float(found[2]), running=int(found[3]), waiting=int(found[4]))


# --- startup config -------------------------------------------------------------------------

_NON_DEFAULT = "non-default args: "
# the engine's startup line, and the crash dump's (`Dumping input data for V1 LLM engine (v%s) with
# config: %s, `, logging_utils/dump_input.py:73 in 0.26.0): the same VllmConfig text, so the same
# method, k and draft model, where a posted excerpt has only the dump (issue #32)
_ENGINE_INIT = re.compile(
    r"(?:Initializing an? (?:V1 )?LLM engine|Dumping input data for V1 LLM engine) \(v?(?P<version>[^)\s]+)\) with config: (?P<config>.*)"
)
_SPEC_REPR = re.compile(r"speculative_config=SpeculativeConfig\((?P<body>[^)]*)\)")
_REPR_FIELD = re.compile(r"(\w+)=('(?:[^'\\]|\\.)*'|[^,]*)")
_SERVED = re.compile(r"served_model_name=(\[[^\]]*\]|[^,]+)")
_MODEL = re.compile(r"(?:^|, )model='([^']*)'")
_SPEC_FLAGS = {"spec_method": "method", "spec_model": "model", "spec_tokens": "num_speculative_tokens"}
_SPEC_DICT = re.compile(r"'speculative_config': (\{[^{}]*\}|'[^']*'|\"[^\"]*\")")


def _first_name(value: Any) -> str | None:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return None if value in (None, "") else str(value)


def _spec_from_mapping(spec: dict[str, Any]) -> SpecConfig:
    # vLLM ≥ 0.26 accepts the user's hyphens inside --speculative-config and converts them only when
    # the config is built (arg_utils.py:1768 in 0.26), so `non-default args` shows them verbatim
    spec = {str(key).replace("-", "_"): value for key, value in spec.items()}
    k = spec.get("num_speculative_tokens", spec.get("num_spec_tokens"))
    method = spec.get("method")
    draft = spec.get("model")
    if method is None and draft in ("ngram", "[ngram]"):
        method = "ngram"
    variable = None
    if spec.get("num_speculative_tokens_per_batch_size"):  # dynamic SD: k follows the batch size
        variable = "k varies with the batch size (num_speculative_tokens_per_batch_size)"
    elif spec.get("enable_adaptive_verification") in (True, "true", "True", 1):  # dspark, from vLLM 0.28
        variable = "dspark's adaptive verification shortens drafts (enable_adaptive_verification)"
    return SpecConfig(
        method=None if method is None else str(method),
        num_speculative_tokens=int(k) if isinstance(k, int) or (isinstance(k, str) and k.isdigit()) else None,
        draft_model=None if draft is None else str(draft),
        variable_drafts=variable,
    )


def _parse_non_default_args(text: str) -> SpecConfig | None:
    try:
        args = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        args = None
    flags: dict[str, Any] = {}
    if isinstance(args, dict):
        spec = args.get("speculative_config")
        # --spec-method/--spec-model/--spec-tokens (arg_utils.py:1501-1505 in 0.24, :1869 in 0.33)
        flags = {name: args[key] for key, name in _SPEC_FLAGS.items() if args.get(key) is not None}
        served = _first_name(args.get("served_model_name"))
        model = _first_name(args.get("model") or args.get("model_tag"))
    else:  # a repr we cannot evaluate: fall back to the one field we need
        match = _SPEC_DICT.search(text)
        spec = match[1] if match else None
        served = model = None
    if isinstance(spec, str):
        try:
            spec = ast.literal_eval(spec.replace("true", "True").replace("false", "False").replace("null", "None"))
        except (ValueError, SyntaxError):
            spec = None
        if isinstance(spec, str):  # JSON text inside a quoted string
            try:
                spec = ast.literal_eval(spec)
            except (ValueError, SyntaxError):
                spec = None
    base = _spec_from_mapping(spec) if isinstance(spec, dict) else SpecConfig()
    if flags:
        base = base.merged(_spec_from_mapping(flags))
    if spec is None and not flags and served is None and model is None:
        return None
    return base.merged(SpecConfig(served_model_name=served, model=model))


def _version(text: str) -> str | None:
    """A version as printed, or None for an elided one (`(...)`, as posted logs shorten it)."""
    return text if text[:1].isdigit() else None


def _parse_engine_init(match: re.Match[str]) -> SpecConfig:
    config = match["config"]
    spec = SpecConfig(server_version=_version(match["version"]))
    spec_match = _SPEC_REPR.search(config)
    if spec_match is not None:
        fields: dict[str, Any] = {}
        for key, raw in _REPR_FIELD.findall(spec_match["body"]):
            raw = raw.strip()
            # a bare None is Python's repr of "not set" (ngram has no draft model), never a name
            fields[key] = raw[1:-1] if raw.startswith("'") else (int(raw) if raw.isdigit() else None if raw == "None" else raw)
        # V0 printed draft_model=… instead of method/model
        if "draft_model" in fields and "model" not in fields:
            fields["model"] = fields["draft_model"]
            if "method" not in fields:  # V0 ran a draft model, or n-gram lookup as draft_model='[ngram]'
                fields["method"] = "ngram" if fields["draft_model"] in ("ngram", "[ngram]") else "draft_model"
        spec = spec.merged(_spec_from_mapping(fields))
    served = _SERVED.search(config)
    model = _MODEL.search(config)
    served_name = None
    if served is not None:
        raw = served[1].strip()
        if raw.endswith(")") and raw.count("(") < raw.count(")"):
            raw = raw[:-1]  # V0 closed its config text with `served_model_name=%s)` (llm_engine.py:161 in 0.4.3)
        try:
            served_name = _first_name(ast.literal_eval(raw)) if raw.startswith("[") else raw.strip("'")
        except (ValueError, SyntaxError):
            served_name = raw
    return spec.merged(SpecConfig(served_model_name=served_name, model=model[1] if model else None))


V1_RUNNER = "Model Runner V2 does not yet support"  # vLLM ≥ 0.32 fell back to the V1 runner (config/vllm.py)
# The version banners: `vLLM API server version %s` (api_server.py, ≤ 0.9), `vLLM server version %s,
# serving model %s` (entrypoints/.../startup.py:38 in 0.33 and 0.34), and the logo's `version %s`
# line (a continuation line of a multi-line record, without an envelope; 0.11+).
_BANNER = re.compile(r"vLLM (?:API )?server version (?P<version>[0-9][^\s,]*)")
_LOGO_VERSION = re.compile(r"[\s█▀▄]*[█▀▄]\s+version\s+(?P<version>[0-9]\S*)\s*$")


def parse_version_banner(text: str, *, bare: bool = False) -> str | None:
    """The server version from a banner message or the logo's version line (ANSI already stripped),
    where vLLM's logger puts them: at the message's start (parse/anchor.py). `bare`: a line without
    an envelope, whose unknown prefix may come first — but no quote (then it is some other message's text)."""
    if not bare:
        match = _BANNER.match(text) or _LOGO_VERSION.match(text)
        return None if match is None else match["version"]
    found = _BANNER.search(text) or _LOGO_VERSION.search(text)
    if found is None or any(quote in text[: found.start()] for quote in "'\"`"):
        return None
    return found["version"]


def logo_version(text: str) -> bool:
    """Is this message the startup logo's version line (the one continuation line read, anchor.py)?"""
    return _LOGO_VERSION.match(text) is not None


def parse_config_message(message: str) -> SpecConfig | None:
    """Speculative config from a startup line (`non-default args:` or `Initializing … engine`)."""
    if message.startswith(V1_RUNNER):
        return SpecConfig(variable_drafts="the V1 model runner is in use (Model Runner V2 unsupported): n-gram drafts may be shorter than k")
    if message.startswith(_NON_DEFAULT):
        return _parse_non_default_args(message[len(_NON_DEFAULT) :])
    banner = parse_version_banner(message) if "version " in message else None
    if banner is not None:
        return SpecConfig(server_version=banner)
    match = _ENGINE_INIT.match(message)
    if match is not None:
        return _parse_engine_init(match)
    return None
