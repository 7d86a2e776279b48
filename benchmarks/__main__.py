"""`python -m benchmarks`: run every benchmark, print the table, write benchmarks/RESULTS.md.

    python -m benchmarks            the full run (1 GiB log, 1,000 targets, 60 s follow windows; ~15 min)
    python -m benchmarks --quick    small inputs, a minute or so (what CI runs, so this cannot rot)

Inputs are generated deterministically into benchmarks/.data on first use. Timings are medians;
every ratio compares with a baseline measured in the same run on the same machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

from benchmarks import suites
from benchmarks.inputs import ROOT


def _machine() -> list[str]:
    with open("/proc/cpuinfo") as cpuinfo:
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), platform.processor())
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    libraries = ", ".join(f"{name} {version(name)}" for name in ("prometheus_client", "hyperscan", "numpy", "watchdog"))

    def tool(command: list[str]) -> str:
        try:
            return subprocess.run(command, capture_output=True, text=True, check=False).stdout.splitlines()[0]
        except (OSError, IndexError):
            return "not installed"

    mtail = suites.mtail_binary()
    return [
        f"- machine: {cpu}, {os.cpu_count()} cores, {memory:.0f} GiB, {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}; {libraries}",
        f"- {tool(['grep', '--version'])}; mtail: {tool([mtail, '--version']) if mtail else 'not installed'}",
        "- page cache: warm (each log is read once before timing)",
    ]


def _ensure_mtail() -> None:
    """mtail is a Debian package: install it when we may (root), else say how."""
    if suites.mtail_binary() is not None:
        return
    if os.geteuid() == 0:
        print("benchmarks: installing mtail (Debian package) …", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "-qq", "mtail"], check=False, capture_output=True)
        if suites.mtail_binary() is None:
            subprocess.run(["apt-get", "update", "-qq"], check=False, capture_output=True)
            subprocess.run(["apt-get", "install", "-y", "-qq", "mtail"], check=False, capture_output=True)
    if suites.mtail_binary() is None:
        print("benchmarks: mtail is not installed; run `sudo apt-get install mtail` for the mtail baseline", file=sys.stderr)


def _table(rows: list[suites.Row]) -> str:
    out = ["| benchmark | case | measured | baseline (same run) | ratio | target | met |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        met = "—" if row.met is None else ("yes" if row.met else "**no**")
        out.append(f"| {row.benchmark} | {row.case} | {row.measured} | {row.baseline} | {row.ratio} | {row.target} | {met} |")
    return "\n".join(out)


BENCHMARK_NAMES = {
    "offline": "offline scan", "catchup": "catch-up", "exposition": "exposition", "latency": "live latency", "follow": "follow cost", "scale": "scale",
    "hostile": "hostile targets",
}


def _rows_of(text: str, exclude: set[str]) -> list[str]:
    text = text.split("\n## ")[0]  # the results table only, not the hand-written sections after it
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith(("| benchmark", "|---"))]
    return [row for row in rows if row.split("|")[1].strip() not in exclude]


def _row_order(row: str) -> int:
    return list(BENCHMARK_NAMES.values()).index(row.split("|")[1].strip())


OFFLINE_SIZES = [10 << 20, 100 << 20, 1 << 30]  # throughput and peak RSS must stay flat across them


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small inputs and short windows (CI)")
    parser.add_argument("--out", type=Path, default=ROOT / "RESULTS.md", help="where to write the results (default: %(default)s)")
    parser.add_argument("--only", nargs="*", choices=list(BENCHMARK_NAMES), help="run only these")
    parser.add_argument("--sizes", type=lambda text: [int(size) << 20 for size in text.split(",")], default=None,
                        help="offline log sizes in MiB, comma-separated (default: 10,100,1024; --quick: 1)")
    args = parser.parse_args()
    quick = args.quick
    plan = {
        "offline": lambda: [row for size in (args.sizes or ([1 << 20] if quick else OFFLINE_SIZES))
                            for row in suites.offline(size, runs=1 if quick else 3, mtail_runs=1 if quick or size >= 1 << 30 else 3)]
        + suites.offline_gzip(1 << 20 if quick else 100 << 20, runs=1 if quick else 3),
        "catchup": lambda: suites.catch_up(1 << 20 if quick else 100 << 20, runs=1 if quick else 3),
        "exposition": lambda: suites.exposition(repeats=20 if quick else 200),
        "latency": lambda: suites.latency(lines=10 if quick else 200, poll_interval=0.25 if quick else 1.0),
        "follow": lambda: suites.follow(seconds=2.0 if quick else 60.0),
        "scale": lambda: suites.scale(
            targets=20 if quick else 1000, interval=1.0 if quick else 5.0, seconds=3.0 if quick else 60.0, renders=5 if quick else 20
        ),
        "hostile": lambda: suites.hostile(bombs=3 if quick else 13, seconds=3.0 if quick else 20.0),
    }
    _ensure_mtail()
    rows: list[suites.Row] = []
    started = time.monotonic()
    for name, run in plan.items():
        if args.only and name not in args.only:
            continue
        print(f"benchmarks: {name} …", file=sys.stderr, flush=True)
        rows += run()
        print(_table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    table = _table(rows)
    print(table)
    command = "python -m benchmarks" + (" --quick" if quick else "") + (" --only " + " ".join(args.only) if args.only else "")
    note = ""
    if args.only and args.out.exists():  # a partial run replaces its benchmarks' rows and keeps the others
        kept = _rows_of(args.out.read_text().split("\n## ", 1)[0], exclude={BENCHMARK_NAMES[name] for name in args.only})
        table = _table([]) + "\n" + "\n".join(sorted(kept + table.splitlines()[2:], key=_row_order))
        note = f" Rows of {', '.join(args.only)} from this run, the others from the file's earlier run."
    # hand-written sections after the table (`## …`, e.g. before/after records) are kept
    previous = args.out.read_text() if args.out.exists() else ""
    kept_notes = previous[previous.index("\n## "):] if "\n## " in previous else ""
    args.out.write_text(
        "# Benchmark results\n\n"
        f"Written by `{command}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} "
        f"in {time.monotonic() - started:.0f} s. Medians; ratios against baselines measured in the same run.{note}\n\n"
        + "\n".join(_machine()) + "\n\n" + table + "\n" + kept_notes
    )
    print(f"benchmarks: wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
