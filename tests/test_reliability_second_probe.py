"""Acceptance of the second black-box probe (issue 33): nothing a prompt, a proxy or a hostile input
can forge, stall or exhaust. Each test reproduces one finding against the real sidecar process on
loopback — real files, real signals, real servers — and fails on b51dba2. Findings that need no
process are held by pure tests named in the README's "Security and limits" section.

Run them with `pytest -m reliability` (with tests/test_reliability.py, the first probe's).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from helpers import running_exporter, running_process, value
from test_reliability import Tally, assert_exact, counted_at, saved_once_more, serve, settle
from waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.reliability]


# --- kill -9 at a rotation ----------------------------------------------------------------------


def test_a_kill_in_a_rotations_gap_loses_nothing(tmp_path):
    """Killed, restarted and killed again while the log is renamed and its new file not yet made:
    the restarted sidecar's save kept where the renamed file was read to (tests/test_kill_at_rotation.py
    kills at every step of a rotation, in-process)."""
    logs, state, tally = tmp_path / "logs", tmp_path / "state", Tally()
    logs.mkdir()
    log = logs / "vllm.log"
    tally.append(log, 300)
    args = ("--log", str(logs / "*.log"), "--from-start", "--state-dir", str(state))
    command, ready = serve(*args)
    with running_process(command, ready, "sidecar") as process:
        wait_until(lambda: counted_at(ready) >= 300, "300 lines counted")
        saved_once_more(state)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    tally.append(log, 200)  # never read by the first sidecar
    os.replace(log, logs / "vllm.log.1")  # the rotation's first step; the writer makes the new file later
    command, ready = serve(*args)
    with running_process(command, ready, "sidecar") as process:
        wait_until(lambda: counted_at(ready) >= 500, "the renamed file finished")
        saved_once_more(state)  # a save made in the gap
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    tally.append(log, 100)  # the new file
    with running_exporter(*args) as exporter:
        assert_exact(settle(exporter, [log], tally), tally)  # was: the 200 lines of the renamed file lost


# --- metrics forged from a prompt ---------------------------------------------------------------


def test_a_prompt_holding_a_spec_line_and_a_startup_line_changes_no_count_and_no_name(tmp_path):
    """With request logging on, a user's prompt (and the model's output) quoting a spec line and an
    engine-config line: read only where vLLM's logger writes them (tests/test_anchoring.py: both paths)."""
    from test_anchoring import FORGED_SPEC, FORGED_START, STARTUP, _requests
    from workload import SPEC_LINES

    log = tmp_path / "vllm.log"
    log.write_text("\n".join([STARTUP, *SPEC_LINES[:4]]) + "\n")
    with running_exporter("--log", str(log), "--from-start") as exporter:
        honest = exporter.wait_for(lambda s: value(s, "specdecode_log_spec_lines_total") == 4, "the honest lines")
        with open(log, "a", encoding="utf-8") as handle:
            handle.write("\n".join([*_requests(FORGED_SPEC + ", note: "), *_requests(FORGED_START), SPEC_LINES[4]]) + "\n")
        samples = exporter.wait_for(lambda s: value(s, "specdecode_log_lines_total") == 12, "the prompts read")
    forged = value(samples, "specdecode_drafts_total") - value(honest, "specdecode_drafts_total")
    assert 0 < forged < 2_000  # one honest line's drafts; was 100,000 more, and a series named "evil"
    assert {dict(labels)["model_name"] for (name, labels) in samples if name == "specdecode_drafts_total"} == {"target"}


# --- memory under a burst -----------------------------------------------------------------------


def test_a_burst_of_spec_lines_written_at_once_keeps_memory_bounded(tmp_path):
    """120,000 spec lines (48 MB) land in the log at once: the windows hold them folded (state/fold.py).
    A million peaked at 98 MiB here (316 MB and the OOM killer under a 256 Mi limit on b51dba2)."""
    from test_reliability import rss_peak_mib
    from workload import SPEC_LINES

    log = tmp_path / "vllm.log"
    log.touch()
    count = 120_000
    with running_exporter("--log", str(log)) as exporter:
        before = rss_peak_mib(exporter.process.pid)
        with open(log, "a", encoding="utf-8") as handle:
            handle.write("\n".join(SPEC_LINES[index % len(SPEC_LINES)] for index in range(count)) + "\n")
        exporter.wait_for(lambda s: value(s, "specdecode_log_spec_lines_total") == count, "every line counted", deadline=90)
        grown = rss_peak_mib(exporter.process.pid) - before
    assert grown < 60  # was 105 MiB for these lines, growing with every one


# --- the state-dir lock -------------------------------------------------------------------------


@pytest.mark.parametrize("lock", ["a symlink", "a directory", "a FIFO"])
def test_a_lock_that_cannot_be_held_stops_the_sidecar_and_is_never_followed(tmp_path, lock):
    import subprocess

    log, state, target = tmp_path / "vllm.log", tmp_path / "state", tmp_path / "precious.txt"
    Tally().append(log, 5)
    state.mkdir()
    target.write_text("keep me\n")
    if lock == "a symlink":
        (state / "lock").symlink_to(target)  # was: the sidecar wrote its pid into precious.txt
    elif lock == "a directory":
        (state / "lock").mkdir()  # was: a warning, and the sidecar ran unlocked
    else:
        os.mkfifo(state / "lock")
    command, _ = serve("--log", str(log), "--state-dir", str(state))
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and f"{state / 'lock'}" in refused.stderr
    assert target.read_text() == "keep me\n"


