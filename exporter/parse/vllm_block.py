"""A block of vLLM log lines → the fields of its plain Engine and V1-e lines, as arrays (the batch path's scanner).

`analyze` (and `serve` catching up) reads blocks of thousands of lines; most of them are the two
shapes below, which one regex pass over the joined block takes apart without Python per line:
  * `Engine NNN:` lines and V1-e `SpecDecoding metrics:` lines with a plain envelope
    (`(Proc pid=N) LEVEL MM-DD HH:MM:SS [file:line] `, no colour — envelope.py's layers with
    neither a VLLM_LOGGING_PREFIX nor colour), and `Engine NNN: Iteration(…)` lines (vLLM ≥ 0.26
    with iteration details), which are neither an engine marker nor a spec line
    (vllm_log.parse_engine_marker) and are passed over;
  * everything else — startup config, JSON records (0.32+), a VLLM_LOGGING_PREFIX, V0 lines,
    `N Engines Aggregated:`, plugin records, colour, odd lines, values out of range — is marked
    for the line parsers (envelope.py, vllm_log.py), which name what is wrong with it.
The V1-e fields are vllm_log._V1E's, in the same order (reference §2.3); a line this scanner
takes parses to the same numbers there (tests/test_batch_equivalence.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from exporter.limits import MAX_POSITIONS
from exporter.parse.envelope import may_hold_two_records
from exporter.parse.vllm_log import LOAD_FIELDS, PER_POSITION_KEY

V1E = "V1-e"  # the layout of the lines this scanner takes apart
_NUM = r"(?:[0-9]+(?:\.[0-9]+)?|nan|inf)"
_LINE = re.compile(
    r"^(?:"
    r"(?:\([A-Za-z0-9_]+ pid=([0-9]+)\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +([0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})(?:[.,][0-9]+)? +"
    r"\[?[A-Za-z0-9_./-]+?:[0-9]+\] "
    rf"(?:Engine ([0-9]+): (?:(Iteration\()|{LOAD_FIELDS})?.*|SpecDecoding metrics: "
    rf"Mean acceptance length: ({_NUM}), Accepted throughput: ({_NUM}) tokens/s, "
    rf"Drafted throughput: {_NUM} tokens/s, Accepted: ([0-9]{{1,15}}) tokens, Drafted: ([0-9]{{1,15}}) tokens, "
    rf"{re.escape(PER_POSITION_KEY)}: ({_NUM}(?:, {_NUM})*), Avg Draft acceptance rate: ({_NUM})%)"
    r"|.*)$",
    re.MULTILINE | re.ASCII,
)


@dataclass
class BlockLines:
    """The fields of a block's lines as arrays (zeros where a line has no such field)."""

    pid: np.ndarray  # -1: no process prefix
    engine: np.ndarray  # the `Engine NNN:` number; -1: not a marker line
    running: np.ndarray  # a stats line's running requests; -1: not a stats line
    waiting: np.ndarray  # … its waiting requests
    prompt: np.ndarray  # … its prompt throughput (tokens/s); nan: not a stats line
    generation: np.ndarray  # … its generation throughput (tokens/s); nan: not a stats line
    spec: np.ndarray  # a plain V1-e line
    stamps: tuple[str, ...]  # each line's `MM-DD HH:MM:SS` ("" where it has none)
    mean: np.ndarray
    throughput: np.ndarray
    accepted: np.ndarray
    drafted: np.ndarray
    percent: np.ndarray
    ks: np.ndarray
    rates: np.ndarray  # (n, max k)

    def part(self, start: int, stop: int) -> BlockLines:
        cut = slice(start, stop)
        return BlockLines(self.pid[cut], self.engine[cut], self.running[cut], self.waiting[cut], self.prompt[cut],
                          self.generation[cut], self.spec[cut], self.stamps[cut], self.mean[cut], self.throughput[cut],
                          self.accepted[cut], self.drafted[cut], self.percent[cut], self.ks[cut], self.rates[cut])


def scan_block(texts: list[str]) -> tuple[BlockLines, np.ndarray] | None:
    """(the lines' fields, which lines are taken here) for `texts` in order; the rest go to the line
    parsers. None if the joined block did not keep its lines apart (cannot happen: no \\n inside)."""
    rows = _LINE.findall("\n".join(texts))
    if len(rows) != len(texts):
        return None
    lines, fast = _columns(rows)
    marker_rows = np.flatnonzero(lines.engine >= 0)
    if len(marker_rows):  # an `Engine NNN:` line with a second record after it: the line parser splits it
        doubled = np.fromiter(map(may_hold_two_records, map(texts.__getitem__, marker_rows.tolist())), bool, len(marker_rows))
        fast[marker_rows[doubled]] = False
    return lines, fast


