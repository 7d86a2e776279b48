"""`--web-config-file`: TLS and basic auth, in the Prometheus exporter-toolkit's file format.

    tls_server_config:
      cert_file: server.crt
      key_file: server.key
      client_ca_file: ca.crt                   # optional
      client_auth_type: RequireAndVerifyClientCert   # NoClientCert | VerifyClientCertIfGiven | RequireAndVerifyClientCert
      min_version: TLS12                       # TLS12 | TLS13
    basic_auth_users:
      prometheus: $2b$12$…                     # bcrypt hashes, as htpasswd -nBC 12 writes them

The file is re-read when it changes (checked at most once a second, on requests): new users and
passwords apply at once; new certificates and client CAs are loaded into the live TLS context and
apply to new connections. A broken new file is refused with a log line and the last good one
stays. Paths are relative to the file. Every endpoint but `/-/healthy` requires the credentials.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import bcrypt
import yaml

from exporter.config import ConfigError

log = logging.getLogger(__name__)

CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
MIN_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
OPEN_PATHS = ("/-/healthy",)  # liveness probes carry no credentials; it says only "OK"


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
        self._lock = threading.Lock()
        self._context: ssl.SSLContext | None = None
        self._verified: dict[tuple[str, str], bool] = {}  # bcrypt is slow by design: remember answers

    def _stat(self) -> float | None:
        try:
            return os.stat(self.path).st_mtime_ns / 1e9
        except OSError:
            return None

    def refresh(self) -> None:
        """Re-read the file if it changed (checked at most once a second)."""
        now = time.monotonic()
        if now - self._checked < 1.0:
            return
        with self._lock:
            self._checked = now
            mtime = self._stat()
            if mtime is None or mtime == self._mtime:
                return
            try:
                config = load_web_config(self.path)
                if self._context is not None and config.tls is not None:
                    _load_into(self._context, config.tls)
            except (ConfigError, OSError, ssl.SSLError) as error:
                log.warning("web config not reloaded, keeping the last good one path=%s error=%s", self.path, error)
                return
            self.config, self._mtime, self._verified = config, mtime, {}
            log.info("web config reloaded path=%s users=%d tls=%s", self.path, len(config.users), config.tls is not None)

    def ssl_context(self) -> ssl.SSLContext:
        """The server's TLS context (created once; reloads change it in place)."""
        assert self.config.tls is not None
        if self._context is None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            _load_into(context, self.config.tls)
            self._context = context
        return self._context

    def authorized(self, header: str | None) -> bool:
        """Whether an Authorization header carries a configured user's password."""
        users = self.config.users
        if not users:
            return True
        if not header or not header.startswith("Basic "):
            return False
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode("utf-8").partition(":")
        except (ValueError, UnicodeDecodeError):
            return False
        hashed = users.get(user)
        if hashed is None:
            return False
        key = (user, hashlib.sha256(password.encode() + hashed).hexdigest())
        if key not in self._verified:
            if len(self._verified) > 1024:
                self._verified.clear()
            self._verified[key] = bcrypt.checkpw(password.encode(), hashed)
        return self._verified[key]


def _load_into(context: ssl.SSLContext, tls: TLSConfig) -> None:
    context.minimum_version = MIN_VERSIONS[tls.min_version]
    context.load_cert_chain(tls.cert_file, tls.key_file)
    context.verify_mode = CLIENT_AUTH[tls.client_auth_type]
    if tls.client_ca_file:
        context.load_verify_locations(tls.client_ca_file)
