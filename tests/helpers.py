"""Run the real sidecar as a subprocess on loopback, scrape it, and wait on its own counters."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families
from waiting import DEADLINE_SECONDS, wait_until

from exporter.expose.metrics import MetricsRenderer


def script_module(relative: str) -> Any:
    """A script of the repository (not a package: scripts/…/name.py) imported as a module, for its pure parts."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse_samples(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """The one sample named `name` whose labels include `labels`, summed if several match."""
    found = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= ls]
    return sum(found) if found else None


@dataclass
class Exporter:
    process: subprocess.Popen[bytes]
    base_url: str

    def scrape(self) -> Samples:
        return parse_samples(self.metrics_text())

    def metrics_text(self) -> str:
        response = httpx.get(self.base_url + "/metrics", timeout=5)
        response.raise_for_status()
        return response.text

    def get_json(self, path: str) -> dict:  # type: ignore[type-arg]
        response = httpx.get(self.base_url + path, timeout=5)
        response.raise_for_status()
        return response.json()  # type: ignore[no-any-return]

    def wait_for(self, predicate: Callable[[Samples], bool], what: str, deadline: float = DEADLINE_SECONDS) -> Samples:
        """Scrape until `predicate(samples)` holds; fail with `what` and the last scrape after the deadline."""
        last: Samples = {}

        def scraped() -> Samples | None:
            nonlocal last
            if self.process.poll() is not None:
                raise AssertionError(f"exporter exited with {self.process.returncode} while waiting for {what}")
            last = self.scrape()
            return last if predicate(last) else None

        def relevant() -> str:
            return "last scrape:\n" + "\n".join(
                sorted(f"{k[0]}{dict(sorted(k[1]))}={v}" for k, v in last.items() if "_total" in k[0] or "_up" in k[0])
            )

        return wait_until(scraped, what, timeout=deadline, detail=relevant)


def wait_http(url: str, process: subprocess.Popen[bytes], what: str, deadline: float = DEADLINE_SECONDS, log: Path | None = None) -> None:
    """Poll `url` until it answers 200; fail early with the process's output (or its `log` file) if it exits."""

    def answers() -> bool:
        if process.poll() is not None:
            output = process.stdout.read().decode() if process.stdout else log.read_text() if log else ""
            raise AssertionError(f"{what} exited with {process.returncode}: {output}")
        try:
            return httpx.get(url, timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(answers, f"{what} to answer at {url}", timeout=deadline)


@contextmanager
def running_process(
    command: list[str], ready_url: str, what: str, stdin: int | None = None, log: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start `command`, wait until `ready_url` answers, and always stop it afterwards; its output
    goes to a pipe, or to the file `log` where the test reads it afterwards."""
    output = open(log, "wb") if log else None  # noqa: SIM115  (the child keeps its own descriptor)
    try:
        process = subprocess.Popen(command, stdin=stdin, stdout=output or subprocess.PIPE, stderr=subprocess.STDOUT)
    finally:
        if output:
            output.close()
    try:
        wait_http(ready_url, process, what, log=log)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout:
            process.stdout.close()


def cli(*args: str) -> list[str]:
    """The command line of `specdecode-exporter ARGS` in this interpreter."""
    return [sys.executable, "-m", "exporter", *args]


@contextmanager
def running_exporter(*args: str, stdin: int | None = None, log: Path | None = None) -> Iterator[Exporter]:
    """`specdecode-exporter serve ARGS` on a free loopback port, ready when /-/healthy answers."""
    port = free_port()
    command = cli("serve", "--listen", f"127.0.0.1:{port}", *args)
    with running_process(command, f"http://127.0.0.1:{port}/-/healthy", "exporter", stdin=stdin, log=log) as process:
        yield Exporter(process, f"http://127.0.0.1:{port}")


class Rendered:
    """get_sample_value() over a fresh render, read back with prometheus_client's parser."""

    def __init__(self, renderer: MetricsRenderer) -> None:
        self.renderer = renderer

    def get_sample_value(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        for family in text_string_to_metric_families(self.renderer.render()):
            for sample in family.samples:
                if sample.name == name and sample.labels == (labels or {}):
                    return sample.value
        return None


def without_read_times(report: dict[str, Any]) -> dict[str, Any]:
    """An analyze report without when each file was read (the wall clock), only what it said."""
    for source in report.get("sources", []):
        source.pop("last_success", None)
        source.pop("last_spec_line", None)
    return report


class Calls:
    """How many times a function was called since `count` replaced it (the cost of a path in calls, not seconds)."""

    def __init__(self) -> None:
        self.count = 0


def counting(monkeypatch: Any, owner: object, name: str) -> Calls:
    """Replace `owner.name` (a module's function or a class's method) by itself, counted."""
    calls, real = Calls(), getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.count += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls
