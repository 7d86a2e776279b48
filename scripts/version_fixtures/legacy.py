"""Fixtures for the old formats: V0 (0.4.3, 0.6.3), V1-b (0.8.4) and the unreleased V1-a."""

from __future__ import annotations

import random
from pathlib import Path

from .base import Layout, Repr, Tally, Writer, init_line_args, spec_repr, t_at, write


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
        ts = t_at(25 + 10 * n)  # API server's forced log every 10 s
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
            # n-gram: a draft has 1..k tokens (a shorter match drafts fewer)
            drafted = k * drafts if fixed else sum(rng.randint(1, k) for _ in range(drafts))
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
        ts = t_at(25 + 10 * n)  # API server's forced log every 10 s
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