def _floats(texts: list[str]) -> np.ndarray:
    return np.fromiter(map(float, texts), np.float64, len(texts))  # Python's float(): the line parser's


def _columns(rows: list[tuple[str, ...]]) -> tuple[BlockLines, np.ndarray]:
    """(the lines' fields, which lines the batch can take) from the regex's groups; C-level maps only."""
    n = len(rows)
    (pid_text, stamps, engine_text, iteration_text, prompt_text, generation_text, running_text, waiting_text,
     mean_text, throughput_text, accepted_text, drafted_text, items, percent_text) = zip(*rows, strict=True)
    spec = np.fromiter(map(bool, mean_text), bool, n)
    if spec.any():  # a line with more positions than any drafter (limits.py) is the line parser's to refuse, before any array is that wide
        spec &= np.fromiter((text.count(",") < MAX_POSITIONS for text in items), bool, n)
    iteration = np.fromiter(map(bool, iteration_text), bool, n)
    marker = np.fromiter(map(bool, engine_text), bool, n) & ~iteration
    distinct = set(pid_text)
    if len(distinct) == 1:
        only = distinct.pop()
        pid = np.full(n, int(only) if only else -1, np.int64)
    else:
        pid = np.fromiter((int(value) if value else -1 for value in pid_text), np.int64, n)
    engine = np.full(n, -1, np.int64)
    engine[marker] = np.fromiter((int(number) for number, skip in zip(engine_text, iteration_text, strict=True) if number and not skip), np.int64)
    running, waiting = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
    prompt, generation = np.full(n, np.nan), np.full(n, np.nan)
    stats = np.flatnonzero(np.fromiter(map(bool, running_text), bool, n))
    if len(stats):
        at = stats.tolist()
        running[stats] = np.fromiter((int(running_text[i]) for i in at), np.int64, len(at))
        waiting[stats] = np.fromiter((int(waiting_text[i]) for i in at), np.int64, len(at))
        prompt[stats] = _floats([prompt_text[i] for i in at])
        generation[stats] = _floats([generation_text[i] for i in at])
    lines = BlockLines(pid=pid, engine=engine, running=running, waiting=waiting, prompt=prompt, generation=generation, spec=spec, stamps=stamps,
                       mean=np.zeros(n), throughput=np.zeros(n),
                       accepted=np.zeros(n, np.int64), drafted=np.zeros(n, np.int64), percent=np.zeros(n), ks=np.zeros(n, np.int64),
                       rates=np.zeros((n, 0)))
    fast = marker | spec | iteration
    if not spec.any():
        return lines, fast
    where = np.flatnonzero(spec)
    pick = where.tolist()

    def column(texts: tuple[str, ...]) -> list[str]:
        return list(map(texts.__getitem__, pick))

    lines.mean[where] = _floats(column(mean_text))
    lines.throughput[where] = _floats(column(throughput_text))
    lines.percent[where] = _floats(column(percent_text))
    lines.accepted[where] = np.fromiter(map(int, column(accepted_text)), np.int64, len(pick))
    lines.drafted[where] = np.fromiter(map(int, column(drafted_text)), np.int64, len(pick))
    spec_items = column(items)
    ks = np.fromiter(map(str.count, spec_items, [","] * len(pick)), np.int64, len(pick)) + 1
    lines.ks[where] = ks
    lines.rates = np.full((n, int(ks.max())), np.nan)
    for k in np.unique(ks).tolist():
        group = np.flatnonzero(ks == k)
        texts = ", ".join(map(spec_items.__getitem__, group.tolist())).split(", ")
        lines.rates[where[group], :k] = _floats(texts).reshape(len(group), k)
    padding = np.arange(lines.rates.shape[1])[None, :] >= lines.ks[:, None]
    in_range = (((lines.rates >= 0.0) & (lines.rates <= 1.0)) | padding).all(axis=1)
    fast &= ~spec | (in_range & np.isfinite(lines.mean))  # others: the line parser names the error
    return lines, fast
