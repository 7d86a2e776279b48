"""`--web-config-file`: TLS and basic auth, in the Prometheus exporter-toolkit's file format.

    tls_server_config:
      cert_file: server.crt
      key_file: server.key
      client_ca_file: ca.crt                   # optional
      client_auth_type: RequireAndVerifyClientCert   # NoClientCert | VerifyClientCertIfGiven | RequireAndVerifyClientCert
      min_version: TLS12                       # TLS12 | TLS13
    basic_auth_users:
      prometheus: $2b$12$…                     # bcrypt hashes, as htpasswd -nBC 12 writes them

The file is re-read when it changes (checked at most once a second, on requests) and on SIGHUP:
new users and passwords apply at once; new certificates and client CAs apply to new connections.
A reload applies whole or not at all: the new TLS settings are loaded into a fresh context first,
and only if every file loads is it swapped in; a broken new file is refused with a log line naming
it and the last good one stays. Paths are relative to the file. Every endpoint but `/-/healthy`
requires the credentials.

Password checks cannot stall the server or be timed: bcrypt runs in a worker thread (the caller
awaits it), an unknown user is checked against a dummy hash of the same cost (as slow as a known
one: user names do not leak), and only successes are remembered, so a flood of wrong passwords
can neither fill the cache nor evict the good ones.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import bcrypt
import yaml

from exporter.config import ConfigError
from exporter.expose.logins import LoginGate

log = logging.getLogger(__name__)

CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
MIN_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
OPEN_PATHS = ("/-/healthy",)  # liveness probes carry no credentials; it says only "OK"
REMEMBERED = 1024  # successful (user, password) checks kept, least recently used dropped first


@dataclass(frozen=True)
class TLSConfig:
    cert_file: str
    key_file: str
    client_ca_file: str | None = None
    client_auth_type: str = "NoClientCert"
    min_version: str = "TLS12"


@dataclass(frozen=True)
class WebConfig:
    tls: TLSConfig | None = None
    users: Mapping[str, bytes] = field(default_factory=dict)  # user → bcrypt hash


def load_web_config(path: str) -> WebConfig:
    """Parse and check a web config file; ConfigError names the key and the problem."""
    base = Path(path).parent
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except OSError as error:
        raise ConfigError(f"--web-config-file: cannot read {path!r}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"--web-config-file: {path!r} is not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--web-config-file: {path!r} must hold a mapping")
    unknown = set(data) - {"tls_server_config", "basic_auth_users", "http_server_config"}
    if unknown:
        raise ConfigError(f"--web-config-file: unknown key(s) {sorted(unknown)}")
    tls = None
    if data.get("tls_server_config"):
        section = data["tls_server_config"]
        if not isinstance(section, dict) or not section.get("cert_file") or not section.get("key_file"):
            raise ConfigError("tls_server_config: cert_file and key_file are required")
        auth = section.get("client_auth_type", "NoClientCert")
        if auth not in CLIENT_AUTH:
            raise ConfigError(f"tls_server_config.client_auth_type: {auth!r} is not one of {sorted(CLIENT_AUTH)}")
        if auth != "NoClientCert" and not section.get("client_ca_file"):
            raise ConfigError(f"tls_server_config.client_ca_file is required with client_auth_type {auth}")
        version = section.get("min_version", "TLS12")
        if version not in MIN_VERSIONS:
            raise ConfigError(f"tls_server_config.min_version: {version!r} is not one of {sorted(MIN_VERSIONS)}")
        def resolve(name: str) -> str | None:
            return str(base / section[name]) if section.get(name) else None

        # cert_file and key_file were required above
        tls = TLSConfig(str(base / section["cert_file"]), str(base / section["key_file"]), resolve("client_ca_file"), auth, version)
    users: dict[str, bytes] = {}
    for user, hashed in (data.get("basic_auth_users") or {}).items():
        if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise ConfigError(f"basic_auth_users.{user}: expected a bcrypt hash ($2b$…), not a plain password")
        users[str(user)] = hashed.replace("$2y$", "$2b$", 1).encode()
    return WebConfig(tls, users)


class WebSecurity:
    """The live web config: checks credentials and owns the TLS context; re-reads the file on change."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.config = load_web_config(path)
        self._mtime = self._stat()
        self._checked = time.monotonic()
        self._lock = threading.Lock()  # the remembered passwords (held for microseconds: every request may ask)
        self._reloading = threading.Lock()  # one reload at a time (a file read and TLS contexts: never under _lock)
        self._applied = fingerprint(self.path, self.config)  # what the config in use was read from
        self._context: ssl.SSLContext | None = None  # the listener's (its SNI callback hands each connection _current)
        self._current: ssl.SSLContext | None = None  # the context of the config in use
        self.on_trust_change: Callable[[], None] | None = None  # serve closes open TLS connections (a removed CA)
        # bcrypt is slow by design: successes are remembered (never failures, which an attacker chooses)
        self._verified: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._dummy = _dummy_hash(self.config.users)
        # password checks run here, not in the server's shared thread pool: a flood of them queues
        # behind its own two threads and leaves every other request's threads free; the gate bounds
        # what each client may queue (expose/logins.py)
        self.checks = ThreadPoolExecutor(max_workers=2, thread_name_prefix="bcrypt")
        self.logins = LoginGate()

    def _stat(self) -> float | None:
        try:
            return os.stat(self.path).st_mtime_ns / 1e9
        except OSError:
            return None

    def refresh(self, force: bool = False) -> None:
        """Re-read the file if it changed (checked at most once a second), or now if `force` (SIGHUP).
        Nothing is done when nothing changed — the file's bytes and the TLS files it names — so 50
        SIGHUPs cost 50 small reads; remembered passwords of users whose hash stayed are kept."""
        now = time.monotonic()
        if not force and now - self._checked < 1.0:
            return
        with self._reloading:
            self._checked = now
            mtime = self._stat()
            if mtime is None or (mtime == self._mtime and not force):
                return
            self._mtime = mtime
            if fingerprint(self.path, self.config) == self._applied:
                return
            try:
                config = load_web_config(self.path)
                fresh = tls_context(config.tls) if self._context is not None and config.tls is not None else None  # whole or nothing
            except ConfigError as error:
                log.warning("web config not reloaded, keeping the last good one path=%s error=%s", self.path, error)
                return
            if self._context is not None and config.tls is None:
                log.warning("web config not reloaded: TLS cannot be turned off without a restart path=%s", self.path)
                return
            trust_changed = self._context is not None and trust(self.config.tls) != trust(config.tls)
            if fresh is not None and self._context is not None:
                # new connections get the fresh context (a removed CA trusts nothing more); the verify
                # mode and the lowest version are the listener's own, set before the SNI callback runs
                self._context.verify_mode, self._context.minimum_version = fresh.verify_mode, fresh.minimum_version
                _no_resumption(self._context, fresh.verify_mode != ssl.CERT_NONE)  # the listener issues the tickets
                self._current = fresh
            dummy = self._dummy if _cost(config.users) == _cost(self.config.users) else _dummy_hash(config.users)
            with self._lock:
                old = self.config.users
                kept = [key for key in self._verified if old.get(key[0]) is not None and old.get(key[0]) == config.users.get(key[0])]
                self._verified = OrderedDict.fromkeys(kept)
                self.config, self._dummy = config, dummy
            self._applied = fingerprint(self.path, config)
            log.info("web config reloaded path=%s users=%d tls=%s", self.path, len(config.users), config.tls is not None)
            if trust_changed and self.on_trust_change is not None:
                self.on_trust_change()  # connections authenticated under the old trust end

    def ssl_context(self) -> ssl.SSLContext:
        """The server's TLS context (created once; reloads change it in place); ConfigError names the
        file that does not load."""
        assert self.config.tls is not None
        if self._context is None:
            self._context = self._current = tls_context(self.config.tls)
            self._context.sni_callback = self._context_for  # every handshake asks: a reload's context serves the next one
        return self._context

    def _context_for(self, connection: ssl.SSLObject, server_name: str | None, listener: ssl.SSLContext) -> None:
        """OpenSSL's servername callback, called at every handshake (with or without SNI): the context
        of the config in use — its certificate and the client CAs it trusts — for this connection."""
        current = self._current
        if current is not None and current is not listener:
            connection.context = current

    def authorized(self, header: str | None) -> bool:
        """Whether an Authorization header carries a configured user's password (blocking: bcrypt).

        As slow for an unknown user as for a known one: the password is checked against a dummy hash."""
        users = self.config.users
        if not users:
            return True
        credentials = basic_credentials(header)
        if credentials is None:
            return False
        user, password = credentials
        hashed = users.get(user)
        key = _remembered_as(user, password, hashed)
        if hashed is not None and self.remembered(key):
            return True
        good = bcrypt.checkpw(password.encode(), hashed if hashed is not None else self._dummy)
        if hashed is None or not good:
            return False
        with self._lock:
            self._verified[key] = None
            while len(self._verified) > REMEMBERED:
                self._verified.popitem(last=False)
        return True

    def remembered(self, key: tuple[str, str]) -> bool:
        with self._lock:
            if key in self._verified:
                self._verified.move_to_end(key)
                return True
        return False

    def quick(self, header: str | None) -> bool | None:
        """The answer without bcrypt, when there is one (no users, no header, a remembered success); None: check."""
        users = self.config.users
        if not users:
            return True
        credentials = basic_credentials(header)
        if credentials is None:
            return False
        user, password = credentials
        hashed = users.get(user)
        if hashed is not None and self.remembered(_remembered_as(user, password, hashed)):
            return True
        return None


