"""TLS and basic auth on the real sidecar: wrong password, no client cert, expired cert, plain HTTP, reload."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import subprocess
import sys
from pathlib import Path

import bcrypt
import httpx
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from helpers import free_port
from waiting import wait_until

from exporter.config import ConfigError
from exporter.expose.websecurity import load_web_config

pytestmark = pytest.mark.slow  # a running sidecar with TLS and basic auth

NOW = datetime.datetime.now(datetime.UTC)


def _cert(subject: str, issuer_key, issuer_name, *, ca: bool = False, ip: str | None = None,  # type: ignore[no-untyped-def]
          not_before: datetime.datetime = NOW - datetime.timedelta(days=1), days: int = 30):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (
        x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name or name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(not_before).not_valid_after(not_before + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ip:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
    return key, builder.sign(issuer_key or key, hashes.SHA256())


def _write(directory: Path, stem: str, key, cert) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    (directory / f"{stem}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    (directory / f"{stem}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(directory / f"{stem}.crt"), str(directory / f"{stem}.key")


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, tuple[str, str]]:  # type: ignore[type-arg]
    directory = tmp_path_factory.mktemp("pki")
    ca_key, ca = _cert("test CA", None, None, ca=True)
    files = {"ca": _write(directory, "ca", ca_key, ca)}
    files["server"] = _write(directory, "server", *_cert("sidecar", ca_key, ca.subject, ip="127.0.0.1"))
    files["client"] = _write(directory, "client", *_cert("prometheus", ca_key, ca.subject))
    files["expired"] = _write(directory, "expired", *_cert("old", ca_key, ca.subject, not_before=NOW - datetime.timedelta(days=60), days=1))
    return files


def tls(pki, client: str | None = None) -> ssl.SSLContext:  # type: ignore[no-untyped-def]
    """A client context trusting the test CA, presenting `client`'s certificate if given."""
    context = ssl.create_default_context(cafile=pki["ca"][0])
    if client:
        context.load_cert_chain(*pki[client])
    return context


def web_config(path: Path, pki, password: bytes) -> None:  # type: ignore[no-untyped-def]
    path.write_text(yaml.safe_dump({
        "tls_server_config": {"cert_file": pki["server"][0], "key_file": pki["server"][1], "client_ca_file": pki["ca"][0],
                              "client_auth_type": "RequireAndVerifyClientCert", "min_version": "TLS12"},
        "basic_auth_users": {"prometheus": bcrypt.hashpw(password, bcrypt.gensalt(rounds=4)).decode()},
    }))


@pytest.fixture
def secured(tmp_path, pki):  # type: ignore[no-untyped-def]
    config = tmp_path / "web.yml"
    web_config(config, pki, b"s3cret")
    log = tmp_path / "vllm.log"
    log.write_text("")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "exporter", "serve", "--log", str(log), "--listen", f"127.0.0.1:{port}", "--web-config-file", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"https://127.0.0.1:{port}"
    client = httpx.Client(verify=tls(pki, "client"), timeout=5)
    try:

        def healthy() -> bool:
            assert process.poll() is None, process.stdout.read().decode() if process.stdout else ""
            try:
                return client.get(url + "/-/healthy").status_code == 200
            except httpx.TransportError:
                return False

        wait_until(healthy, "the sidecar with TLS to come up")
        yield url, client, config
    finally:
        client.close()
        process.terminate()
        process.wait(timeout=15)
        if process.stdout:
            process.stdout.close()


def test_every_endpoint_needs_the_password(secured):
    url, client, _ = secured
    for path in ("/metrics", "/api/v1/status", "/", "/static/app.js"):
        assert client.get(url + path).status_code == 401
        denied = client.get(url + path, auth=("prometheus", "wrong"))
        assert denied.status_code == 401 and denied.headers["www-authenticate"].startswith("Basic")
        assert client.get(url + path, auth=("prometheus", "s3cret")).status_code == 200


