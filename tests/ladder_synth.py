"""A synthetic load ladder (plain and speculative runs) written as vLLM 0.26.0 writes its logs and as
scripts/gpu-ladder/ladder_load.py writes its records, from a server whose costs are known: what
scripts/gpu-ladder/check.py is tested on before a GPU ladder exists. Not a fake of vLLM's numbers:
a step model whose truth the test knows, in vLLM's format strings (v1/metrics/loggers.py:262-266,
v1/spec_decode/metrics.py)."""

from __future__ import annotations

import json
from pathlib import Path

RATES = (0.74, 0.55, 0.40, 0.29, 0.21, 0.15, 0.11, 0.08)
LEVELS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
INTERVAL = 2.0  # VLLM_LOG_STATS_INTERVAL
PER_LEVEL = 5  # stats intervals a level lasts (the first one ramps from the level before)


def tau(tokens: float) -> float:
    """A plain step (seconds) with `tokens` in the batch: weight-bound, then compute-bound."""
    return 0.0047 + 0.0000245 * max(0.0, tokens - 64.0)


def delta(running: float) -> float:
    """The drafter's cost per drafted token."""
    return 0.0012 + 0.000004 * running


def rate(running: int, k: int) -> float:
    """Tokens/s the server emits at `running` requests drafting k (0: plain)."""
    if not k:
        return running / tau(running)
    return running * (1 + sum(RATES[:k])) / (tau(running * (1 + k)) + k * delta(running))


def write_run(folder: Path, k: int, t0: float = 1_796_300_000.0, plain_scale: float = 1.0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["(APIServer pid=9) INFO 12-03 10:00:00 [api_utils.py:273] non-default args: {'model': '/tmp/models/ladder-target', "
             "'served_model_name': ['target']" + (f", 'speculative_config': {{'method': 'draft_model', 'num_speculative_tokens': {k}}}" if k else "") + "}"]
    records = []
    at = t0
    for level in LEVELS:
        tokens_per_second = rate(level, k)
        for i in range(PER_LEVEL):
            at += INTERVAL
            generated = tokens_per_second * (0.5 if i == 0 else 1.0) * (plain_scale if not k else 1.0)  # the ramp: half an interval of load
            stamp = _stamp(at)
            lines.append(f"(APIServer pid=9) INFO {stamp} [loggers.py:310] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
                         f"throughput: {generated:.1f} tokens/s, Running: {level} reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, "
                         "Prefix cache hit rate: 90.0%")
            if k:
                length = 1 + sum(RATES[:k])
                drafts = round(generated * INTERVAL / length)
                positions = [round(drafts * r) for r in RATES[:k]]
                accepted = sum(positions)
                lines.append(f"(APIServer pid=9) INFO {stamp} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
                             f"Accepted throughput: {accepted / INTERVAL:.2f} tokens/s, Drafted throughput: {drafts * k / INTERVAL:.2f} tokens/s, "
                             f"Accepted: {accepted} tokens, Drafted: {drafts * k} tokens, Per-position acceptance rate: "
                             f"{', '.join(f'{p / drafts:.3f}' for p in positions)}, Avg Draft acceptance rate: {100 * accepted / (drafts * k):.1f}%")
        start = at - (PER_LEVEL - 1) * INTERVAL
        seconds = 128 * level / tokens_per_second  # one request of 128 tokens at this load
        waves = max(1, int((PER_LEVEL - 1) * INTERVAL / seconds))
        records.extend({"k": k or None, "concurrency": level, "start": round(start + wave * seconds, 4),
                        "end": round(start + (wave + 1) * seconds, 4), "completion_tokens": 128, "status": 200, "client": client}
                       for wave in range(waves) for client in range(level))
        at += INTERVAL  # the gap: idle, nothing printed
    (folder / "server.log").write_text("\n".join(lines) + "\n")
    (folder / "load.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def _stamp(at: float) -> str:
    import time

    return time.strftime("%m-%d %H:%M:%S", time.gmtime(at))


def write_ladder(root: Path, ks: tuple[int, ...] = (2, 4, 8), plain_scale: float = 1.0) -> Path:
    write_run(root / "plain", 0, plain_scale=plain_scale)
    for k in ks:
        write_run(root / f"k{k}", k)
    return root
