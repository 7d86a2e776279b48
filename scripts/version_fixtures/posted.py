"""The classes of real posted logs the reader got wrong (issue #32), each written from the format it
imitates — vLLM 0.26.0's and SGLang 0.5.23's own format strings, read in their wheels — never copied
from a post: a per-position list joined by `,` alone, an SGLang decode line cut inside a value, spec
bodies pasted without their label, two API servers (both pid 1) writing one log in the same second,
Docker Desktop's `YYYY-MM-DD HH:MM:SS.mmm | ` before every line, and a crash dump's engine config as
the only config line. Each case's truth.json says what a reader must report."""

from __future__ import annotations

import random
from pathlib import Path

from .base import Layout, Tally, Writer, curve, engine_line, init_line_args, spec_repr, t_at, v1e
from .wild import _write

# vllm/logging_utils/dump_input.py:72-76 (0.26.0): the engine's crash dump, VllmConfig.__str__ as at startup
CRASH_DUMP = "Dumping input data for V1 LLM engine (v%s) with config: %s, "
# sglang/srt/managers/scheduler_components/metrics_reporter.py:963 and :1003 (sglang 0.5.23): the
# decode line as SG-d prints it, `{graph}: {bool}, gen throughput (token/s): {:.2f}, #queue-req: {}, ` after it
SGLANG_DECODE = ("Decode batch, #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, accept len: {length:.2f}, "
                 "accept rate: {rate:.2f}, cuda graph: True, gen throughput (token/s): {throughput:.2f}, #queue-req: 0, ")


def _v1e_lines(w: Writer, rng: random.Random, k: int, n: int, p0: float, cond: float, *, pid: int = 7, start: float = 60.0,
               step: float = 10.0, rates_joined: str = ", ", tally: Tally | None = None) -> Tally:
    """n intervals of one engine: `Engine 000:` (loggers.py:311) and the V1-e line (v1/spec_decode/metrics.py:120)."""
    tally = tally or Tally(k)
    for i in range(n):
        ts = t_at(start + step * i)
        w.vllm(ts, "APIServer", pid, "loggers.py", 311, engine_line(0, 88.0, 701.5, 12, 0, 4.4, 20.0))
        drafts = rng.randint(400, 900)
        accepted = curve(rng, k, drafts, p0, cond)
        tally.add(drafts, k * drafts, accepted)
        line = v1e(accepted, drafts, k * drafts, 10.0)
        if rates_joined != ", ":
            head, rest = line.split("Per-position acceptance rate: ", 1)
            rates, tail = rest.split(", Avg Draft", 1)
            line = f"{head}Per-position acceptance rate: {rates.replace(', ', rates_joined)}, Avg Draft{tail}"
        w.vllm(ts, "APIServer", pid, "metrics.py", 120, line)
    return tally


def per_position_without_spaces(root: Path) -> None:
    """A broken drafter (a stale config) whose per-position rates are joined by `,` alone (`0.000,0.000`):
    the list is the same list; a reader that splits on `, ` refuses the lines or reads one position."""
    w = Writer(Layout("0.26.0", prefix_in_format=False))
    tally = _v1e_lines(w, random.Random(321), 8, 7, 0.08, 0.3, rates_joined=",")
    _write(root, "vllm-0.26.0-per-position-no-spaces", w.out, {"version": "0.26.0", "format": "V1-e", "k": 8, "method": None,
                                                               "engines": {"0": tally.total()}, "health": "broken", "parse_errors": {}})


def sglang_cut_value(root: Path) -> None:
    """SGLang 0.5.23 decode lines of a drafter at accept rate ≈ 0.14; the last cut inside its rate
    (`accept rate: 0` at the end of the text): refused as cut, never taken as the last snapshot."""
    rng, lines, last = random.Random(322), [], (0.0, 0.0)
    for i in range(4):
        rate = rng.uniform(0.13, 0.15)
        length = 1.0 + 3 * rate  # (accept len − 1) / (num_draft_tokens − 1) = accept rate, with 4 draft tokens a verify
        last = (round(length, 2), round(rate, 2))
        lines.append(f"[2026-04-05 20:0{i}:51] " + SGLANG_DECODE.format(running=8, tokens=4096, usage=0.03, length=length, rate=rate,
                                                                         throughput=512.25))
    whole = "[2026-04-05 20:04:51] " + SGLANG_DECODE.format(running=8, tokens=4096, usage=0.03, length=1.44, rate=0.14, throughput=498.0)
    lines.append(whole[: whole.index("accept rate: ") + len("accept rate: 0")])
    _write(root, "sglang-0.5.23-cut-accept-rate", lines, {"format": "SG-d", "parse_errors": {"truncated": 1},
                                                          "sampled": {"mean_acceptance_length": last[0], "draft_acceptance_ratio": last[1]}})


