"""Write the small versioned vLLM fixture logs under tests/golden/vllm-<X>/.

Every line shape comes from a format string read in that version's wheel (cited, with
file:line, in docs/vllm-versions.md and in each version's README.md). The counts are
chosen first (integers) and each line is then formatted the way that version prints them,
so truth.json is exact by construction. No vLLM code is imported or copied; the logging
layout is rebuilt from the format strings with the standard library's logging, and the
0.32+ JSON records are written by python-json-logger itself (the formatter vLLM names).

Run:  python scripts/make_version_fixtures.py [OUT_ROOT]   (default tests/golden)
The JSON scenario needs `python-json-logger` importable; the others need nothing.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ["TZ"] = "UTC"  # asctime uses local time; fixtures are written in UTC
time.tzset()

CYAN, CYAN_RESET = "\033[0;36m", "\033[0;0m"
GREY, RESET = "\033[90m", "\033[0m"
LEVEL_COLOURS = {"INFO": "\033[32m", "WARNING": "\033[33m", "DEBUG": "\033[37m"}
JSON_FORMAT = "%(asctime)s %(levelname)s %(name)s %(processName)s %(process)d %(message)s"


@dataclass
class Layout:
    """How one vLLM version lays out a record (see docs/vllm-versions.md, logging)."""

    version: str
    prefix_in_format: bool  # 0.31+: (name pid=N) is part of _FORMAT, after VLLM_LOGGING_PREFIX
    process_prefix: bool = True  # 0.10+: a process prefix exists at all
    brackets: bool = True  # 0.8+: [file:line]; before: file:line]
    env_prefix: str = ""  # VLLM_LOGGING_PREFIX
    colour: bool = False  # VLLM_LOGGING_COLOR=1
    json: bool = False  # --logging-config.formatter json (0.32+)


@dataclass
class Writer:
    layout: Layout
    out: list[str] = field(default_factory=list)
    _json: object = None

    def _stdout_prefix(self, proc: str, pid: int) -> str:
        # <= 0.30: decorate_logs wraps sys.stdout/sys.stderr.write, so every physical line
        # the process writes through Python (vLLM records, uvicorn, tqdm, print) gets it.
        if self.layout.colour:
            return f"{CYAN}({proc} pid={pid}){CYAN_RESET} "
        return f"({proc} pid={pid}) "

    def _physical(self, text: str, proc: str | None, pid: int | None) -> None:
        lay = self.layout
        wrap = proc is not None and lay.process_prefix and not lay.prefix_in_format
        for line in text.split("\n"):
            self.out.append((self._stdout_prefix(proc, pid) if wrap else "") + line)

    def vllm(self, t, proc, pid, file, line, msg, *args, level="INFO", name="vllm",
             mp_name=None):
        lay = self.layout
        if lay.json:
            rec = logging.LogRecord(name, getattr(logging, level), f"/x/{file}", line,
                                    msg, args or None, None)
            _stamp(rec, t, pid, mp_name or "MainProcess")
            rec.vllm_process_name = proc
            self.out.append(self._json_formatter().format(rec))
            return
        message = msg % args if args else msg
        stamp = time.strftime("%m-%d %H:%M:%S", time.gmtime(t))
        lvl, fileinfo = level, (f"[{file}:{line}]" if lay.brackets else f"{file}:{line}]")
        proc_part = f"({proc} pid={pid})" if lay.prefix_in_format else ""
        if lay.colour:
            lvl = f"{LEVEL_COLOURS[level]}{level}{RESET}"
            stamp = f"{GREY}{stamp}{RESET}"
            fileinfo = f"{GREY}{fileinfo}{RESET}"
            if proc_part:
                proc_part = f"{CYAN}{proc_part}{CYAN_RESET}"
        head = lay.env_prefix + (proc_part + " " if proc_part else "")
        head += f"{lvl} {stamp} {fileinfo} "
        # NewLineFormatter: each "\n" inside the message becomes "\r\n" + the prefix.
        body = message.replace("\n", "\r\n" + head)
        self._physical(head + body, proc, pid)

    def uvicorn(self, t, proc, pid, msg, *args, color_message=None, access=False,
                phrase="OK"):
        lay = self.layout
        if lay.json:
            rec = logging.LogRecord("uvicorn.access" if access else "uvicorn.error",
                                    logging.INFO, "/x/uvicorn.py", 1, msg, args or None, None)
            _stamp(rec, t, pid, "MainProcess")
            rec.vllm_process_name = proc
            if color_message is not None:
                rec.color_message = color_message
            self.out.append(self._json_formatter().format(rec))
            return
        text = msg % args if args else msg
        if access:  # uvicorn's AccessFormatter appends the status phrase
            text += f" {phrase}"
        self._physical(f"INFO:     {text}", proc, pid)

    def raw(self, text, proc=None, pid=None):
        """A line not from a logger: tqdm/print (Python, wrapped on <=0.30) or NCCL (C)."""
        self._physical(text, proc, pid)

    def _json_formatter(self):
        if self._json is None:
            from pythonjsonlogger.jsonlogger import JsonFormatter

            self._json = JsonFormatter(JSON_FORMAT)
        return self._json


def _stamp(rec: logging.LogRecord, t: float, pid: int, mp_name: str) -> None:
    rec.created = t
    rec.msecs = int((t - int(t)) * 1000) + 0.0
    rec.process, rec.processName = pid, mp_name


# ---------------------------------------------------------------- line formats (facts)

def v1e(acc_pos: list[int], drafts: int, drafted: int, elapsed: float) -> str:
    """V1-e, vllm/v1/spec_decode/metrics.py:120-136 (0.24.0 .. 0.34.0, identical)."""
    acc = sum(acc_pos)
    rates = ", ".join(f"{a / drafts:.3f}" for a in acc_pos)
    return ("SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: "
            "%.2f tokens/s, Drafted throughput: %.2f tokens/s, Accepted: %d tokens, "
            "Drafted: %d tokens, Per-position acceptance rate: %s, Avg Draft acceptance "
            "rate: %.1f%%") % (1 + acc / drafts, acc / elapsed, drafted / elapsed, acc,
                               drafted, rates, acc / drafted * 100)


def engine_line(idx, prompt_tps, gen_tps, running, waiting, kv, hit, device=None,
                show_hit=True, deferred=0, preemptions=0):
    """LoggingStatLogger.log (loggers.py); device=None -> literal 'GPU' (<= 0.29).
    Waiting already includes the deferred (skipped) requests, as vLLM sums them."""
    parts = [f"Avg prompt throughput: {prompt_tps:.1f} tokens/s",
             f"Avg generation throughput: {gen_tps:.1f} tokens/s",
             f"Running: {running} reqs", f"Waiting: {waiting + deferred} reqs"]
    if deferred:
        parts.append(f"Deferred: {deferred} reqs")
    if preemptions:
        parts.append(f"Preemptions: {preemptions}")
    parts.append(f"{device or 'GPU'} KV cache usage: {kv:.1f}%")
    if show_hit:
        parts.append(f"Prefix cache hit rate: {hit:.1f}%")
    return f"Engine {idx:03d}: " + ", ".join(parts)


def iteration_line(idx, n, ctx_req, ctx_tok, gen_req, gen_tok, ms, kv, dummy=False,
                   device="GPU"):
    """_log_iteration_details (loggers.py, 0.26+)."""
    return (f"Engine {idx:03d}: Iteration({n}): {ctx_req} context requests, {ctx_tok} "
            f"context tokens, {gen_req} generation requests, {gen_tok} generation tokens, "
            f"iteration elapsed time: {ms:.2f} ms{' (dummy)' if dummy else ''}, "
            f"{device} KV cache usage: {kv:.1f}%")


CONFIG_TAIL = Path(__file__).with_name("vllm_config_tail.txt")


def init_line_args(version, model, spec, served, dp=1):
    """VllmConfig.__str__ after "with config: "; the fields after tokenizer= are the
    0.24.0 capture's (they vary by version; a reader must not depend on them)."""
    tail = CONFIG_TAIL.read_text().strip().replace("data_parallel_size=1",
                                                   f"data_parallel_size={dp}")
    tail = tail.replace("served_model_name=target", f"served_model_name={served}")
    return (version, f"model={model!r}, speculative_config={spec}, tokenizer={model!r}, {tail}")