def test_no_client_cert_an_expired_one_and_plain_http_are_refused(secured, pki):
    url, _, _ = secured
    with httpx.Client(verify=tls(pki), timeout=5) as anonymous, pytest.raises((httpx.TransportError, ssl.SSLError)):
        anonymous.get(url + "/metrics", auth=("prometheus", "s3cret")).raise_for_status()
    with httpx.Client(verify=tls(pki, "expired"), timeout=5) as expired, pytest.raises((httpx.TransportError, ssl.SSLError)):
        expired.get(url + "/metrics", auth=("prometheus", "s3cret")).raise_for_status()
    with pytest.raises(httpx.TransportError):
        httpx.get(url.replace("https", "http") + "/metrics", timeout=5)


def test_a_changed_web_config_applies_without_a_restart(secured, pki):
    url, client, config = secured
    web_config(config, pki, b"rotated")
    later = os.stat(config).st_mtime + 2  # a change the sidecar's mtime check sees, whatever the clock's granularity
    os.utime(config, (later, later))
    wait_until(
        lambda: client.get(url + "/metrics", auth=("prometheus", "rotated")).status_code == 200,
        "the new password to be accepted", timeout=20, every=0.2,
    )
    assert client.get(url + "/metrics", auth=("prometheus", "s3cret")).status_code == 401


@pytest.mark.parametrize(
    "content, message",
    [
        ({"basic_auth_users": {"u": "plaintext"}}, "bcrypt hash"),
        ({"tls_server_config": {"cert_file": "x"}}, "cert_file and key_file are required"),
        ({"tls_server_config": {"cert_file": "x", "key_file": "y", "client_auth_type": "Maybe"}}, "client_auth_type"),
        ({"tls_server_config": {"cert_file": "x", "key_file": "y", "client_auth_type": "RequireAndVerifyClientCert"}}, "client_ca_file is required"),
        ({"tls_server_config": {"cert_file": "x", "key_file": "y", "min_version": "SSL3"}}, "min_version"),
        ({"surprise": 1}, "unknown key"),
    ],
)
def test_bad_web_configs_are_clear_errors(tmp_path, content, message):
    path = tmp_path / "web.yml"
    path.write_text(yaml.safe_dump(content))
    with pytest.raises(ConfigError, match=message):
        load_web_config(str(path))


def test_no_endpoint_takes_a_target_from_the_caller():
    """The sidecar requests only what its flags and targets file name: no route accepts a URL to fetch."""
    from exporter.config import DeriveSettings
    from exporter.expose.app import create_app
    from exporter.state.store import Store

    app = create_app(Store(), DeriveSettings())
    paths = {route.path for route in app.routes if hasattr(route, "methods")}
    assert paths == {"/metrics", "/api/v1/status", "/-/healthy", "/", "/static/{name}", "/api/v1/acknowledge"}
    # the one POST names a series by its labels, never a URL
    assert all(route.methods <= ({"POST"} if route.path == "/api/v1/acknowledge" else {"GET", "HEAD"}) for route in app.routes if hasattr(route, "methods"))


# --- issue 26: auth that cannot be timed or stalled; TLS reloads whole or not at all ------------