def basic_credentials(header: str | None) -> tuple[str, str] | None:
    """(user, password) of a `Basic` Authorization header; None when there is none or it is malformed."""
    if not header or not header.startswith("Basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:], validate=True).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return user, password


def _remembered_as(user: str, password: str, hashed: bytes | None) -> tuple[str, str]:
    """How a verified password is remembered: never in clear, and tied to the hash it was checked against."""
    return user, hashlib.sha256(password.encode() + (hashed or b"")).hexdigest()


def _dummy_hash(users: Mapping[str, bytes]) -> bytes:
    """A hash of the same cost as the configured ones, checked for unknown users (so they take as long)."""
    return bcrypt.hashpw(os.urandom(16).hex().encode(), bcrypt.gensalt(rounds=min(max(_cost(users), 4), 31)))


def tls_context(tls: TLSConfig) -> ssl.SSLContext:
    """A server context with every file of `tls` loaded; ConfigError names the one that does not load."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _load_into(context, tls)
    return context


def _load_into(context: ssl.SSLContext, tls: TLSConfig) -> None:
    """Load `tls` into `context`: the client CA before the verify mode that needs it."""
    context.minimum_version = MIN_VERSIONS[tls.min_version]
    try:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(f"tls_server_config: cannot load cert_file {tls.cert_file!r} with key_file {tls.key_file!r}: "
                          f"{_reason(error)}") from None
    if tls.client_ca_file:
        try:
            context.load_verify_locations(tls.client_ca_file)
        except (OSError, ssl.SSLError) as error:
            raise ConfigError(f"tls_server_config: cannot load client_ca_file {tls.client_ca_file!r}: {_reason(error)}") from None
    context.verify_mode = CLIENT_AUTH[tls.client_auth_type]
    _no_resumption(context, context.verify_mode != ssl.CERT_NONE)


def _no_resumption(context: ssl.SSLContext, checked: bool) -> None:
    """Where client certificates are checked, no session tickets: a resumed session skips the check, and
    after a reload took a CA out it would let that CA's clients in (a TLS 1.2 session-ID resumed from
    before the change is closed by the connection: expose/connection.py)."""
    context.num_tickets = 0 if checked else 2
    context.options = (context.options | ssl.OP_NO_TICKET) if checked else (context.options & ~ssl.OP_NO_TICKET)


def _reason(error: OSError | ssl.SSLError) -> str:
    if isinstance(error, ssl.SSLError):
        return error.reason or str(error)
    return error.strerror or str(error)


def _cost(users: Mapping[str, bytes]) -> int:
    """The highest bcrypt cost of the configured hashes (12 when none says): the dummy hash's."""
    return max((int(hashed.split(b"$")[2]) for hashed in users.values() if hashed.count(b"$") >= 3 and hashed.split(b"$")[2].isdigit()),
               default=12)


def _file_state(path: str | None) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path) if path else None
    except OSError:
        return None
    return None if stat is None else (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def fingerprint(path: str, config: WebConfig) -> tuple[bytes, tuple[tuple[int, int, int] | None, ...]]:
    """What a config was read from: the file's bytes, and the TLS files it names (a certificate
    renewed in place is a change; a SIGHUP with nothing changed is not)."""
    try:
        text = Path(path).read_bytes()
    except OSError:
        text = b""
    tls = config.tls
    files = (tls.cert_file, tls.key_file, tls.client_ca_file) if tls is not None else ()
    return hashlib.sha256(text).digest(), tuple(_file_state(name) for name in files)


def trust(tls: TLSConfig | None) -> tuple[str, bytes] | None:
    """Whom the server trusts for client certificates: the auth type and the client CA file's bytes."""
    if tls is None:
        return None
    try:
        cas = Path(tls.client_ca_file).read_bytes() if tls.client_ca_file else b""
    except OSError:
        cas = b""
    return tls.client_auth_type, hashlib.sha256(cas).digest()
