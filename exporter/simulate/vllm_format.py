"""What vLLM prints, line for line: the layouts of vLLM 0.24.0 → 0.33.0 and of reference §2.

`V1-e` (the current layout, the default) is written as the server's vLLM version writes it
(layouts.py: prefix order, JSON records from 0.32, each line's `[file:line]`), as in the 0.24.0
and 0.26.0 captures: `Engine 000:` then `SpecDecoding metrics:`, optionally with the
`--enable-logging-iteration-details` lines between. Older layouts are for exercising parsers:
V1-d, V1-c (with the process prefix of ≈v0.10), V1-b (no prefix) and V0-b (cumulative counts,
the pre-v0.8 `metrics.py:367]` formatter).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client.utils import floatToGoString as _untyped_float_text

from exporter.simulate.engine import Counts, Engine, ServerView
from exporter.simulate.layouts import ITERATION_FROM_API_SERVER, minor
from exporter.simulate.layouts import source as file_line

LOG_FORMATS = ("V1-e", "V1-d", "V1-c", "V1-b", "V0-b")

floatToGoString: Callable[[float], str] = _untyped_float_text  # prometheus_client's number format; its function is untyped


def _stamp(server: ServerView) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.localtime(server.now))


def _api(server: ServerView, source: str, message: str, level: str = "INFO") -> str:
    """An API-server record; `source` is a layouts.py kind ("stats", "spec", …) or a `file:line`."""
    if server.log_format in ("V1-b", "V0-b"):  # before the process prefix existed
        bracket = "" if server.log_format == "V0-b" else "["
        return f"{level} {_stamp(server)} {bracket}{file_line(source, server.layout.version)}] {message}"
    return server.layout.record(server.now, "APIServer", server.api_pid, source, message, level)


def _core(server: ServerView, source: str, message: str) -> str:
    if server.log_format in ("V1-b", "V0-b"):
        bracket = "" if server.log_format == "V0-b" else "["
        return f"INFO {_stamp(server)} {bracket}{file_line(source, server.layout.version)}] {message}"
    return server.layout.record(server.now, "EngineCore", server.engine_pid, source, message)


def startup_lines(server: ServerView) -> list[str]:
    s = server.scenario
    k = s.k
    if server.log_format == "V0-b":
        return [
            _core(
                server,
                "llm_engine.py:237",
                f"Initializing an LLM engine (v0.6.3) with config: model='{s.model}', "
                f"speculative_config=SpeculativeConfig(draft_model='{s.draft_model}', num_spec_tokens={k}), "
                f"tokenizer='{s.model}', seed=0, served_model_name={s.served_model_name}",
            )
        ]
    spec = {"method": s.method, "model": s.draft_model, "num_speculative_tokens": k}
    args: dict[str, object] = {"model_tag": s.model, "model": s.model, "served_model_name": [s.served_model_name], "speculative_config": spec}
    version = server.layout.version
    if server.iteration_details:
        args["enable_logging_iteration_details"] = True
    # the logo (text) or, with the JSON formatter, one line naming version and model (startup.py:16-38 in 0.33)
    banner = f"vLLM server version {version}, serving model {s.model}" if server.layout.json_logs else f"version {version}"
    return [
        _api(server, "version", banner),
        _api(server, "args", f"non-default args: {args!r}"),
        _core(
            server,
            "engine_init",
            f"Initializing a V1 LLM engine (v{version}) with config: model='{s.model}', "
            f"speculative_config=SpeculativeConfig(method='{s.method}', model='{s.draft_model}', num_spec_tokens={k}), "
            f"tokenizer='{s.model}', skip_tokenizer_init=False, seed=0, served_model_name={s.served_model_name}, "
            "enable_prefix_caching=True, enable_chunked_prefill=True",
        ),
        _api(server, "serving", "Starting vLLM server on http://0.0.0.0:8000"),
        server.layout.uvicorn(server.now, server.api_pid, f"Started server process [{server.api_pid}]")
        if server.log_format != "V1-b"
        else f"INFO:     Started server process [{server.api_pid}]",
        server.layout.uvicorn(server.now, server.api_pid, "Application startup complete.")
        if server.log_format != "V1-b"
        else "INFO:     Application startup complete.",
    ]




def shutdown_lines(server: ServerView) -> list[str]:
    return [
        _api(server, "launcher.py:100", "[shutdown] API server: shutdown triggered"),
        _core(server, "core.py:1214", "[shutdown] EngineCore: trigger received signal=SIGTERM"),
    ]


def access_line(server: ServerView, client: str, method: str, path: str, status: int) -> str:
    message = f'{client} - "{method} {path} HTTP/1.1" {status}'
    if server.log_format in ("V1-b", "V0-b"):
        return f"INFO:     {message} {'OK' if status == 200 else ''}".rstrip()
    if server.layout.json_logs:  # the JSON access record has no status phrase
        return server.layout.uvicorn(server.now, server.api_pid, message, access=True)
    return server.layout.uvicorn(server.now, server.api_pid, f"{message} {'OK' if status == 200 else ''}".rstrip(), access=True)


def iteration_lines(server: ServerView, steps: int) -> list[str]:
    """`--enable-logging-iteration-details`: one line per engine step (a few per tick, not every step).

    From 0.26 the API server logs them with `Engine 00N: ` (loggers.py:182-183 in 0.26); before,
    the engine core logged them without (core.py:452 in 0.24).
    """
    if not server.iteration_details or server.log_format != "V1-e":
        return []
    lines = []
    from_api = minor(server.layout.version) >= ITERATION_FROM_API_SERVER
    for engine in server.engines:
        server.iterations += steps
        text = (f"Iteration({server.iterations}): 0 context requests, 0 context tokens, 16 generation requests, "
                f"{16 * (1 + server.scenario.k)} generation tokens, iteration elapsed time: 24.73 ms")
        if from_api:
            lines.append(_api(server, "iteration", f"Engine {engine.index:03d}: {text}, GPU KV cache usage: 0.4%"))
        else:
            lines.append(_core(server, "iteration", text))
    return lines


def interval_lines(server: ServerView, seconds: float) -> list[str]:
    """The periodic stats: per engine an `Engine 00N:` line and, if it drafted, its spec line."""
    lines = []
    for engine in server.engines:
        counts = engine.interval
        generated = counts.accepted + counts.drafts
        if server.log_format != "V0-b":
            lines.append(
                _api(
                    server,
                    "stats" if server.log_format == "V1-e" else "loggers.py:273",
                    f"Engine {engine.index:03d}: Avg prompt throughput: {0.0 if not counts.drafts else 41.7:.1f} tokens/s, "
                    f"Avg generation throughput: {generated / seconds:.1f} tokens/s, Running: {16 if counts.drafts else 0} reqs, "
                    "Waiting: 0 reqs, GPU KV cache usage: 0.4%, Prefix cache hit rate: 62.5%",
                )
            )
        spec = _spec_message(server, engine, seconds)
        if spec is not None:
            source = {"V1-e": "spec", "V1-d": "metrics.py:96", "V1-c": "metrics.py:86", "V1-b": "metrics.py:52", "V0-b": "metrics.py:367"}
            lines.append(_api(server, source[server.log_format], spec))
    return lines


def _spec_message(server: ServerView, engine: Engine, seconds: float) -> str | None:
    if server.log_format == "V0-b":
        total = engine.total
        if not total.drafts:
            return None
        emitted = total.accepted + total.drafts
        rate = total.accepted / total.draft_tokens
        efficiency = emitted / (total.drafts * (server.scenario.k + 1))
        return (
            f"Speculative metrics: Draft acceptance rate: {rate:.3f}, System efficiency: {efficiency:.3f}, "
            f"Number of speculative tokens: {server.scenario.k}, Number of accepted tokens: {total.accepted}, "
            f"Number of draft tokens: {total.draft_tokens}, Number of emitted tokens: {emitted}."
        )
    counts = engine.interval
    if not counts.drafts:  # vLLM prints nothing for an interval without drafts
        return None
    mean_length = 1 + counts.accepted / counts.drafts
    rates = ", ".join(f"{c / counts.drafts:.3f}" for c in counts.per_position)
    percent = 100 * counts.accepted / counts.draft_tokens
    accepted_tput, drafted_tput = counts.accepted / seconds, counts.draft_tokens / seconds
    head = "SpecDecoding metrics: "
    if server.log_format == "V1-e":
        return (
            f"{head}Mean acceptance length: {mean_length:.2f}, Accepted throughput: {accepted_tput:.2f} tokens/s, "
            f"Drafted throughput: {drafted_tput:.2f} tokens/s, Accepted: {counts.accepted} tokens, "
            f"Drafted: {counts.draft_tokens} tokens, Per-position acceptance rate: {rates}, Avg Draft acceptance rate: {percent:.1f}%"
        )
    if server.log_format == "V1-d":
        return (
            f"{head}Draft acceptance rate: {percent:.1f}%, Mean acceptance length: {mean_length:.2f}, "
            f"Accepted throughput: {accepted_tput:.2f} tokens/s, Drafted throughput: {drafted_tput:.2f} tokens/s, "
            f"Accepted: {counts.accepted} tokens, Drafted: {counts.draft_tokens} tokens, Per-position acceptance rate: {rates}"
        )
    if server.log_format == "V1-c":
        return (
            f"{head}Draft acceptance rate: {percent:.1f}%, Mean acceptance length: {mean_length:.2f}, "
            f"Accepted: {counts.accepted} tokens, Drafted: {counts.draft_tokens} tokens, Per-position acceptance rate: {rates}"
        )
    return f"{head}Draft acceptance rate: {percent:.1f}%, Accepted: {counts.accepted} tokens, Drafted: {counts.draft_tokens} tokens"


_FAMILIES: tuple[tuple[str, str, Callable[[Counts], int]], ...] = (
    ("num_drafts", "Number of spec decoding drafts.", lambda c: c.drafts),
    ("num_draft_tokens", "Number of draft tokens.", lambda c: c.draft_tokens),
    ("num_accepted_tokens", "Number of accepted tokens.", lambda c: c.accepted),
)


def exposition(server: ServerView) -> str:
    """The spec-decode part of vLLM 0.24.0's /metrics, family by family as in the capture."""
    model = server.scenario.served_model_name
    out = [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
    ]
    out += [f'vllm:num_requests_running{{engine="{e.index}",model_name="{model}"}} 16.0' for e in server.engines]
    help_text = "Number of generation tokens processed."
    out += ["# HELP vllm:generation_tokens_total " + help_text, "# TYPE vllm:generation_tokens_total counter"]
    out += [  # every draft step emits its accepted tokens plus one from the target
        f'vllm:generation_tokens_total{{engine="{e.index}",model_name="{model}"}} {floatToGoString(e.total.accepted + e.total.drafts)}'
        for e in server.engines
    ]
    out += ["# HELP vllm:generation_tokens_created " + help_text, "# TYPE vllm:generation_tokens_created gauge"]
    out += [f'vllm:generation_tokens_created{{engine="{e.index}",model_name="{model}"}} {floatToGoString(e.created)}' for e in server.engines]
    for name, help_text, read in _FAMILIES:
        out += [f"# HELP vllm:spec_decode_{name}_total {help_text}", f"# TYPE vllm:spec_decode_{name}_total counter"]
        out += [f'vllm:spec_decode_{name}_total{{engine="{e.index}",model_name="{model}"}} {floatToGoString(read(e.total))}' for e in server.engines]
        out += [f"# HELP vllm:spec_decode_{name}_created {help_text}", f"# TYPE vllm:spec_decode_{name}_created gauge"]
        out += [f'vllm:spec_decode_{name}_created{{engine="{e.index}",model_name="{model}"}} {floatToGoString(e.created)}' for e in server.engines]
    per_pos = "vllm:spec_decode_num_accepted_tokens_per_pos"
    help_text = "Accepted tokens per draft position."
    out += [f"# HELP {per_pos}_total {help_text}", f"# TYPE {per_pos}_total counter"]
    for e in server.engines:
        out += [
            f'{per_pos}_total{{engine="{e.index}",model_name="{model}",position="{i}"}} {floatToGoString(count)}'
            for i, count in enumerate(e.total.per_position)
        ]
    out += [f"# HELP {per_pos}_created {help_text}", f"# TYPE {per_pos}_created gauge"]
    for e in server.engines:
        out += [
            f'{per_pos}_created{{engine="{e.index}",model_name="{model}",position="{i}"}} {floatToGoString(e.created)}'
            for i in range(server.scenario.k)
        ]
    return "\n".join(out) + "\n"
