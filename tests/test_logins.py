"""Password checks bounded per client, and reloads that cost nothing when nothing changed (issue 33:
400 wrong passwords kept the sidecar busy for 255 s and a legitimate first login waited 249 s; a
web-config reload forgot every remembered password; 50 SIGHUPs stalled /-/healthy for 15 s)."""

from __future__ import annotations

import base64

import bcrypt
import yaml
from helpers import counting

from exporter.expose import websecurity
from exporter.expose.logins import CLIENTS, FAILURE_BURST, MAX_WAITING, LoginGate
from exporter.expose.websecurity import WebSecurity


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_client_has_one_check_at_a_time_and_its_wrong_passwords_are_rationed():
    clock = Clock()
    gate = LoginGate(clock)
    assert gate.admit("attacker") is None
    assert gate.admit("attacker") == (429, "a password check of this client is under way")
    assert gate.admit("user") is None  # another client is not held up by it
    gate.done("user", True)
    gate.done("attacker", False)
    for _ in range(FAILURE_BURST - 1):  # a burst of wrong passwords, one at a time
        assert gate.admit("attacker") is None
        gate.done("attacker", False)
    assert gate.admit("attacker") == (429, "too many wrong passwords from this client")  # no bcrypt spent on it
    clock.now += 1.0  # then one a second
    assert gate.admit("attacker") is None
    gate.done("attacker", False)
    assert gate.admit("attacker") == (429, "too many wrong passwords from this client")
    assert gate.admit("user") is None  # successes cost nothing


def test_checks_in_all_are_bounded_and_clients_are_forgotten_oldest_first():
    gate = LoginGate(Clock())
    for index in range(MAX_WAITING):
        assert gate.admit(f"10.0.0.{index}") is None
    assert gate.admit("10.0.1.1") == (503, "too many password checks under way")
    for index in range(MAX_WAITING):
        gate.done(f"10.0.0.{index}", True)
    for index in range(CLIENTS + 10):
        assert gate.admit(f"10.1.{index // 250}.{index % 250}") is None
        gate.done(f"10.1.{index // 250}.{index % 250}", False)
    assert len(gate._clients) == CLIENTS


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_a_reload_keeps_the_remembered_passwords_of_users_whose_hash_stayed(tmp_path, monkeypatch):
    path = tmp_path / "web.yml"
    users = {"prometheus": bcrypt.hashpw(b"scrape", bcrypt.gensalt(rounds=4)).decode(), "ops": bcrypt.hashpw(b"ack", bcrypt.gensalt(rounds=4)).decode()}
    path.write_text(yaml.safe_dump({"basic_auth_users": users}))
    security = WebSecurity(str(path))
    assert security.authorized(_basic("prometheus", "scrape")) and security.authorized(_basic("ops", "ack"))
    made = counting(monkeypatch, websecurity, "_dummy_hash")
    config = security.config
    for _ in range(50):  # 50 SIGHUPs, nothing changed: nothing is done
        security.refresh(force=True)
    assert security.config is config and made.count == 0
    assert security.quick(_basic("prometheus", "scrape")) is True  # was None: forgotten, a bcrypt check again
    users["ops"] = bcrypt.hashpw(b"new", bcrypt.gensalt(rounds=4)).decode()  # another user's password changes
    path.write_text(yaml.safe_dump({"basic_auth_users": users}))
    security.refresh(force=True)
    assert security.config is not config and made.count == 0  # the same cost: the same dummy hash
    assert security.quick(_basic("prometheus", "scrape")) is True
    assert security.quick(_basic("ops", "ack")) is None and not security.authorized(_basic("ops", "ack"))