# --- special files --------------------------------------------------------------------------------


def test_a_fifo_matched_by_a_glob_and_a_device_given_as_a_log_are_refused_and_stop_nothing(tmp_path):
    """open() of a FIFO waits for a writer: the follower's one thread, and every log with it, stopped
    there; /dev/zero was a core at 100% and /dev/urandom 4.6 million garbage lines (sources/regular.py)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    os.mkfifo(logs / "a-pipe.log")  # sorted first: followed before the real log
    log, tally = logs / "vllm.log", Tally()
    tally.append(log, 50)
    with running_exporter("--log", str(logs / "*.log"), "--log", "/dev/zero", "--from-start") as exporter:
        samples = exporter.wait_for(lambda s: value(s, "specdecode_log_lines_total", upstream=str(log)) == 50, "the real log read")
        tally.append(log, 25)
        samples = exporter.wait_for(lambda s: value(s, "specdecode_log_lines_total", upstream=str(log)) == 75, "and followed on")
    assert value(samples, "specdecode_source_up", upstream=str(logs / "a-pipe.log")) == 0
    assert value(samples, "specdecode_source_up", upstream="/dev/zero") == 0
    assert (value(samples, "specdecode_log_lines_total", upstream="/dev/zero") or 0) == 0


# --- passwords, reloads and TLS -------------------------------------------------------------------


def _web_sidecar(tmp_path: Path, web: dict, *prelude: str):  # type: ignore[no-untyped-def, type-arg]
    """The sidecar with `web` as its web config; `prelude`: Python run first (a shorter deadline for a test)."""
    import sys

    import yaml
    from helpers import free_port

    config = tmp_path / "web.yml"
    config.write_text(yaml.safe_dump(web))
    log = tmp_path / "vllm.log"
    log.touch()
    port = free_port()
    run = "; ".join([*prelude, "import sys", "from exporter.cli import main", "sys.argv[0] = 'specdecode-exporter'", "main()"])
    command = [sys.executable, "-c", run, "serve", "--log", str(log), "--listen", f"127.0.0.1:{port}", "--web-config-file", str(config)]
    return command, port, config


def _hashed(password: bytes, rounds: int) -> str:
    import bcrypt

    return bcrypt.hashpw(password, bcrypt.gensalt(rounds=rounds)).decode()


def _client(address: str, **options: object):  # type: ignore[no-untyped-def]
    import httpx

    return httpx.Client(transport=httpx.HTTPTransport(local_address=address, **options), timeout=120)  # type: ignore[arg-type]


def test_password_guessing_from_one_client_does_not_starve_another_clients_first_login(tmp_path):
    import asyncio
    import threading
    import time

    import httpx

    web = {"basic_auth_users": {"prometheus": _hashed(b"scrape", 11), "ops": _hashed(b"acknowledge", 11)}}
    command, port, _ = _web_sidecar(tmp_path, web)
    url = f"http://127.0.0.1:{port}/metrics"
    with running_process(command, f"http://127.0.0.1:{port}/-/healthy", "sidecar"):
        with _client("127.0.0.5") as first:
            started = time.monotonic()
            assert first.get(url, auth=("prometheus", "scrape")).status_code == 200
            one_check = time.monotonic() - started
        answers: list[int] = []
        sent = threading.Event()

        async def attack() -> None:  # 300 wrong passwords at once from one address, as the probe's 400 at 200/s
            limits = httpx.Limits(max_connections=300)
            transport = httpx.AsyncHTTPTransport(local_address="127.0.0.2", limits=limits)
            async with httpx.AsyncClient(transport=transport, timeout=300) as attacker:
                requests = [asyncio.ensure_future(attacker.get(url, auth=("prometheus", f"guess {index}"))) for index in range(300)]
                await asyncio.sleep(1.0)  # every guess has arrived (on b51dba2: queued for bcrypt)
                sent.set()
                answers.extend(response.status_code for response in await asyncio.gather(*requests))

        attacking = threading.Thread(target=asyncio.run, args=(attack(),))
        attacking.start()
        sent.wait(30)
        with _client("127.0.0.3") as user:  # a first login while the guesses are there
            started = time.monotonic()
            assert user.get(url, auth=("ops", "acknowledge")).status_code == 200
            waited = time.monotonic() - started
        attacking.join(300)
    assert waited < 10 * one_check + 2.0  # was every queued guess first: 249 s in the probe
    assert answers.count(429) > 250 and set(answers) <= {401, 429}  # refused without a bcrypt check


def test_fifty_sighups_with_basic_auth_leave_the_sidecar_answering(tmp_path):
    import threading
    import time

    import httpx

    command, port, _ = _web_sidecar(tmp_path, {"basic_auth_users": {"prometheus": _hashed(b"scrape", 12)}})
    slowest = [0.0]
    done = threading.Event()
    with running_process(command, f"http://127.0.0.1:{port}/-/healthy", "sidecar") as process:

        def probe() -> None:
            while not done.is_set():
                started = time.monotonic()
                httpx.get(f"http://127.0.0.1:{port}/-/healthy", timeout=60)
                slowest[0] = max(slowest[0], time.monotonic() - started)

        prober = threading.Thread(target=probe)
        prober.start()
        for _ in range(50):
            process.send_signal(signal.SIGHUP)
            time.sleep(0.01)  # the operator's pace, not a synchronisation
        time.sleep(3)  # where the stall was: 15 s of it
        done.set()
        prober.join()
        assert process.poll() is None
    assert slowest[0] < 1.0  # was 15 s: 50 reloads, each a bcrypt dummy hash, all at once


def test_a_reload_that_replaces_the_client_ca_stops_trusting_the_old_one(tmp_path):
    import ssl

    import httpx
    import yaml
    from test_web_security import _cert, _write  # the PKI helpers of the first TLS tests

    files = {}
    for ca in ("a", "b"):
        key, cert = _cert(f"CA {ca}", None, None, ca=True)
        files[f"ca-{ca}"] = _write(tmp_path, f"ca-{ca}", key, cert)
        files[f"client-{ca}"] = _write(tmp_path, f"client-{ca}", *_cert(f"client {ca}", key, cert.subject))
        if ca == "a":
            files["server"] = _write(tmp_path, "server", *_cert("sidecar", key, cert.subject, ip="127.0.0.1"))

    def web(ca: str) -> dict:  # type: ignore[type-arg]
        return {"tls_server_config": {"cert_file": files["server"][0], "key_file": files["server"][1], "client_ca_file": files[f"ca-{ca}"][0],
                                      "client_auth_type": "RequireAndVerifyClientCert"}}

    def answered(port: int, client: str) -> bool:
        context = ssl.create_default_context(cafile=files["ca-a"][0])
        context.load_cert_chain(*files[f"client-{client}"])
        try:
            return httpx.get(f"https://127.0.0.1:{port}/-/healthy", verify=context, timeout=10).status_code == 200
        except httpx.TransportError:
            return False

    resuming = ssl.create_default_context(cafile=files["ca-a"][0])  # one client context: its sessions can be resumed
    resuming.load_cert_chain(*files["client-a"])

    def raw_get(port: int, session: ssl.SSLSession | None = None) -> tuple[bytes, ssl.SSLSession | None]:
        """A GET with client a's certificate, resuming `session` if given: (what came back, the session)."""
        import socket

        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                    resuming.wrap_socket(raw, server_hostname="127.0.0.1", session=session) as tls:
                tls.sendall(b"GET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                return tls.recv(64), tls.session
        except (OSError, ssl.SSLError):
            return b"", None

    command, port, config = _web_sidecar(tmp_path, web("a"))
    with _tls_process(command, lambda: answered(port, "a")) as process:
        assert not answered(port, "b")
        answer, session = raw_get(port)
        assert answer.startswith(b"HTTP/1.1 200") and session is not None
        config.write_text(yaml.safe_dump(web("b")))
        process.send_signal(signal.SIGHUP)
        wait_until(lambda: answered(port, "b"), "CA b trusted")
        assert not answered(port, "a")  # was: still trusted, even after SIGHUP ("reloaded")
        assert not raw_get(port, session)[0].startswith(b"HTTP/1.1 200")  # nor a TLS session made under it, resumed


def _tls_process(command: list[str], up):  # type: ignore[no-untyped-def]
    import contextlib
    import subprocess

    @contextlib.contextmanager
    def running():  # type: ignore[no-untyped-def]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: process.poll() is None and up(), "the sidecar with TLS up")
            yield process
        finally:
            process.terminate()
            process.wait(timeout=15)

    return running()


def test_a_tls_handshake_has_the_deadline_of_a_request_head(tmp_path):
    import socket
    import ssl
    import time

    from test_web_security import _cert, _write

    key, cert = _cert("CA", None, None, ca=True)
    ca = _write(tmp_path, "ca", key, cert)
    server = _write(tmp_path, "server", *_cert("sidecar", key, cert.subject, ip="127.0.0.1"))
    web = {"tls_server_config": {"cert_file": server[0], "key_file": server[1]}}
    shorter = "from exporter.expose.connection import BoundedH11Protocol; BoundedH11Protocol.header_seconds = 1.0"  # 10 s in production

    def up() -> bool:
        import httpx

        try:
            return httpx.get(f"https://127.0.0.1:{port}/-/healthy", verify=ssl.create_default_context(cafile=ca[0]), timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    command, port, _ = _web_sidecar(tmp_path, web, shorter)
    with _tls_process(command, up), socket.create_connection(("127.0.0.1", port), timeout=20) as silent:  # connects, and never says a word
        started = time.monotonic()
        try:
            assert silent.recv(1024) == b""
        except ConnectionResetError:
            pass
        assert time.monotonic() - started < 5  # was 60 s: 256 such clients held every fd for a minute