def spec_repr(method, model, k):
    """SpeculativeConfig.__repr__: f"SpeculativeConfig({method=}, {model=}, {num_spec_tokens=})"."""
    return f"SpeculativeConfig(method={method!r}, model={model!r}, num_spec_tokens={k})"


LOGO = ("\n       █     █     █▄   ▄█\n"
        " ▄▄ ▄█ █     █     █ ▀▄▀ █  version %s\n"
        "  █▄█▀ █     █     █     █  model   %s\n"
        "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀\n")


COLOUR_LOGO = ("\n       \033[97;1m█     █     █▄   ▄█\033[0m\n"
               " \033[93m▄▄\033[0m \033[94m▄█\033[0m \033[97;1m█     █     █ ▀▄▀ █\033[0m"
               "  version \033[97;1m%s\033[0m\n"
               "  \033[93m█\033[0m\033[94m▄█▀\033[0m \033[97;1m█     █     █     █\033[0m"
               "  model   \033[97;1m%s\033[0m\n"
               "   \033[94m▀▀\033[0m  \033[97;1m▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀\033[0m\n")


# ---------------------------------------------------------------- counts and truth

import random  # noqa: E402  (kept next to its only user)


def curve(rng: random.Random, k: int, drafts: int, p0: float, cond: float) -> list[int]:
    """Accepted-per-position counts: a prefix-acceptance curve, non-increasing by rule."""
    out, prev = [], drafts
    for j in range(k):
        p = (p0 if j == 0 else cond) * rng.uniform(0.9, 1.05)
        prev = min(prev, int(round(prev * min(p, 1.0))))
        out.append(prev)
    return out


