"""`supervise -- serve …`: keep the sidecar's container running whatever the sidecar does.

A pod is Ready when every container is (kubelet's ContainersReady counts native sidecars too), so a
sidecar container that exits — a bad flag, a crash, an OOM of the child — or that a liveness
probe restarts takes vLLM out of its Service until it runs again (CrashLoopBackOff: minutes). Under
this supervisor the container itself never exits on its own: the sidecar runs as its child, is
restarted with a growing back-off when it exits, and is killed and restarted when its health
endpoint stops answering (a hung process). vLLM keeps serving throughout; `up == 0` of the
sidecar's scrape (SpecDecodeSidecarDown) is what tells the operator. SIGTERM and SIGINT are passed
to the child, which is given `--stop-timeout` to exit before it is killed.
"""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from types import FrameType

import click

from exporter.cli.options import option

log = logging.getLogger("specdecode.supervise")

HEALTHY_RUN = 60.0  # a child that ran this long resets the back-off


@dataclass(frozen=True)
class Policy:
    health_url: str | None
    health_every: float
    health_failures: int
    start_grace: float
    backoff_max: float
    stop_timeout: float


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return bool(200 <= answer.status < 300)
    except (urllib.error.URLError, OSError, ValueError):
        return False


class Supervisor:
    """One child at a time; `stop` (a signal) ends the loop after the child has exited."""

    def __init__(self, command: list[str], policy: Policy) -> None:
        self.command = command
        self.policy = policy
        self.stopping = threading.Event()
        self.child: subprocess.Popen[bytes] | None = None

    def stop(self, signum: int, _frame: FrameType | None = None) -> None:
        log.info("signal %d: stopping the sidecar", signum)
        self.stopping.set()
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signum)

    def run(self) -> int:
        backoff = 1.0
        while not self.stopping.is_set():
            started = time.monotonic()
            self.child = subprocess.Popen(self.command)
            log.info("started pid %d: %s", self.child.pid, " ".join(self.command))
            reason = self._watch(self.child)
            if self.stopping.is_set():
                break
            backoff = 1.0 if time.monotonic() - started >= HEALTHY_RUN else min(backoff * 2, self.policy.backoff_max)
            log.warning("sidecar %s; restarting in %.0f s (the container keeps running: vLLM's readiness is untouched)", reason, backoff)
            self.stopping.wait(backoff)
        return self._reap()

    def _watch(self, child: subprocess.Popen[bytes]) -> str:
        """Until the child exits or stops answering: why it has to be started again."""
        failures = 0
        next_check = time.monotonic() + self.policy.start_grace
        while not self.stopping.is_set():
            code = child.poll()
            if code is not None:
                return f"pid {child.pid} exited with {code}"
            if self.policy.health_url and time.monotonic() >= next_check:
                next_check = time.monotonic() + self.policy.health_every
                failures = 0 if _healthy(self.policy.health_url) else failures + 1
                if failures >= self.policy.health_failures:
                    self._end(child)
                    return f"pid {child.pid} did not answer {self.policy.health_url} {failures} times and was killed"
            self.stopping.wait(0.2)
        return "stopping"

    def _end(self, child: subprocess.Popen[bytes]) -> None:
        if child.poll() is None:
            child.terminate()
        try:
            child.wait(self.policy.stop_timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()

    def _reap(self) -> int:
        if self.child is not None:
            self._end(self.child)
        return 0


@click.command(context_settings={"ignore_unknown_options": True})
@option("--health-url", envvar="SPECDECODE_SUPERVISE_HEALTH_URL",
        help="Poll this URL (the sidecar's /-/healthy); a child that stops answering is killed and restarted.")
@option("--health-every", envvar="SPECDECODE_SUPERVISE_HEALTH_EVERY", type=click.FloatRange(min=0.1), default=10.0, show_default=True,
        help="Seconds between health checks.")
@option("--health-failures", envvar="SPECDECODE_SUPERVISE_HEALTH_FAILURES", type=click.IntRange(min=1), default=3, show_default=True,
        help="Failed checks in a row before a restart.")
@option("--start-grace", envvar="SPECDECODE_SUPERVISE_START_GRACE", type=click.FloatRange(min=0), default=30.0, show_default=True,
        help="Seconds after a start before the first check.")
@option("--backoff-max", envvar="SPECDECODE_SUPERVISE_BACKOFF_MAX", type=click.FloatRange(min=0.1), default=60.0,
        show_default=True, help="Longest wait before starting a child that keeps exiting (from 1 s, doubling).")
@option("--stop-timeout", envvar="SPECDECODE_SUPERVISE_STOP_TIMEOUT", type=click.FloatRange(min=0.1), default=20.0, show_default=True,
        help="Seconds a child is given to exit on SIGTERM before it is killed.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def supervise(health_url: str | None, health_every: float, health_failures: int, start_grace: float, backoff_max: float,
              stop_timeout: float, command: tuple[str, ...]) -> None:
    """Run `specdecode-exporter COMMAND…` (e.g. `-- serve --log …`) and keep it running: never exit on its failures.

    For a sidecar container: the pod's readiness depends on every container running, so the
    container must not exit or be restarted because the sidecar did (see the module's docstring).
    """
    policy = Policy(health_url, health_every, health_failures, start_grace, backoff_max, stop_timeout)
    supervisor = Supervisor([sys.executable, "-m", "exporter", *command], policy)
    signal.signal(signal.SIGTERM, supervisor.stop)
    signal.signal(signal.SIGINT, supervisor.stop)
    sys.exit(supervisor.run())
