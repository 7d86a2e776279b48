"""Log layout and line formats of vLLM versions, rebuilt from their format strings, plus the
integer bookkeeping (truth) the fixture logs are written from. See docs/vllm-versions.md."""

from __future__ import annotations

import json
import logging
import os
import random
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
    # %-style on purpose: this is vLLM's own format string, applied the way logging applies it
    return ("SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: "  # noqa: UP031
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


CONFIG_TAIL = Path(__file__).parent.parent / "vllm_config_tail.txt"


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



def curve(rng: random.Random, k: int, drafts: int, p0: float, cond: float) -> list[int]:
    """Accepted-per-position counts: a prefix-acceptance curve, non-increasing by rule."""
    out, prev = [], drafts
    for j in range(k):
        p = (p0 if j == 0 else cond) * rng.uniform(0.9, 1.05)
        prev = min(prev, round(prev * min(p, 1.0)))
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


class Repr(str):
    """A value that prints as its own text inside a dict repr (a config object's repr)."""

    def __repr__(self) -> str:
        return str(self)
