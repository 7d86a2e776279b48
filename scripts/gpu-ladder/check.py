"""The acceptance check of issue #31 on a ladder: the sidecar's pay-off estimate from each speculative
run's server.log (with the calibration made from the plain run's log) against the speed-up, break-even
and best k measured from the clients' records (measure.py), which the estimate never sees.

  python3 check.py LADDER_DIR [--json OUT]      (needs the exporter importable; exit 1 if a point fails)

At every ladder point: the estimated speed-up within ±15 % of the measured one (throughput of the k run
over the plain run at the same concurrency); the break-even within one ladder step (a factor of two);
`best_k` the measured best k (0: plain decoding) or one whose measured throughput is within 5 % of it.
A point is matched to the band whose mean running requests is nearest in log scale, within ×/÷ 1.5.

Two rules say how a best k is judged where the ladder did not run it:
  * a k between two measured ones (3 between 2 and 4) is given the throughput interpolated linearly
    between them;
  * an estimate cannot choose past the k its run drafted (acceptance past it was never seen, and
    judge/payoff.py does not guess it): where it names the k drafted, a larger measured best is not
    held against it (the k2 run cannot know that k = 4 pays more).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

SPEEDUP_TOLERANCE = 0.15
BREAK_EVEN_STEPS = 2.0  # one ladder step: concurrency doubles
MATCH = 1.5


def _measure_module() -> Any:
    spec = importlib.util.spec_from_file_location("measure", Path(__file__).with_name("measure.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _log(run_dir: str) -> str:
    for name in ("server.log", "server.log.gz"):
        if os.path.exists(os.path.join(run_dir, name)):
            return os.path.join(run_dir, name)
    raise FileNotFoundError(f"no server.log in {run_dir}")


def estimates(ladder: str) -> dict[str, dict[str, Any]]:
    """Each speculative run's `payoff` (analyze --format json --calibration), made from the logs alone."""
    from exporter.config import DeriveSettings
    from exporter.report.analyze import AnalyzeOptions, analyze
    from exporter.report.calibrate import calibrate

    calibration = calibrate([_log(os.path.join(ladder, "plain"))])
    out = {}
    for name in sorted(os.listdir(ladder)):
        if name.startswith("k") and name[1:].isdigit():
            report = analyze([_log(os.path.join(ladder, name))], DeriveSettings(calibration=calibration), AnalyzeOptions(progress=False, jobs=1))
            (series,) = [s for s in report["series"] if s["source"] == "log"]
            out[name] = series["payoff"]
    return out


def measured_tokens(point: dict[str, Any], k: int) -> float | None:
    """The point's measured tokens/s at k, interpolated linearly between the measured k around it."""
    measured = point["tokens_per_second_by_k"]
    if k in measured:
        return float(measured[k])
    below, above = [m for m in measured if m < k], [m for m in measured if m > k]
    if not below or not above:
        return None
    low, high = max(below), min(above)
    return float(measured[low] + (measured[high] - measured[low]) * (k - low) / (high - low))


def best_k_ok(estimated: int | None, drafted: int, point: dict[str, Any]) -> bool:
    if estimated is None:
        return False
    best = point["best_k"]
    top = measured_tokens(point, best)
    value = measured_tokens(point, estimated)
    if top is None or value is None:
        return False
    if value >= 0.95 * top:
        return True
    return estimated == drafted and best > drafted  # the estimate cannot see past the k drafted


def check(ladder: str) -> dict[str, Any]:
    measured = _measure_module().measure(ladder)
    estimated = estimates(ladder)
    rows, failures = [], []
    for name, payoff in sorted(estimated.items(), key=lambda item: int(item[0][1:])):
        bands = payoff["by_load"]
        for point in measured["points"]:
            c = point["concurrency"]
            truth = point.get(f"{name}_speedup")
            near = min(bands, key=lambda b: abs(math.log(b["running"] / c)), default=None)
            if truth is None:
                continue
            row: dict[str, Any] = {"run": name, "concurrency": c, "measured_speedup": truth, "measured_best_k": point["best_k"]}
            if near is None or abs(math.log(near["running"] / c)) > math.log(MATCH):
                row["problem"] = "no band at this load"
                failures.append(row)
                rows.append(row)
                continue
            row.update(running=near["running"], estimated_speedup=near["speedup"], best_k=near["best_k"])
            error = near["speedup"] / truth - 1 if near["speedup"] is not None else math.inf
            row["speedup_error"] = round(error, 4)
            ok_k = best_k_ok(near["best_k"], int(name[1:]), point)
            row["best_k_ok"] = ok_k
            if abs(error) > SPEEDUP_TOLERANCE or not ok_k:
                failures.append(row)
            rows.append(row)
        truth_even = measured["break_even_concurrency"].get(name)
        estimate_even = payoff["break_even_running"]
        if truth_even is None or estimate_even is None:
            even_ok = truth_even is None and estimate_even is None
        else:
            even_ok = abs(math.log(estimate_even / truth_even)) <= math.log(BREAK_EVEN_STEPS)
        even = {"run": name, "measured_break_even": truth_even, "estimated_break_even": estimate_even, "ok": even_ok,
                "reason": payoff["break_even_reason"]}
        rows.append(even)
        if not even_ok:
            failures.append(even)
    return {"rows": rows, "failures": failures, "schedules": {name: p["num_speculative_tokens_per_batch_size"] for name, p in estimated.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ladder")
    ap.add_argument("--json")
    a = ap.parse_args()
    result = check(a.ladder)
    if a.json:
        with open(a.json, "w") as file:
            json.dump(result, file, indent=1)
    for row in result["rows"]:
        print(json.dumps(row))
    print(f"{len(result['failures'])} failing of {len(result['rows'])}")
    sys.exit(1 if result["failures"] else 0)


if __name__ == "__main__":
    main()