@dataclass
class Tally:
    """Exact counts one engine's log was written from."""

    k: int
    intervals: list[dict] = field(default_factory=list)

    def add(self, drafts: int, drafted: int, acc_pos: list[int] | None,
            accepted: int | None = None) -> dict:
        acc = sum(acc_pos) if acc_pos is not None else accepted
        iv = {"drafts": drafts, "draft_tokens": drafted, "accepted_tokens": acc,
              "accepted_per_position": acc_pos}
        self.intervals.append(iv)
        return iv

    def total(self) -> dict:
        ivs = self.intervals
        per, bounds = None, None
        if ivs and all(iv["accepted_per_position"] is not None for iv in ivs):
            per = [sum(iv["accepted_per_position"][j] for iv in ivs) for j in range(self.k)]
            # What the printed %.3f rates allow: every integer a with f"{a/D:.3f}" equal
            # to the printed text is a candidate; exact only when each has one candidate.
            lo, hi = [0] * self.k, [0] * self.k
            for iv in ivs:
                d = iv["drafts"]
                for j, a in enumerate(iv["accepted_per_position"]):
                    txt = f"{a / d:.3f}"
                    cands = [c for c in range(max(0, a - 5), min(d, a + 5) + 1)
                             if f"{c / d:.3f}" == txt]
                    lo[j] += min(cands)
                    hi[j] += max(cands)
            bounds = {"exact": lo == hi, "low": lo, "high": hi}
        return {"drafts": sum(iv["drafts"] for iv in ivs),
                "draft_tokens": sum(iv["draft_tokens"] for iv in ivs),
                "accepted_tokens": sum(iv["accepted_tokens"] for iv in ivs),
                "accepted_per_position": per, "spec_lines": len(ivs),
                "accepted_per_position_from_rates": bounds,
                "intervals": ivs}


