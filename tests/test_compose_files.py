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
    if service.get("build") in (".", {"context": "."}) or image == "specdecode-exporter":
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


def test_every_published_sidecar_port_is_behind_the_web_config():
    for name, service in COMPOSE["services"].items():
        command = service.get("command") or []
        if command[:1] == ["serve"] and service.get("ports"):
            config = command[command.index("--web-config-file") + 1] if "--web-config-file" in command else None
            assert config, f"{name} publishes {service['ports']} with no --web-config-file: acknowledge would be open"
            mounts = dict(reversed(v.split(":")[:2]) for v in service["volumes"])
            host = mounts[str(Path(config).parent)]
            users = yaml.safe_load((ROOT / host / Path(config).name).read_text())["basic_auth_users"]
            assert users and all(h.startswith("$2") for h in users.values())
