"""Compose services can write where they write: every writable mount of a service exists in its image,
owned by the user the service runs as. Read from docker-compose.yml and the Dockerfile (no engine here).

Docker creates a named volume from the image's directory at its mount point, owner included; a path the
image lacks becomes a root-owned directory that a non-root service cannot write (the demo's simulator,
uid 10001, writing /var/log/vllm, crash-looped so). Third-party images: what their Dockerfiles say.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
# image → (user, {path: owner}) from their Dockerfiles: prometheus/prometheus Dockerfile (`USER nobody`,
# `chown -R nobody:nobody /etc/prometheus /prometheus`), grafana/grafana (USER 472, /var/lib/grafana 472),
# prometheus/alertmanager (`USER nobody`, /alertmanager nobody)
THIRD_PARTY = {
    "prom/prometheus": ("nobody", {"/prometheus": "nobody"}),
    "prom/alertmanager": ("nobody", {"/alertmanager": "nobody"}),
    "grafana/grafana": ("472", {"/var/lib/grafana": "472"}),
}
ROOT_IMAGES = {"vllm-openai-specdecode"}  # vLLM's official image runs as root: it can write anywhere


def final_stage(dockerfile: str) -> list[str]:
    text = re.sub(r"\\\n\s*", " ", dockerfile)
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    last = max(i for i, line in enumerate(lines) if line.startswith("FROM "))
    return lines[last:]


def image_paths(dockerfile: str) -> tuple[str, dict[str, str]]:
    """(USER, {directory: owner uid}) of the final stage: useradd's home and `install -d -o`'s directories."""
    user, owned, uids = "0", {}, {}
    for line in final_stage(dockerfile):
        if line.startswith("USER "):
            user = line.split()[1]
        if line.startswith("RUN "):
            for command in re.split(r"&&|;", line[4:]):
                words = shlex.split(command)
                if words[:1] == ["useradd"]:
                    uid = words[words.index("--uid") + 1]
                    uids[words[-1]] = uid
                    if "--create-home" in words:
                        owned[words[words.index("--home-dir") + 1]] = uid
                if words[:2] == ["install", "-d"]:
                    owner = words[words.index("-o") + 1]
                    owned |= {path: uids.get(owner, owner) for path in words[2:] if path.startswith("/")}
    return uids.get(user, user), owned


def writable_mounts(service: dict) -> list[str]:  # type: ignore[type-arg]
    mounts = []
    for volume in service.get("volumes", []):
        parts = volume.split(":")
        if len(parts) == 2 or parts[2] != "ro":
            mounts.append(parts[1])
    return mounts


def what_runs(name: str, service: dict) -> tuple[str, dict[str, str]] | None:  # type: ignore[type-arg]
    image = service.get("image", "").split(":")[0]
    if service.get("build") in (".", {"context": "."}) or "specdecode-exporter" in image:
        user, owned = image_paths((ROOT / "Dockerfile").read_text())
        return service.get("user", user), owned
    if image in THIRD_PARTY:
        return THIRD_PARTY[image]
    assert image in ROOT_IMAGES, f"{name}: image {image!r} unknown to this test (add what its Dockerfile says)"
    return None


@pytest.mark.parametrize("name", sorted(COMPOSE["services"]))
def test_every_writable_mount_exists_in_the_image_owned_by_the_services_user(name):
    service = COMPOSE["services"][name]
    runs = what_runs(name, service)
    if runs is None:  # root
        return
    user, owned = runs
    for path in writable_mounts(service):
        assert path in owned, f"{name} writes {path}, which its image lacks: Docker would create it root-owned"
        assert owned[path] == user, f"{name} runs as {user} but {path} belongs to {owned[path]} in its image"


def test_the_check_sees_a_missing_path_and_a_wrong_owner():
    dockerfile = "FROM a AS b\nRUN x\nFROM python:3\nRUN useradd --system --uid 10001 --home-dir /h --create-home u \\\n && install -d -o 0 -g 0 /var/x\nUSER 10001\n"
    user, owned = image_paths(dockerfile)
    assert user == "10001" and owned == {"/h": "10001", "/var/x": "0"}
    assert image_paths((ROOT / "Dockerfile").read_text())[1]["/var/log/vllm"] == "10001"


def test_every_published_sidecar_port_is_behind_the_web_config_generated_at_first_start(tmp_path):
    """The web config is not committed: the `secrets` service writes it (and the passwords) into a volume
    the sidecar mounts, before the sidecar starts; running that command gives a valid web config."""
    from click.testing import CliRunner

    from exporter.cli.main import main

    secrets = COMPOSE["services"]["secrets"]
    writes = secrets["command"][1]
    volume = next(v.split(":")[0] for v in secrets["volumes"] if v.split(":")[1] == writes)
    for name, service in COMPOSE["services"].items():
        command = service.get("command") or []
        if command[:1] == ["serve"] and service.get("ports"):
            config = command[command.index("--web-config-file") + 1] if "--web-config-file" in command else None
            assert config, f"{name} publishes {service['ports']} with no --web-config-file: acknowledge would be open"
            mounts = dict(reversed(v.split(":")[:2]) for v in service["volumes"])
            assert mounts[str(Path(config).parent)] == volume and service["depends_on"]["secrets"]["condition"] == "service_completed_successfully"
    result = CliRunner().invoke(main, [*secrets["command"][:1], str(tmp_path), *secrets["command"][2:]])
    assert result.exit_code == 0, result.output
    users = yaml.safe_load((tmp_path / "web-config.yml").read_text())["basic_auth_users"]
    assert set(users) == {"prometheus", "ops"} and all(h.startswith("$2b$12$") for h in users.values())
    import bcrypt

    password = (tmp_path / "prometheus.password").read_text().strip()
    assert len(password) >= 24 and bcrypt.checkpw(password.encode(), users["prometheus"].encode())
    again = CliRunner().invoke(main, [*secrets["command"][:1], str(tmp_path), *secrets["command"][2:]])
    assert "kept" in again.output and (tmp_path / "prometheus.password").read_text().strip() == password  # later starts reuse


def published(service: dict) -> list[str]:  # type: ignore[type-arg]
    return [str(port) for port in service.get("ports", [])]


def test_nothing_is_published_beyond_loopback_unless_the_operator_says_so():
    for name, service in COMPOSE["services"].items():
        for port in published(service):
            assert port.startswith("${SPECDECODE_BIND:-127.0.0.1}:"), f"{name} publishes {port} on every interface"
    env = dict(line.split("=", 1) for line in (ROOT / ".env").read_text().splitlines() if line and not line.startswith("#"))
    assert env["SPECDECODE_BIND"] == "127.0.0.1"


def test_alertmanager_and_the_lifecycle_endpoints_are_not_published():
    assert published(COMPOSE["services"]["alertmanager"]) == []  # its API silences and reloads, unauthenticated
    for name in ("prometheus", "prometheus-demo"):
        assert "--web.enable-lifecycle" not in COMPOSE["services"][name]["command"]  # /-/quit, /-/reload
        assert "--web.enable-admin-api" not in COMPOSE["services"][name]["command"]


def test_no_password_is_committed():
    """No literal password or hash in the compose files, the provisioning or .env: each is generated at first start."""
    import re

    committed = [ROOT / "docker-compose.yml", ROOT / ".env", *sorted((ROOT / "deploy").rglob("*.yml")), *sorted((ROOT / "deploy").rglob("*.yaml"))]
    for path in committed:
        text = path.read_text()
        assert "change-me" not in text, path
        assert not re.search(r"\$2[aby]\$\d\d\$", text), f"{path} holds a bcrypt hash"
        assert not re.search(r"(?m)^\s*(password|GF_SECURITY_ADMIN_PASSWORD|[A-Z_]*PASSWORD)\s*[:=]\s*\S", text), f"{path} sets a password"
        literal = re.search(r"password:\s*([^,}\s]+)", text)
        assert literal is None, f"{path} sets a password: {literal.group(0) if literal else ''}"
    grafana = COMPOSE["services"]["grafana"]["environment"]
    assert grafana["GF_SECURITY_ADMIN_PASSWORD__FILE"].endswith("/grafana-admin.password") and "GF_SECURITY_ADMIN_PASSWORD" not in grafana


def test_the_compose_image_is_the_mixins_sidecar_image():
    from exporter import __version__
    from exporter.mixin.config import DEFAULT

    image = COMPOSE["x-image"]["image"]
    assert image == "${SPECDECODE_IMAGE:-" + DEFAULT.sidecar_image + "}"
    assert DEFAULT.sidecar_image.endswith(f":{__version__}") and DEFAULT.sidecar_image.startswith("ghcr.io/")