def write(root: Path, version: str, scenario: str, w: Writer, truth: dict) -> None:
    d = root / f"vllm-{version}" / scenario
    d.mkdir(parents=True, exist_ok=True)
    # newline="" keeps the "\r" that multi-line records leave before each "\n".
    with open(d / "server.log", "w", encoding="utf-8", newline="") as fh:
        fh.write("\n".join(w.out) + "\n")
    (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")


def t_at(sec: float) -> float:
    return 1796119200.0 + sec  # 2026-12-01 10:00:00 UTC


# ---------------------------------------------------------------- scenarios

def s026_dp2(root: Path) -> None:
    """(a) 0.26.0: VLLM_LOGGING_PREFIX + colour, DP=2, --enable-logging-iteration-details."""
    v, api, model = "0.26.0", 4101, "meta-llama/Llama-3.1-8B-Instruct"
    w = Writer(Layout(v, prefix_in_format=False, env_prefix="[pod-a] ", colour=True))
    rng, k = random.Random(26), 3
    w.vllm(t_at(0), "APIServer", api, "api_utils.py", 345, COLOUR_LOGO, v, model)
    w.vllm(t_at(0), "APIServer", api, "api_utils.py", 273, "non-default args: %s", {
        "model_tag": model, "model": model, "data_parallel_size": 2,
        "enable_logging_iteration_details": True,
        # 0.26+ converts hyphens only when building SpeculativeConfig (arg_utils.py:1768),
        # so non-default args shows the user's own spelling
        "speculative_config": {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                               "num-speculative-tokens": k}})
    spec = spec_repr("eagle3", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", k)
    for dp, pid in ((0, 4201), (1, 4202)):
        w.vllm(t_at(9 + dp), f"EngineCore_DP{dp}", pid, "core.py", 116,
               "Initializing a V1 LLM engine (v%s) with config: %s",
               *init_line_args(v, model, spec, model, dp=2))
    w.raw("node-a:4201:4201 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.5<0>")
    w.raw("node-a:4201:4201 [0] NCCL INFO NCCL version 2.27.3+cuda12.9")
    for dp, pid in ((0, 4201), (1, 4202)):
        w.vllm(t_at(30), f"EngineCore_DP{dp}", pid, "kv_cache_utils.py", 2177,
               "GPU KV cache size: %s tokens", "412,160")
        w.vllm(t_at(30), f"EngineCore_DP{dp}", pid, "kv_cache_utils.py", 2178,
               "Maximum concurrency for %s tokens per request: %.2fx", "8,192", 50.31)
    w.vllm(t_at(41), "APIServer", api, "api_server.py", 677, "Starting vLLM server on %s",
           "http://0.0.0.0:8000")
    w.uvicorn(t_at(41), "APIServer", api, "Started server process [%d]", api)
    w.uvicorn(t_at(41), "APIServer", api, "Waiting for application startup.")
    w.uvicorn(t_at(41), "APIServer", api, "Application startup complete.")
    tallies = {0: Tally(k), 1: Tally(k)}
    it = {0: 0, 1: 0}
    # engine 1 serves 4 intervals, then idles: interval 5 prints its Engine line (the
    # previous interval had traffic) without a spec line; interval 6 prints nothing (DEBUG).
    for n in range(1, 7):
        t0 = 41 + 10 * (n - 1)
        for step in range(3):
            for e in (0, 1):
                it[e] += 1
                busy = e == 0 or n <= 4
                line = iteration_line(e, it[e], 1 if step == 0 and busy else 0,
                                      512 if step == 0 and busy else 0,
                                      8 if busy else 0, 32 if busy else 0,
                                      rng.uniform(9, 14) if busy else 0.41,
                                      3.2 if busy else 0.0, dummy=not busy)
                w.vllm(t_at(t0 + 2 + 3 * step + 0.1 * e), "APIServer", api,
                       "loggers.py", 182, line)
            w.uvicorn(t_at(t0 + 3 + 3 * step), "APIServer", api,
                      '%s - "%s %s HTTP/%s" %d', f"10.0.0.9:{40100 + n * 3 + step}",
                      "POST", "/v1/chat/completions", "1.1", 200, access=True)
        for e in (0, 1):
            ts = t_at(t0 + 10)
            if e == 1 and n == 6:
                continue  # idle twice in a row: both lines go to DEBUG
            busy = e == 0 or n <= 4
            w.vllm(ts, "APIServer", api, "loggers.py", 310,
                   engine_line(e, 51.2 if busy else 0.0, 402.7 if busy else 0.0,
                               8 if busy else 0, 0, 3.2 if busy else 0.0, 12.5))
            if not busy:
                continue  # no drafts in the interval: no spec line
            drafts = rng.randint(900, 1200)
            acc = curve(rng, k, drafts, 0.78 if e == 0 else 0.64, 0.8)
            tallies[e].add(drafts, k * drafts, acc)
            w.vllm(ts, "APIServer", api, "metrics.py", 120, v1e(acc, drafts, k * drafts, 10.0))
    truth = {"version": v, "format": "V1-e", "method": "eagle3", "k": k, "fixed_length": True,
             "note": "V1-e prints A, T and every A_i; D = T/k exactly (eagle3 always drafts k).",
             "engines": {str(e): t.total() for e, t in tallies.items()}}
    write(root, v, "dp2-eagle3-k3-iterdetails-prefix-colour", w, truth)


class Repr(str):
    """A value that prints as its own text inside a dict repr (a config object's repr)."""

    def __repr__(self) -> str:
        return str(self)


def s033_json(root: Path) -> None:
    """(b) 0.33.0 --logging-config.formatter json; ngram k=4 on Model Runner V2 (fixed k)."""
    v, api, eng, model = "0.33.0", 7, 161, "Qwen/Qwen3-8B"
    w = Writer(Layout(v, prefix_in_format=True, json=True))
    rng, k = random.Random(33), 4
    lg = "vllm.entrypoints.common.startup"
    w.vllm(t_at(0.112), "APIServer", api, "startup.py", 38,
           "vLLM server version %s, serving model %s", v, model, name=lg)
    w.vllm(t_at(0.113), "APIServer", api, "startup.py", 96, "non-default args: %s", {
        "model_tag": model, "model": model,
        "logging_config": Repr("LoggingConfig(log_level='INFO', formatter='json', "
                               "configure_logging=True, pylogging_config_file=None)"),
        "speculative_config": {"method": "ngram", "num_speculative_tokens": k,
                               "prompt_lookup_max": 4}}, name=lg)
    w.vllm(t_at(6.5), "EngineCore", eng, "core.py", 139,
           "Initializing a V1 LLM engine (v%s) with config: %s",
           *init_line_args(v, model, spec_repr("ngram", None, k), model),
           name="vllm.v1.engine.core", mp_name="EngineCore")
    w.raw("node-a:161:161 [0] NCCL INFO NCCL version 2.27.3+cuda12.9")
    w.raw("Loading safetensors checkpoint shards:   0% Completed | 0/5 [00:00<?, ?it/s]")
    w.raw("Loading safetensors checkpoint shards: 100% Completed | 5/5 [00:03<00:00,  1.52it/s]")
    w.vllm(t_at(21.9), "EngineCore", eng, "kv_cache_utils.py", 1147,
           "%s KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx",
           "GPU", "1,805,632", "40,960", 44.08, name="vllm.v1.core.kv_cache_utils",
           mp_name="EngineCore")
    w.vllm(t_at(30.2), "APIServer", api, "entry.py", 139, "Starting vLLM server on %s",
           "http://0.0.0.0:8000", name="vllm.entrypoints.launchers.api_server.entry")
    w.uvicorn(t_at(30.3), "APIServer", api, "Started server process [%d]", api,
              color_message="Started server process [\033[36m%d\033[0m]")
    w.uvicorn(t_at(30.3), "APIServer", api, "Waiting for application startup.")
    w.uvicorn(t_at(30.4), "APIServer", api, "Application startup complete.")
    tally = Tally(k)
    for n in range(1, 6):
        t0 = 30.4 + 10 * (n - 1)
        for j in range(4):
            w.uvicorn(t_at(t0 + 1 + 2 * j + 0.25), "APIServer", api, '%s - "%s %s HTTP/%s" %d',
                      f"10.1.2.3:{51000 + 4 * n + j}", "POST", "/v1/completions", "1.1", 200,
                      access=True)
        if n == 3:
            w.raw("[rank0]:[W1201 10:00:55.123456789 ProcessGroupNCCL.cpp:4718] "
                  "Warning: this is a raw c10d line between records")
        ts = t_at(t0 + 10.004)
        w.vllm(ts, "APIServer", api, "loggers.py", 335,
               engine_line(0, 120.4, 980.3, 16, 2 if n == 2 else 0, 6.1, 31.7, device="GPU"),
               name="vllm.v1.metrics.loggers")
        drafts = rng.randint(1500, 2500)
        acc = curve(rng, k, drafts, 0.46, 0.7)
        tally.add(drafts, k * drafts, acc)
        w.vllm(ts, "APIServer", api, "metrics.py", 120, v1e(acc, drafts, k * drafts, 10.004),
               name="vllm.v1.spec_decode.metrics")
    truth = {"version": v, "format": "V1-e", "method": "ngram", "k": k, "fixed_length": True,
             "note": "0.32+ runs ngram on Model Runner V2, whose n-gram kernel fills every "
                     "one of the k slots (T = k*D).",
             "engines": {"0": tally.total()}}
    write(root, v, "json-ngram-k4", w, truth)


def s033_text(root: Path) -> None:
    """0.33.0 text layout: VLLM_LOGGING_PREFIX first, then the coloured process prefix
    (0.31+ _FORMAT); uvicorn/tqdm unprefixed; iteration details; MTP alias; no prefix
    caching, so no "Prefix cache hit rate" part; Deferred/Preemptions parts."""
    v, api, eng, model = "0.33.0", 9, 188, "Qwen/Qwen3.5-27B"
    w = Writer(Layout(v, prefix_in_format=True, env_prefix="[pod-b] ", colour=True))
    rng, k = random.Random(3300), 2
    w.vllm(t_at(0), "APIServer", api, "startup.py", 38, COLOUR_LOGO, v, model)
    w.vllm(t_at(0), "APIServer", api, "startup.py", 96, "non-default args: %s", {
        "model_tag": model, "model": model, "enable_prefix_caching": False,
        "enable_logging_iteration_details": True,
        "speculative_config": {"method": "qwen3_5_mtp", "num_speculative_tokens": k}})
    w.vllm(t_at(1), "APIServer", api, "speculative.py", 1247,
           "method `%s` is deprecated and replaced with mtp.", "qwen3_5_mtp", level="WARNING")
    w.vllm(t_at(7), "EngineCore", eng, "core.py", 139,
           "Initializing a V1 LLM engine (v%s) with config: %s",
           *init_line_args(v, model, spec_repr("mtp", model, k), model))
    w.raw("Loading safetensors checkpoint shards: 100% Completed | 12/12 [00:09<00:00,  1.30it/s]")
    w.vllm(t_at(25), "EngineCore", eng, "kv_cache_utils.py", 1147,
           "%s KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx",
           "GPU", "611,328", "262,144", 2.33)
    w.vllm(t_at(40), "APIServer", api, "entry.py", 139, "Starting vLLM server on %s",
           "http://0.0.0.0:8000")
    w.uvicorn(t_at(40), "APIServer", api, "Started server process [%d]", api)
    w.uvicorn(t_at(40), "APIServer", api, "Waiting for application startup.")
    w.uvicorn(t_at(40), "APIServer", api, "Application startup complete.")
    tally, it = Tally(k), 0
    for n in range(1, 5):
        t0 = 40 + 10 * (n - 1)
        for step in range(4):
            it += 1
            w.vllm(t_at(t0 + 1 + 2 * step), "APIServer", api, "loggers.py", 199,
                   iteration_line(0, it, 0, 0, 24, 72, rng.uniform(20, 30), 41.0))
        w.uvicorn(t_at(t0 + 9), "APIServer", api, '%s - "%s %s HTTP/%s" %d',
                  f"10.2.0.4:{43000 + n}", "POST", "/v1/chat/completions", "1.1", 200,
                  access=True)
        ts = t_at(t0 + 10)
        w.vllm(ts, "APIServer", api, "loggers.py", 335,
               engine_line(0, 300.1, 1650.8, 24, 3, 41.0, 0.0, device="GPU", show_hit=False,
                           deferred=2 if n == 2 else 0, preemptions=1 if n == 3 else 0))
        drafts = rng.randint(4000, 5000)
        acc = curve(rng, k, drafts, 0.85, 0.8)
        tally.add(drafts, k * drafts, acc)
        w.vllm(ts, "APIServer", api, "metrics.py", 120, v1e(acc, drafts, k * drafts, 10.0))
    truth = {"version": v, "format": "V1-e", "method": "mtp", "k": k, "fixed_length": True,
             "engines": {"0": tally.total()}}
    write(root, v, "text-prefix-colour-mtp-k2-iterdetails", w, truth)


def plain_run(root, v, scenario, lay, method, draft, k, nondefault, lines, kv_lines,
              serve_line, n_iv=5, device=None, seed=0, p0=0.7, cond=0.8):
    """(c) a plain single-engine log with the startup lines a reader takes k/method from."""
    api, eng, model = 1954, 2054, "meta-llama/Llama-3.1-8B-Instruct"
    w = Writer(lay)
    rng = random.Random(seed)
    logo_file, logo_line, nd_line, core_line, stat_line = lines
    w.vllm(t_at(0), "APIServer", api, logo_file, logo_line, LOGO, v, model)
    w.vllm(t_at(0), "APIServer", api, logo_file, nd_line, "non-default args: %s",
           {"model_tag": model, "model": model, **nondefault})
    w.vllm(t_at(8), "EngineCore", eng, "core.py", core_line,
           "Initializing a V1 LLM engine (v%s) with config: %s",
           *init_line_args(v, model, spec_repr(method, draft, k), model))
    w.raw("[W1201 10:00:09.711731218 socket.cpp:207] [c10d] The hostname of the client "
          "socket cannot be retrieved. err=-3")
    w.raw("Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00,  1.61it/s]",
          "EngineCore", eng)
    for line, fmt, args in kv_lines:
        w.vllm(t_at(20), "EngineCore", eng, "kv_cache_utils.py", line, fmt, *args)
    w.vllm(t_at(28), "APIServer", api, *serve_line, "Starting vLLM server on %s",
           "http://0.0.0.0:8000")
    w.uvicorn(t_at(28), "APIServer", api, "Started server process [%d]", api)
    w.uvicorn(t_at(28), "APIServer", api, "Waiting for application startup.")
    w.uvicorn(t_at(28), "APIServer", api, "Application startup complete.")
    tally = Tally(k)
    for n in range(1, n_iv + 1):
        t0 = 28 + 10 * (n - 1)
        w.uvicorn(t_at(t0 + 2), "APIServer", api, '%s - "%s %s HTTP/%s" %d',
                  f"127.0.0.1:{37900 + n}", "POST", "/v1/completions", "1.1", 200, access=True)
        ts = t_at(t0 + 10)
        w.vllm(ts, "APIServer", api, "loggers.py", stat_line,
               engine_line(0, 88.0, 701.5, 12, 0, 4.4, 20.0, device=device))
        drafts = rng.randint(700, 1100)
        acc = curve(rng, k, drafts, p0, cond)
        tally.add(drafts, k * drafts, acc)
        w.vllm(ts, "APIServer", api, "metrics.py", 120, v1e(acc, drafts, k * drafts, 10.0))
    truth = {"version": v, "format": "V1-e", "method": method, "k": k, "fixed_length": True,
             "engines": {"0": tally.total()}}
    write(root, v, scenario, w, truth)


def s024(root):
    # 0.24 passes the --speculative-config dict to SpeculativeConfig as is (arg_utils.py:1733):
    # hyphenated keys are accepted only from 0.26 (arg_utils.py:1768), so none here.
    plain_run(root, "0.24.0", "env-prefix-after-process-draft_model-k4",
              Layout("0.24.0", prefix_in_format=False, env_prefix="[pod-a] "),
              "draft_model", "meta-llama/Llama-3.2-1B-Instruct", 4,
              {"speculative_config": {"method": "draft_model",
                                      "model": "meta-llama/Llama-3.2-1B-Instruct",
                                      "num_speculative_tokens": 4}},
              ("api_utils.py", 339, 273, 114, 273),
              [(2146, "GPU KV cache size: %s tokens", ("1,805,632",)),
               (2147, "Maximum concurrency for %s tokens per request: %.2fx", ("8,192", 220.41))],
              ("api_server.py", 581), seed=24)


def s028(root):
    plain_run(root, "0.28.0", "dspark-k6-k-only-in-config",
              Layout("0.28.0", prefix_in_format=False),
              "dspark", "org/dspark-llama3.1-8b-block6", 6,
              {"speculative_config": {"method": "dspark", "model": "org/dspark-llama3.1-8b-block6"}},
              ("api_utils.py", 333, 272, 122, 310),
              [(1869, "GPU KV cache size: %s tokens, Maximum concurrency for %s tokens per "
                      "request: %.2fx", ("1,805,632", "8,192", 220.41))],
              ("api_server.py", 657), seed=28, p0=0.8, cond=0.85)


def s030(root):
    plain_run(root, "0.30.0", "spec-flags-eagle-k5",
              Layout("0.30.0", prefix_in_format=False),
              "eagle", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", 5,
              {"spec_method": "eagle", "spec_model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B",
               "spec_tokens": 5},
              ("api_utils.py", 347, 286, 123, 315),
              [(2395, "%s KV cache size: %s tokens, Maximum concurrency for %s tokens per "
                      "request: %.2fx", ("GPU", "1,805,632", "8,192", 220.41))],
              ("entry.py", 139), device="GPU", seed=30)


def v0_line(k: int, acc: int, drafted: int, emitted: int, typo: bool) -> str:
    """V0 _format_spec_decode_metrics_str (0.4.3 engine/metrics.py:369-375 with the
    "tokens tokens" typo; 0.6.3 engine/metrics.py:380-386 without). Counts cumulative."""
    rate = acc / drafted if drafted else float("nan")
    max_emitted = drafted // k * (k + 1)
    eff = emitted / max_emitted if max_emitted else float("nan")
    tt = " tokens" if typo else ""
    return (f"Speculative metrics: Draft acceptance rate: {rate:.3f}, System efficiency: "
            f"{eff:.3f}, Number of speculative tokens: {k}, Number of accepted tokens: {acc}, "
            f"Number of draft tokens{tt}: {drafted}, Number of emitted tokens{tt}: {emitted}.")


def v0_steps(rng: random.Random, k: int, n: int, probs: list[float]) -> tuple[int, int]:
    """n V0 verification steps: every position is judged (A counts non-prefix accepts);
    emitted = accepted prefix + 1 (the recovered or bonus token)."""
    acc = emitted = 0
    for _ in range(n):
        mask = [rng.random() < p for p in probs]
        acc += sum(mask)
        prefix = next((i for i, m in enumerate(mask) if not m), k)
        emitted += prefix + 1
    return acc, emitted


def s_v0(root: Path, v: str, typo: bool, lines: tuple[int, int, int], scenario: str) -> None:
    """(d) V0: cumulative counts, a restart, the lagging spec line, a nan line."""
    init_line, stat_line, spec_line = lines
    w = Writer(Layout(v, prefix_in_format=False, process_prefix=False, brackets=False))
    rng, k, draft = random.Random(4 if typo else 6), 5, "JackFram/llama-68m"
    model, segments, t = "lmsys/vicuna-7b-v1.3", [], 0.0
    for seg in range(2):
        w.vllm(t_at(t), "", 0, "llm_engine.py", init_line,
               "Initializing an LLM engine (v%s) with config: model=%r, speculative_config=%r, "
               "tokenizer=%r, skip_tokenizer_init=%s, tokenizer_mode=%s, revision=%s, "
               "rope_scaling=%r, tokenizer_revision=%s, trust_remote_code=%s, dtype=%s, "
               "max_seq_len=%d, download_dir=%r, load_format=%s, tensor_parallel_size=%d, "
               "disable_custom_all_reduce=%s, quantization=%s, enforce_eager=%s, "
               "kv_cache_dtype=%s, quantization_param_path=%s, device_config=%s, "
               "decoding_config=%r, seed=%d, served_model_name=%s)",
               v, model, Repr(f"SpeculativeConfig(draft_model={draft!r}, num_spec_tokens={k})"),
               model, False, "auto", None, None, None, False, "torch.float16", 2048, None,
               "auto", 1, False, None, False, "auto", None, "cuda",
               Repr("DecodingConfig(guided_decoding_backend='outlines')"), 0, model)
        w.uvicorn(t_at(t + 20), None, None, "Started server process [%d]", 31 + seg)
        w.uvicorn(t_at(t + 20), None, None, "Application startup complete.")
        drafts = acc = emitted = 0
        n_lines = 5 if seg == 0 else 4
        probs = [0.8, 0.7, 0.6, 0.55, 0.5]
        for n in range(n_lines):
            ts = t_at(t + 25 + 5 * n)
            w.vllm(ts, "", 0, "metrics.py", stat_line,
                   "Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f "
                   "tokens/s, Running: %d reqs, Swapped: %d reqs, Pending: %d reqs, GPU KV "
                   "cache usage: %.1f%%, CPU KV cache usage: %.1f%%.",
                   35.2, 188.4, 4, 0, 0, 2.6, 0.0)
            if seg == 1 and n == 0:
                # the first collection after a restart has nothing drafted yet
                w.vllm(ts, "", 0, "metrics.py", spec_line, v0_line(k, 0, 0, 0, typo))
                continue
            if seg == 0 and n == 2:
                continue  # no fresh copy from the rejection sampler this interval
            step = rng.randint(150, 260)
            a, e = v0_steps(rng, k, step, probs)
            drafts, acc, emitted = drafts + step, acc + a, emitted + e
            w.vllm(ts, "", 0, "metrics.py", spec_line, v0_line(k, acc, k * drafts, emitted, typo))
        segments.append({"drafts": drafts, "draft_tokens": k * drafts, "accepted_tokens": acc,
                         "emitted_tokens": emitted, "accepted_per_position": None})
        t += 25 + 5 * n_lines + 30
    life = {key: sum(sg[key] for sg in segments)
            for key in ("drafts", "draft_tokens", "accepted_tokens", "emitted_tokens")}
    truth = {"version": v, "format": "V0-a" if typo else "V0-b", "method": "draft_model", "k": k,
             "cumulative": True, "restarts": 1,
             "note": "A counts every accepted position (V0 judges each one), so A != E - D. "
                     "Report A as logged, rate A/T, D = T/k, L = E/D; per-position is null "
                     "(never printed).",
             "engines": {"0": {**life, "accepted_per_position": None, "segments": segments}}}
    write(root, v, scenario, w, truth)


def s043(root):
    s_v0(root, "0.4.3", True, (161, 341, 362), "v0-typo-cumulative-restart")


def s063(root):
    s_v0(root, "0.6.3", False, (237, 345, 367), "v0-cumulative-restart")


def s_v1b(root: Path, method: str, draft: str | None, k: int, fixed: bool, scenario: str):
    """(e) V1-b (0.8.3-0.8.4): rate %, Accepted, Drafted; `nan%` on empty intervals."""
    v = "0.8.4"
    w = Writer(Layout(v, prefix_in_format=False, process_prefix=False))
    rng, model = random.Random(84 + k), "meta-llama/Meta-Llama-3-8B-Instruct"
    w.vllm(t_at(0), "", 0, "core.py", 61, "Initializing a V1 LLM engine (v%s) with config: %s",
           *init_line_args(v, model, spec_repr(method, draft, k), model))
    w.uvicorn(t_at(20), None, None, "Started server process [%d]", 12)
    w.uvicorn(t_at(20), None, None, "Application startup complete.")
    tally = Tally(k)
    truth_d = []
    for n in range(8):
        ts = t_at(25 + 5 * n)
        idle = n in (3, 4)
        w.vllm(ts, "", 0, "loggers.py", 87,
               "Engine %03d: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: "
               "%.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, "
               "Prefix cache hit rate: %.1f%%", 0, 0.0 if idle else 60.5,
               0.0 if idle else 410.2, 0 if idle else 6, 0, 0.0 if idle else 2.1, 33.3)
        if idle:
            drafts = drafted = acc = 0
        else:
            drafts = rng.randint(300, 500)
            if fixed:
                drafted = k * drafts
            else:  # n-gram: a draft has 1..k tokens (a shorter match drafts fewer)
                drafted = sum(rng.randint(1, k) for _ in range(drafts))
            acc = int(drafted * rng.uniform(0.35, 0.55))
        rate = acc / drafted * 100 if drafted else float("nan")
        w.vllm(ts, "", 0, "metrics.py", 53,
               "SpecDecoding metrics: Draft acceptance rate: %.1f%%, Accepted: %d tokens, "
               "Drafted: %d tokens", rate, acc, drafted)
        tally.add(drafts, drafted, None, accepted=acc)
        truth_d.append(drafts)
    tot = tally.total()
    truth = {"version": v, "format": "V1-b", "method": method, "k": k, "fixed_length": fixed,
             "note": ("D = T/k exactly (fixed-length drafter); L = 1 + A/D."
                      if fixed else "variable-length drafter (ngram <= 0.31): the true D "
                      "below is what the log was written from, but it cannot be known from "
                      "the log: D and L must be null with a reason."),
             "engines": {"0": tot},
             "expected_from_log": {"drafts": tot["drafts"] if fixed else None,
                                   "draft_tokens": tot["draft_tokens"],
                                   "accepted_tokens": tot["accepted_tokens"],
                                   "accepted_per_position": None}}
    write(root, v, scenario, w, truth)


def s084(root):
    s_v1b(root, "eagle", "yuhuili/EAGLE-LLaMA3-Instruct-8B", 3, True, "v1b-eagle-k3-nan")
    s_v1b(root, "ngram", None, 4, False, "v1b-ngram-k4-variable-nan")


def s_v1a(root: Path) -> None:
    """(e) V1-a (PR #15151; never in a released wheel: 0.8.2 has no V1 spec line, 0.8.3
    already prints V1-b). Layout of 0.8.2: unprefixed V1 stats line (loggers.py:80)."""
    v = "v1a-pr15151"
    w = Writer(Layout(v, prefix_in_format=False, process_prefix=False))
    rng, k, model = random.Random(15151), 3, "meta-llama/Meta-Llama-3-8B-Instruct"
    w.vllm(t_at(0), "", 0, "core.py", 61, "Initializing a V1 LLM engine (v%s) with config: %s",
           *init_line_args("0.8.3.dev0", model,
                           spec_repr("eagle", "yuhuili/EAGLE-LLaMA3-Instruct-8B", k), model))
    tally = Tally(k)
    for n in range(6):
        ts = t_at(25 + 5 * n)
        w.vllm(ts, "", 0, "loggers.py", 80,
               "Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, "
               "Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache "
               "hit rate: %.1f%%", 60.5, 410.2, 6, 0, 2.1, 33.3)
        drafts = rng.randint(300, 500)
        acc = int(k * drafts * rng.uniform(0.4, 0.7))
        w.vllm(ts, "", 0, "loggers.py", 101,
               "Speculative metrics: Draft acceptance rate: %.3f, Number of accepted tokens: %d, "
               "Number of draft tokens: %d, ", acc / (k * drafts), acc, k * drafts)
        tally.add(drafts, k * drafts, None, accepted=acc)
    tot = tally.total()
    truth = {"version": "0.8.3.dev (PR #15151)", "format": "V1-a", "method": "eagle", "k": k,
             "fixed_length": True, "note": "per-interval (not cumulative); D = T/k; "
             "per-position null. The [loggers.py:101] line number is invented (no wheel).",
             "engines": {"0": tot},
             "expected_from_log": {"drafts": tot["drafts"], "draft_tokens": tot["draft_tokens"],
                                   "accepted_tokens": tot["accepted_tokens"],
                                   "accepted_per_position": None}}
    write(root, v.replace("vllm-", ""), "v1a-eagle-k3", w, truth)


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tests/golden")
    for fn in SCENARIOS:
        fn(root)


SCENARIOS = [s026_dp2, s033_json, s033_text, s024, s028, s030, s043, s063, s084, s_v1a]

if __name__ == "__main__":
    main()
