"""The load ladder's ground truth, from the client's records alone (each run's load.jsonl): throughput
per run and concurrency, speed-up of each k over plain decoding, the break-even concurrency and the
best k at each load. Stdlib only; the README of a ladder and tests/test_golden_ladder.py both use it,
and nothing of the sidecar's estimate goes into it.

  python3 measure.py LADDER_DIR [--json OUT] [--markdown]

A point's throughput is the completion tokens of the requests sent at that concurrency over the
span from the first request's start to the last one's end (closed loop: every client sends its next
request when its last one returns, and stops sending when the point's time is up), without each
client's first request at the point: its warm-up (`steady`; --with-warmup counts it).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import os
from collections.abc import Mapping


def steady(records: list[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """The requests of one point without each client's first (its warm-up): a speculating vLLM compiles
    for a batch size the first time it meets one, and that request took 1.5–3 s where the others took
    0.4 s (the golden ladder's k runs at 1 and 2 clients); a server that has run for a while has met
    every batch size, so the steady state is what speculation pays at this load."""
    seen: set[object] = set()
    kept = []
    for record in sorted(records, key=lambda r: float(r["start"])):  # type: ignore[arg-type]
        client = record.get("client")
        if client is not None and client not in seen:
            seen.add(client)
            continue
        kept.append(record)
    return kept or list(records)


def throughput(records: list[Mapping[str, object]], warmup: bool = False) -> dict[int, float]:
    """Completion tokens per second at each concurrency (`warmup`: each client's first request too)."""
    by_level: dict[int, list[Mapping[str, object]]] = {}
    for record in records:
        if record.get("status") == 200:
            by_level.setdefault(int(record["concurrency"]), []).append(record)  # type: ignore[call-overload]
    out = {}
    for level, all_rows in sorted(by_level.items()):
        rows = all_rows if warmup else steady(all_rows)
        span = max(float(r["end"]) for r in rows) - min(float(r["start"]) for r in rows)  # type: ignore[arg-type]
        out[level] = sum(int(r["completion_tokens"]) for r in rows) / span if span > 0 else math.nan  # type: ignore[call-overload]
    return out


def read_runs(ladder: str, warmup: bool = False) -> dict[str, dict[int, float]]:
    """{"plain": {c: tokens/s}, "k4": {…}, …} for every run folder with a load.jsonl (or load.jsonl.gz)."""
    runs = {}
    for name in sorted(os.listdir(ladder)):
        for file_name, opener in (("load.jsonl", open), ("load.jsonl.gz", gzip.open)):
            path = os.path.join(ladder, name, file_name)
            if os.path.isfile(path):
                with opener(path, "rt") as file:  # type: ignore[operator]
                    runs[name] = throughput([json.loads(line) for line in file if line.strip()], warmup)
                break
    return runs


def k_of(name: str) -> int:
    return 0 if name == "plain" else int(name.removeprefix("k"))


def break_even(speedups: dict[int, float]) -> float | None:
    """The concurrency where the speed-up falls through 1 (log-linear between points); None if it never does
    (or is below 1 from the first point)."""
    levels = sorted(speedups)
    if not levels or speedups[levels[0]] < 1.0:
        return None
    for low, high in itertools.pairwise(levels):
        if speedups[low] >= 1.0 > speedups[high]:
            share = (speedups[low] - 1.0) / (speedups[low] - speedups[high])
            return math.exp(math.log(low) + share * (math.log(high) - math.log(low)))
    return None


def measure(ladder: str, warmup: bool = False) -> dict[str, object]:
    runs = read_runs(ladder, warmup)
    plain = runs.get("plain", {})
    speculative = {name: levels for name, levels in runs.items() if name != "plain"}
    points = []
    for level in sorted(plain):
        row: dict[str, object] = {"concurrency": level, "plain_tokens_per_second": round(plain[level], 1)}
        tokens = {0: plain[level]}
        for name, levels in sorted(speculative.items(), key=lambda item: k_of(item[0])):
            if level in levels:
                tokens[k_of(name)] = levels[level]
                row[f"{name}_tokens_per_second"] = round(levels[level], 1)
                row[f"{name}_speedup"] = round(levels[level] / plain[level], 4)
        best = max(tokens, key=lambda k: tokens[k])
        row["tokens_per_second_by_k"] = tokens  # k (0: plain) -> tokens/s, what check.py judges a best k by
        row["best_k"] = best
        row["within_5_percent_of_best"] = sorted(k for k, value in tokens.items() if value >= 0.95 * tokens[best])
        points.append(row)
    evens = {}
    for name, levels in speculative.items():
        speedups = {level: levels[level] / plain[level] for level in levels if level in plain}
        at = break_even(speedups)
        evens[name] = None if at is None else round(at, 1)
    return {"points": points, "break_even_concurrency": evens, "runs": sorted(runs, key=k_of)}


def markdown(result: dict[str, object]) -> str:
    runs = [name for name in result["runs"] if name != "plain"]  # type: ignore[attr-defined]
    head = "| concurrency | plain tok/s | " + " | ".join(f"{name} tok/s | {name} speed-up" for name in runs) + " | best k |"
    rule = "|" + "---|" * (3 + 2 * len(runs))
    rows = [head, rule]
    for point in result["points"]:  # type: ignore[attr-defined]
        cells = [str(point["concurrency"]), f"{point['plain_tokens_per_second']:.0f}"]
        for name in runs:
            cells += [f"{point.get(f'{name}_tokens_per_second', float('nan')):.0f}", f"×{point.get(f'{name}_speedup', float('nan')):.2f}"]
        cells.append("plain" if point["best_k"] == 0 else str(point["best_k"]))
        rows.append("| " + " | ".join(cells) + " |")
    evens = result["break_even_concurrency"]  # type: ignore[index]
    rows.append("")
    rows += [f"- {name}: break-even at {'no crossing' if evens[name] is None else f'≈ {evens[name]} concurrent requests'}" for name in runs]
    return "\n".join(rows) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ladder")
    ap.add_argument("--json")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--with-warmup", action="store_true", help="count each client's first request at each point too")
    a = ap.parse_args()
    result = measure(a.ladder, a.with_warmup)
    if a.json:
        with open(a.json, "w") as file:
            json.dump(result, file, indent=1)
    print(markdown(result) if a.markdown else json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