def bodies_without_label(root: Path) -> None:
    """V1-e bodies pasted without `SpecDecoding metrics: ` (and without the line's envelope): read, as their
    keys are V1-e's in order; a fragment of one body (`Avg Draft acceptance rate: …`) and a fork's body
    with another key are no layout's, so nothing is read from them."""
    w = Writer(Layout("0.26.0", prefix_in_format=False))
    tally = _v1e_lines(w, random.Random(323), 4, 4, 0.7, 0.75)
    bodies = [line.split("SpecDecoding metrics: ", 1)[1] for line in w.out if "SpecDecoding metrics: " in line]
    lines = [*bodies[:2], "Avg Draft acceptance rate: 61.4%", *bodies[2:],
             "Mean acceptance length: 2.10, Drafted per step: 4, Accepted: 110 tokens, Drafted: 400 tokens"]
    _write(root, "vllm-0.26.0-bodies-without-label", lines, {"version": "0.26.0", "format": "V1-e", "k": 4, "method": None,
                                                             "engines": {"0": tally.total()}, "parse_errors": {}})


def two_servers_same_second(root: Path) -> None:
    """Two vLLM 0.26.0 API servers in two containers (both `(APIServer pid=1)`) appending to one file,
    each printing its engine's spec line every 10 s, in the same second: pooled, but said."""
    w = Writer(Layout("0.26.0", prefix_in_format=False))
    rng, tally = random.Random(324), Tally(3)
    for i in range(6):
        for p0 in (0.55, 0.85):  # the two servers' drafters differ (L ≈ 1.9 and 3.0)
            _v1e_lines(w, rng, 3, 1, p0, 0.8, pid=1, start=60.0 + 10 * i, tally=tally)
    _write(root, "vllm-0.26.0-two-servers-same-second", w.out, {"version": "0.26.0", "format": "V1-e", "k": 3, "method": None,
                                                                "engines": {"0": tally.total()}, "two_writers": True})


DESKTOP_START = 1776620202.061  # 2026-04-19 17:36:42.061 UTC


def docker_desktop(root: Path) -> None:
    """Lines copied from Docker Desktop's log view: `2026-04-19 17:36:42.061 | ` before each vLLM line (the
    container's stream stamp, with its year, in UTC as the container runs)."""
    import time

    w = Writer(Layout("0.26.0", prefix_in_format=False))
    rng, k = random.Random(325), 3
    tally = Tally(k)
    for i in range(4):
        at = DESKTOP_START + 10 * i
        w.vllm(at, "APIServer", 1, "loggers.py", 311, engine_line(0, 88.0, 701.5, 12, 0, 4.4, 20.0))
        drafts = rng.randint(400, 900)
        accepted = curve(rng, k, drafts, 0.7, 0.75)
        tally.add(drafts, k * drafts, accepted)
        w.vllm(at, "APIServer", 1, "metrics.py", 120, v1e(accepted, drafts, k * drafts, 10.0))
    stamped = []
    for n, line in enumerate(w.out):
        at = DESKTOP_START + 10 * (n // 2) + 0.004 * (n % 2)
        stamped.append(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + f".{round(at % 1 * 1000):03d} | {line}")
    _write(root, "vllm-0.26.0-docker-desktop", stamped, {"version": "0.26.0", "format": "V1-e", "k": k, "method": None,
                                                        "engines": {"0": tally.total()}, "first_stamp": "2026-04-19 17:36:42.065",
                                                        "last_stamp": "2026-04-19 17:37:12.065"})


def crash_dump_config(root: Path) -> None:
    """A posted excerpt: the last spec lines before an engine crash, then the crash dump, whose config
    (`SpeculativeConfig(method='mtp', model=…, num_spec_tokens=5)`) is the only word on method and k."""
    w = Writer(Layout("0.26.0", prefix_in_format=False))
    tally = _v1e_lines(w, random.Random(326), 5, 3, 0.8, 0.8, pid=212)
    model = "Qwen/Qwen3-Next-80B-A3B-Instruct"
    w.vllm(t_at(95), "EngineCore_DP0", 340, "dump_input.py", 72, CRASH_DUMP, *init_line_args("0.26.0", model, spec_repr("mtp", model, 5), model),
           level="ERROR")
    _write(root, "vllm-0.26.0-crash-dump-config", w.out, {"version": "0.26.0", "format": "V1-e", "k": 5, "method": "mtp",
                                                          "engines": {"0": tally.total()}})


SCENARIOS = [per_position_without_spaces, sglang_cut_value, bodies_without_label, two_servers_same_second, docker_desktop, crash_dump_config]