def _serve(config: Path, tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    log = tmp_path / "vllm.log"
    log.touch()
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "exporter", "serve", "--log", str(log), "--listen", f"127.0.0.1:{port}", "--web-config-file", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    return process, port


def _stop(process: subprocess.Popen[bytes]) -> str:
    process.terminate()
    output, _ = process.communicate(timeout=15)
    return output.decode()


def test_password_checks_neither_stall_the_server_nor_tell_which_users_exist(tmp_path):
    import concurrent.futures
    import time

    config = tmp_path / "web.yml"
    config.write_text(yaml.safe_dump({"basic_auth_users": {"prometheus": bcrypt.hashpw(b"good", bcrypt.gensalt(rounds=12)).decode()}}))
    process, port = _serve(config, tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(url + "/-/healthy", process), "the sidecar up")
        finished: dict[str, float] = {}

        def get(path: str, auth: tuple[str, str] | None, name: str, client: str = "127.0.0.1") -> int:
            # each guesser from an address of its own: one address has one check at a time (expose/logins.py)
            with httpx.Client(transport=httpx.HTTPTransport(local_address=client), timeout=60) as http:
                status = http.get(url + path, auth=auth).status_code
            finished[name] = time.monotonic()
            return status

        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            wrong = [pool.submit(get, "/metrics", ("prometheus", f"wrong {i}"), f"wrong {i}", f"127.0.0.{i + 2}") for i in range(8)]
            wait_until(lambda: process.poll() is None, "requests sent", timeout=1)
            healthy = pool.submit(get, "/-/healthy", None, "healthy")
            assert healthy.result() == 200 and all(future.result() == 401 for future in wrong)
        # was: /-/healthy waited 1.9 s behind the eight checks on the event loop
        assert finished["healthy"] < min(finished[f"wrong {i}"] for i in range(8))

        def timed(user: str, client: str) -> float:
            started = time.monotonic()
            assert get("/metrics", (user, "guess"), user, client) == 401
            return time.monotonic() - started

        known = min(timed("prometheus", f"127.0.1.{i}") for i in range(3))
        unknown = min(timed("nobody", f"127.0.2.{i}") for i in range(3))
        assert unknown > 0.5 * known  # was 2 ms against 247 ms: the user name leaked
    finally:
        _stop(process)


def _answers(url: str, process: subprocess.Popen[bytes]) -> bool:
    assert process.poll() is None
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def test_a_reload_with_a_broken_client_ca_keeps_the_live_tls_as_it_was(tmp_path, pki):
    import signal

    config = tmp_path / "web.yml"
    tls_section = {"cert_file": pki["server"][0], "key_file": pki["server"][1]}
    config.write_text(yaml.safe_dump({"tls_server_config": tls_section}))
    process, port = _serve(config, tmp_path)
    url = f"https://127.0.0.1:{port}/-/healthy"
    client = httpx.Client(verify=tls(pki), timeout=5)  # no client certificate
    try:
        wait_until(lambda: _answers_with(client, url, process), "the sidecar up over TLS")
        (tmp_path / "broken-ca.crt").write_text("not a certificate\n")
        config.write_text(yaml.safe_dump({"tls_server_config": {**tls_section, "client_ca_file": str(tmp_path / "broken-ca.crt"),
                                                                 "client_auth_type": "RequireAndVerifyClientCert"}}))
        process.send_signal(signal.SIGHUP)  # reload now
        client.close()
        client = httpx.Client(verify=tls(pki), timeout=5)  # a new connection, after the refused reload
        assert client.get(url).status_code == 200  # was: every new TLS connection failed (client certs already required)
    finally:
        client.close()
        output = _stop(process)
    assert "cannot load client_ca_file" in output and "broken-ca.crt" in output


def _answers_with(client: httpx.Client, url: str, process: subprocess.Popen[bytes]) -> bool:
    assert process.poll() is None
    try:
        return client.get(url).status_code == 200
    except httpx.TransportError:
        return False


@pytest.mark.parametrize("broken", ["missing", "garbage", "mismatched"])
def test_bad_tls_files_at_start_are_one_clear_line_naming_the_file(tmp_path, pki, broken):
    cert = tmp_path / "server.crt"
    if broken == "garbage":
        cert.write_text("garbage\n")
    elif broken == "mismatched":
        cert.write_bytes(Path(pki["client"][0]).read_bytes())  # another key's certificate
    config = tmp_path / "web.yml"
    config.write_text(yaml.safe_dump({"tls_server_config": {"cert_file": str(cert), "key_file": pki["server"][1]}}))
    log = tmp_path / "vllm.log"
    log.touch()
    done = subprocess.run([sys.executable, "-m", "exporter", "serve", "--log", str(log), "--listen", f"127.0.0.1:{free_port()}",
                           "--web-config-file", str(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr  # was a 51-line traceback after "serving … https"
    assert f"cannot load cert_file '{cert}'" in done.stderr
