"""The compose `demo` profile without Docker: its own commands and mounted files, real binaries, loopback.

The simulator's and sidecar's commands are read from docker-compose.yml; Prometheus loads the
committed deploy/prometheus/demo/prometheus.yml and its rule files, Alertmanager the committed
deploy/alertmanager/alertmanager.yml. Only container host names and paths are mapped to loopback
ports and a temporary directory — which proves the files the containers mount are correct.
"""

from __future__ import annotations

import shutil
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
import yaml
from helpers import cli, free_port, running_process
from waiting import wait_until

pytestmark = pytest.mark.slow  # the compose demo with the real Prometheus, Alertmanager and Grafana binaries

ROOT = Path(__file__).parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def cli_run(args: list[str]) -> None:
    import subprocess

    subprocess.run(cli(*args), check=True, timeout=60, capture_output=True)


def translate(command: list[str], mapping: dict[str, str]) -> list[str]:
    result = []
    for arg in command:
        for old, new in mapping.items():
            arg = arg.replace(old, new)
        result.append(arg)
    return result


def test_demo_profile_files_work_with_the_real_binaries(tmp_path):
    ports = {name: free_port() for name in ("vllm", "sidecar", "prometheus", "alertmanager")}
    mapping = {
        "0.0.0.0:8000": f"127.0.0.1:{ports['vllm']}",
        "vllm:8000": f"127.0.0.1:{ports['vllm']}",
        "0.0.0.0:9847": f"127.0.0.1:{ports['sidecar']}",
        "/var/log/vllm": str(tmp_path / "logs"),
        "/var/lib/specdecode-secrets": str(tmp_path / "secrets"),  # the `secrets` volume (before /var/lib/specdecode)
        "/var/lib/specdecode": str(tmp_path / "state"),
    }
    (tmp_path / "logs").mkdir()
    # first start: the `secrets` service's own command writes the passwords and the web config
    cli_run(translate(COMPOSE["services"]["secrets"]["command"], mapping))
    config = yaml.safe_load((ROOT / "deploy/prometheus/demo/prometheus.yml").read_text())
    rules_dir = ROOT / "deploy/prometheus/demo"
    config["rule_files"] = [str(rules_dir / name) for name in config["rule_files"]]
    text = yaml.safe_dump(config).replace("/etc/prometheus-secrets", str(tmp_path / "secrets"))
    for host, port in (("vllm:8000", ports["vllm"]), ("sidecar:9847", ports["sidecar"]), ("alertmanager:9093", ports["alertmanager"])):
        text = text.replace(host, f"127.0.0.1:{port}")
    (tmp_path / "prometheus.yml").write_text(text)
    prometheus, alertmanager = shutil.which("prometheus"), shutil.which("prometheus-alertmanager")
    assert prometheus and alertmanager
    with ExitStack() as stack:
        simulator = translate(COMPOSE["services"]["simulator"]["command"], mapping)
        stack.enter_context(running_process(cli(*simulator), f"http://127.0.0.1:{ports['vllm']}/health", "simulator"))
        sidecar = translate(COMPOSE["services"]["sidecar"]["command"], mapping)
        stack.enter_context(running_process(cli(*sidecar), f"http://127.0.0.1:{ports['sidecar']}/-/healthy", "sidecar"))
        stack.enter_context(running_process(
            [alertmanager, f"--config.file={ROOT / 'deploy/alertmanager/alertmanager.yml'}", f"--storage.path={tmp_path / 'am'}",
             f"--web.listen-address=127.0.0.1:{ports['alertmanager']}", "--cluster.listen-address="],
            f"http://127.0.0.1:{ports['alertmanager']}/-/ready", "alertmanager",
        ))
        prom = f"http://127.0.0.1:{ports['prometheus']}"
        stack.enter_context(running_process(
            [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{ports['prometheus']}"],
            f"{prom}/-/ready", "prometheus",
        ))
        groups = httpx.get(f"{prom}/api/v1/rules", timeout=5).json()["data"]["groups"]
        expected = {g["name"]: len(g["rules"]) for f in ("specdecode.rules.yml", "specdecode.alerts.yml")
                    for g in yaml.safe_load((rules_dir / f).read_text())["groups"]}
        assert {g["name"]: len(g["rules"]) for g in groups} == expected
        seen: dict[str, object] = {}

        def scraped_and_recorded() -> bool:
            targets = httpx.get(f"{prom}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
            length = httpx.get(f"{prom}/api/v1/query", params={"query": "model:vllm_spec_decode_mean_acceptance_length:ratio_rate5m"}, timeout=5).json()
            seen.update(targets=[(t["scrapeUrl"], t["health"]) for t in targets], length=length)
            return len(targets) == 2 and all(t["health"] == "up" for t in targets) and bool(length["data"]["result"])

        wait_until(scraped_and_recorded, "both targets up and the recording rule filled", timeout=90, every=0.5, detail=lambda: str(seen))
        # the sidecar's published port: acknowledge (and the rest) only with the web config's credentials,
        # which the committed Prometheus config scrapes with (its target is up, above)
        sidecar_url = f"http://127.0.0.1:{ports['sidecar']}"
        refused = httpx.post(f"{sidecar_url}/api/v1/acknowledge", json={"model_name": "x"}, timeout=5)
        assert refused.status_code == 401
        password = (tmp_path / "secrets" / "prometheus.password").read_text().strip()
        assert httpx.get(f"{sidecar_url}/metrics", auth=("prometheus", password), timeout=5).status_code == 200
        status = httpx.get(f"http://127.0.0.1:{ports['alertmanager']}/api/v2/status", timeout=5).json()
        assert "SpecDecodePositionZeroCollapse" in status["config"]["original"]
        assert httpx.get(f"{prom}/api/v1/alertmanagers", timeout=5).json()["data"]["activeAlertmanagers"]
