"""Fixtures for the vLLM releases 0.24 .. 0.33 (V1-e spec line, new layouts)."""

from __future__ import annotations

import random
from pathlib import Path

from .base import (
    COLOUR_LOGO,
    LOGO,
    Layout,
    Repr,
    Tally,
    Writer,
    curve,
    engine_line,
    init_line_args,
    iteration_line,
    spec_repr,
    t_at,
    v1e,
    write,
)


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
              [(1869, ("GPU KV cache size: %s tokens, Maximum concurrency for %s tokens per "
                       "request: %.2fx"), ("1,805,632", "8,192", 220.41))],
              ("api_server.py", 657), seed=28, p0=0.8, cond=0.85)


def s030(root):
    plain_run(root, "0.30.0", "spec-flags-eagle-k5",
              Layout("0.30.0", prefix_in_format=False),
              "eagle", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", 5,
              {"spec_method": "eagle", "spec_model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B",
               "spec_tokens": 5},
              ("api_utils.py", 347, 286, 123, 315),
              [(2395, ("%s KV cache size: %s tokens, Maximum concurrency for %s tokens per "
                       "request: %.2fx"), ("GPU", "1,805,632", "8,192", 220.41))],
              ("entry.py", 139), device="GPU", seed=30)


def s034(root: Path) -> None:
    """0.34.0 text layout: the plain logo (VLLM_LOGGING_COLOR unset), eagle3 k=4,
    --per-request-spec-decode-metrics summary (response bodies only: no log line),
    --enable-mfu-metrics (an `Engine 000: MFU: …` line after the spec line), a `KV fetch:`
    part in one stats line."""
    v, api, eng, model = "0.34.0", 11, 214, "meta-llama/Llama-3.1-8B-Instruct"
    draft = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    w = Writer(Layout(v, prefix_in_format=True))
    rng, k = random.Random(3400), 4
    w.vllm(t_at(0), "APIServer", api, "startup.py", 38, LOGO, v, model)
    w.vllm(t_at(0), "APIServer", api, "startup.py", 96, "non-default args: %s", {
        "model_tag": model, "model": model, "per_request_spec_decode_metrics": "summary",
        "enable_mfu_metrics": True,
        "speculative_config": {"method": "eagle3", "model": draft, "num_speculative_tokens": k}})
    w.vllm(t_at(7), "EngineCore", eng, "core.py", 153,
           "Initializing a V1 LLM engine (v%s) with config: %s",
           *init_line_args(v, model, spec_repr("eagle3", draft, k), model))
    w.vllm(t_at(25), "EngineCore", eng, "kv_cache_utils.py", 1168,
           "%s KV cache size: %s tokens, Maximum concurrency for %s tokens per request: %.2fx",
           "GPU", "1,805,632", "8,192", 220.41)
    w.vllm(t_at(40), "APIServer", api, "entry.py", 139, "Starting vLLM server on %s",
           "http://0.0.0.0:8000")
    w.uvicorn(t_at(40), "APIServer", api, "Started server process [%d]", api)
    w.uvicorn(t_at(40), "APIServer", api, "Application startup complete.")
    tally = Tally(k)
    for n in range(1, 6):
        t0 = 40 + 10 * (n - 1)
        w.uvicorn(t_at(t0 + 4), "APIServer", api, '%s - "%s %s HTTP/%s" %d',
                  f"10.3.0.7:{45000 + n}", "POST", "/v1/chat/completions", "1.1", 200, access=True)
        ts = t_at(t0 + 10)
        stats = engine_line(0, 210.4, 1301.9, 20, 0, 12.2, 35.0, device="GPU")
        if n == 3:  # loggers.py:303-308: only while a KV connector fetches (new in 0.34)
            stats = stats.replace(", GPU KV cache usage", ", KV fetch: 1 waiting to start, 2 in progress, "
                                  "0 completed waiting, GPU KV cache usage")
        w.vllm(ts, "APIServer", api, "loggers.py", 335, stats)
        drafts = rng.randint(1800, 2600)
        acc = curve(rng, k, drafts, 0.74, 0.78)
        tally.add(drafts, k * drafts, acc)
        w.vllm(ts, "APIServer", api, "metrics.py", 120, v1e(acc, drafts, k * drafts, 10.0))
        # perf.py:1724, log_prefix "Engine 000: " (loggers.py:346): after the spec line, same engine
        w.vllm(ts, "APIServer", api, "perf.py", 1724, "%sMFU: %.1f TF/s/device %.1f GB/s/device",
               "Engine 000: ", rng.uniform(80, 120), rng.uniform(900, 1300))
    truth = {"version": v, "format": "V1-e", "method": "eagle3", "k": k, "fixed_length": True,
             "note": "--per-request-spec-decode-metrics adds nothing to the log (response bodies only).",
             "engines": {"0": tally.total()}}
    write(root, v, "text-eagle3-k4-mfu-kvfetch", w, truth)


def s034_diffusion(root: Path) -> None:
    """0.34.0, a discrete-diffusion model: the spec-decode path logs `DiffusionDecoding metrics:`
    (metrics.py:160-175) instead of the spec line — seen, never a spec series."""
    v, api, model = "0.34.0", 12, "google/diffusion-gemma-2b"
    w = Writer(Layout(v, prefix_in_format=True))
    rng = random.Random(3401)
    w.vllm(t_at(0), "APIServer", api, "startup.py", 38, LOGO, v, model)
    for n in range(1, 4):
        ts = t_at(10 * n)
        w.vllm(ts, "APIServer", api, "loggers.py", 335, engine_line(0, 50.0, 400.0, 4, 0, 3.0, 0.0, device="GPU"))
        steps = rng.randint(300, 400)
        committed, canvas = steps * 12, steps * 64
        w.vllm(ts, "APIServer", api, "metrics.py", 160,
               "DiffusionDecoding metrics: Committed token throughput: %.2f tokens/s, Mean denoising steps per "
               "canvas: %.2f, Mean tokens committed per denoising step: %.2f, Committed: %d tokens, Denoising "
               "steps: %d, Canvas positions evaluated: %d",
               committed / 10.0, canvas / committed, committed / steps, committed, steps, canvas)
    truth = {"version": v, "format": None, "method": None, "k": None,
             "note": "DiffusionDecoding lines are not spec decoding: no series, seen as format V1-f.",
             "seen": {"V1-f": 3}, "engines": {}}
    write(root, v, "diffusion-decoding-only", w, truth)
