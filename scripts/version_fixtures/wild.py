"""Logs of the shapes users post from the wild (issue #25), written from each version's own format
strings (never copied from a posted log): V0 runs, cut and collapsed lines, message-only lines, an
elided engine line, SGLang decode lines, a year-less log. Each case's truth.json says what a reader
must report: the numbers, or that a number cannot be known."""

from __future__ import annotations

import json
import random
from pathlib import Path

from .base import LOGO, Layout, Repr, Tally, Writer, curve, engine_line, t_at, v1e
from .legacy import v0_line, v0_steps

# llm_engine.py:237 (0.6.3), cut to the fields a reader uses
V0_INIT = ("Initializing an LLM engine (v%s) with config: model=%r, speculative_config=%r, tokenizer=%r, "
           "skip_tokenizer_init=%s, tokenizer_mode=%s, revision=%s, seed=%d, served_model_name=%s)")
V0_STATS = ("Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, "
            "Swapped: %d reqs, Pending: %d reqs, GPU KV cache usage: %.1f%%, CPU KV cache usage: %.1f%%.")  # metrics.py:345 (0.6.3)


def _write(root: Path, case: str, lines: list[str], truth: dict) -> None:
    directory = root / "wild" / case
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "server.log", "w", encoding="utf-8", newline="") as handle:
        handle.write("\n".join(lines) + "\n")
    (directory / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")


def _v0_run(w: Writer, rng: random.Random, t: float, k: int, probs: list[float], n_lines: int, startup: bool,
            model: str = "lmsys/vicuna-7b-v1.3", draft: str = "JackFram/llama-68m") -> tuple[dict, float]:
    """One V0 server run: (startup line,) stats + cumulative spec lines every 5 s; its exact totals."""
    if startup:
        w.vllm(t_at(t), "", 0, "llm_engine.py", 237, V0_INIT, "0.6.3", model,
               Repr(f"SpeculativeConfig(draft_model={draft!r}, num_spec_tokens={k})"), model, False, "auto", None, 0, model)
    drafts = acc = emitted = 0
    for n in range(n_lines):
        ts = t_at(t + 25 + 5 * n)
        w.vllm(ts, "", 0, "metrics.py", 345, V0_STATS, 35.2, 188.4, 4, 0, 0, 2.6, 0.0)
        step = rng.randint(150, 260)
        a, e = v0_steps(rng, k, step, probs)
        drafts, acc, emitted = drafts + step, acc + a, emitted + e
        w.vllm(ts, "", 0, "metrics.py", 367, v0_line(k, acc, k * drafts, emitted, False))
    run = {"k": k, "drafts": drafts, "draft_tokens": k * drafts, "accepted_tokens": acc, "emitted_tokens": emitted,
           "mean_acceptance_length": emitted / drafts}
    return run, t + 25 + 5 * n_lines + 30


def v0_two_runs(root: Path, startup: bool) -> None:
    """Two V0 server runs in one file, k = 5 then k = 10, each line cumulative since its start."""
    w = Writer(Layout("0.6.3", prefix_in_format=False, process_prefix=False, brackets=False))
    rng = random.Random(25 + startup)
    first, t = _v0_run(w, rng, 0.0, 5, [0.8, 0.7, 0.6, 0.55, 0.5], 4, startup=True)
    second, _ = _v0_run(w, rng, t, 10, [0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4], 3, startup=startup)
    truth = {"version": "0.6.3", "format": "V0-b", "runs": [first, second], "k": 10, "method": "draft_model",
             "note": "each run is its own: L = E/D per run (never 1 + A/D), its own reference; "
                     + ("a startup line starts run 2" if startup else "no startup line: the printed k changes")}
    _write(root, "vllm-0.6.3-v0-two-runs-k5-k10" + ("" if startup else "-no-startup-line"), w.out, truth)


def v0_zero_accepted(root: Path) -> None:
    """A V0 drafter that accepts nothing (a misconfigured draft model): broken, though no positions are printed."""
    w = Writer(Layout("0.6.3", prefix_in_format=False, process_prefix=False, brackets=False))
    rng = random.Random(8)
    run, _ = _v0_run(w, rng, 0.0, 8, [0.0] * 8, 5, startup=True)
    _write(root, "vllm-0.6.3-v0-zero-accepted-k8", w.out, {"version": "0.6.3", "format": "V0-b", "runs": [run], "k": 8,
                                                           "method": "draft_model", "health": "broken"})


def v0_one_line(root: Path) -> None:
    """A paste of one cumulative V0 line: its counts are totals since the server started."""
    w = Writer(Layout("0.6.3", prefix_in_format=False, process_prefix=False, brackets=False))
    k, drafts, acc, emitted = 5, 400, 1212, 1536
    w.vllm(t_at(600), "", 0, "metrics.py", 367, v0_line(k, acc, k * drafts, emitted, False))
    run = {"k": k, "drafts": drafts, "draft_tokens": k * drafts, "accepted_tokens": acc, "emitted_tokens": emitted,
           "mean_acceptance_length": emitted / drafts}
    _write(root, "vllm-0.6.3-v0-one-cumulative-line", w.out, {"version": "0.6.3", "format": "V0-b", "runs": [run], "k": k,
                                                              "method": None})


def _v1e_run(w: Writer, rng: random.Random, k: int, n: int, api: int = 7) -> Tally:
    tally = Tally(k)
    for i in range(n):
        ts = t_at(60 + 10 * i)
        w.vllm(ts, "APIServer", api, "loggers.py", 335, engine_line(0, 88.0, 701.5, 12, 0, 4.4, 20.0, device="GPU"))
        drafts = rng.randint(400, 900)
        accepted = curve(rng, k, drafts, 0.7, 0.75)
        tally.add(drafts, k * drafts, accepted)
        w.vllm(ts, "APIServer", api, "metrics.py", 120, v1e(accepted, drafts, k * drafts, 10.0))
    return tally


def v1e_cut_line(root: Path) -> None:
    """A V1-e log whose last spec line a shipper cut at `…Drafted: N tokens, Per-pos`; and a fork's
    `SpecDecoding timing` line after each spec line, which is no spec line."""
    w = Writer(Layout("0.33.0", prefix_in_format=True))
    rng, k = random.Random(251), 5
    tally = _v1e_run(w, rng, k, 4)
    for i in range(4):  # after each spec line: the fork's timing line
        w.out.insert(2 * i + 2 + i, w.out[2 * i + 1 + i].split(" [", 1)[0] + " [metrics.py:140] "
                     f"SpecDecoding timing (mean ms/step over {40 + i} steps): draft 1.2{i}, verify 8.4{i}")
    drafts = 700
    accepted = curve(rng, k, drafts, 0.7, 0.75)
    whole = v1e(accepted, drafts, k * drafts, 10.0)
    cut = whole[: whole.index("Per-position") + len("Per-pos")]
    w.vllm(t_at(110), "APIServer", 7, "loggers.py", 335, engine_line(0, 88.0, 701.5, 12, 0, 4.4, 20.0, device="GPU"))
    w.vllm(t_at(110), "APIServer", 7, "metrics.py", 120, cut)
    _write(root, "vllm-0.33.0-v1e-cut-per-pos", w.out, {"version": "0.33.0", "format": "V1-e", "k": k, "method": None,
                                                        "engines": {"0": tally.total()}, "parse_errors": {"truncated": 1},
                                                        "seen": {"spec-timing": 4}})


def collapsed_records(root: Path) -> None:
    """A shipper lost two newlines: a spec line and the next Engine line, and two spec lines, run together."""
    w = Writer(Layout("0.26.0", prefix_in_format=False))
    rng, k = random.Random(252), 3
    tally = _v1e_run(w, rng, k, 4, api=9)
    out = w.out  # [E, S, E, S, E, S, E, S]
    w.out = [out[0], out[1] + out[2], out[3], out[4], out[5] + out[6] + out[7]]
    _write(root, "vllm-0.26.0-collapsed-records", w.out, {"version": "0.26.0", "format": "V1-e", "k": k, "method": None,
                                                          "engines": {"0": tally.total()}, "parse_errors": {"collapsed_records": 2}})


def message_only(root: Path) -> None:
    """`--logging-config` with `%(message)s` only, and a log store's export (`YYYY-MM-DD HH:MM:SS.mmm | message`)."""
    rng, k = random.Random(253), 4
    w = Writer(Layout("0.33.0", prefix_in_format=True))
    tally = _v1e_run(w, rng, k, 3)
    bare = [line.split("] ", 1)[1] for line in w.out]
    _write(root, "vllm-0.33.0-message-only", bare, {"version": "0.33.0", "format": "V1-e", "k": k, "method": None,
                                                    "engines": {"0": tally.total()}, "dated": False})
    export = []
    for i, line in enumerate(bare):
        export.append(f"2024-07-24 10:0{i // 2}:{10 * (i % 2):02d}.123 | vllm-0 | {line}")
    _write(root, "vllm-0.33.0-log-store-export", export, {"version": "0.33.0", "format": "V1-e", "k": k, "method": None,
                                                          "engines": {"0": tally.total()}, "dated": True,
                                                          "last_stamp": "2024-07-24 10:02:10"})


def banner_elided_init(root: Path) -> None:
    """A posted log whose `Initializing … (v…)` was shortened to `(...)`; the API server's banner has the version."""
    w = Writer(Layout("0.26.1rc0", prefix_in_format=False))
    rng, k = random.Random(254), 3
    w.vllm(t_at(0), "APIServer", 7, "api_server.py", 1044, "vLLM API server version %s", "0.26.1rc0+g5c1e0a9.d20250724")
    w.vllm(t_at(8), "EngineCore_0", 8, "core.py", 117, "Initializing a V1 LLM engine (...) with config: %s",
           "model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=SpeculativeConfig(method='eagle3', "
           "model='yuhuili/EAGLE3-LLaMA3.1-Instruct-8B', num_spec_tokens=3), tokenizer='meta-llama/Llama-3.1-8B-Instruct', "
           "served_model_name=meta-llama/Llama-3.1-8B-Instruct")
    tally = _v1e_run(w, rng, k, 3)
    _write(root, "vllm-0.26.1-banner-elided-init", w.out, {"version": "0.26.1rc0+g5c1e0a9.d20250724", "format": "V1-e", "k": k,
                                                           "method": "eagle3", "engines": {"0": tally.total()}})


def sglang_decode(root: Path) -> None:
    """SGLang SG-d `Decode batch,` lines (scheduler_metrics_mixin.py, reference §4): ratios, no counts."""
    lines, rng = [], random.Random(255)
    last = (0.0, 0.0)
    for i in range(5):
        length, rate = rng.uniform(2.5, 3.5), rng.uniform(0.4, 0.6)
        last = (round(length, 2), round(rate, 2))
        lines.append(f"[2026-04-05 20:0{i}:51 TP0] Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, "
                     f"accept len: {length:.2f}, accept rate: {rate:.2f}, cuda graph: True, gen throughput (token/s): 1635.11, "
                     "#queue-req: 0, ")
        lines.append(f"[2026-04-05 20:0{i}:51 TP1] Decode batch, #running-req: 32, #token: 11179, token usage: 0.08, "
                     f"accept len: {length:.2f}, accept rate: {rate:.2f}, cuda graph: True, gen throughput (token/s): 1635.11, "
                     "#queue-req: 0, ")  # another TP rank: the same numbers, never a second series
    _write(root, "sglang-decode-batch", lines, {"format": "SG-d", "sampled": {"mean_acceptance_length": last[0],
                                                                               "draft_acceptance_ratio": last[1]}})


def year_less(root: Path) -> None:
    """A V1-e log of 07-24 (no year in the stamps): its year is the file's mtime's only if that is its last write."""
    w = Writer(Layout("0.33.0", prefix_in_format=True))
    w.vllm(t_at(0), "APIServer", 7, "startup.py", 38, LOGO, "0.33.0", "m")
    tally = _v1e_run(w, random.Random(256), 3, 3)
    w.out = [line.replace(" 12-01 ", " 07-24 ") for line in w.out]  # t_at is 12-01: the same day-times in July
    _write(root, "vllm-0.33.0-no-year-july", w.out, {"version": "0.33.0", "format": "V1-e", "k": 3, "method": None,
                                                     "engines": {"0": tally.total()}, "last_stamp": "07-24 10:01:20"})


SCENARIOS = [lambda root: v0_two_runs(root, True), lambda root: v0_two_runs(root, False), v0_zero_accepted, v0_one_line,
             v1e_cut_line, collapsed_records, message_only, banner_elided_init, sglang_decode, year_less]
