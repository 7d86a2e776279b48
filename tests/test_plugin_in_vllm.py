"""The plugin inside the real vLLM packages at both ends of the supported range, 0.24.0 and 0.34.0,
and 0.33.0 before it (CPU only: no GPU, no model).

A virtual environment per version gets that vLLM (--no-deps), the CPU build of torch and the few
packages its metrics code imports (tests/vllm-cpu-requirements.txt, plus
tests/vllm-0.33-cpu-requirements.txt for 0.33 and 0.34), plus this project; then
tests/plugin_in_vllm_driver.py loads the plugin through vLLM's own loader (entry point group
`vllm.stat_logger_plugins`) and feeds it vLLM's own SchedulerStats / SpecDecodingStats. Each
environment is kept in test-artifacts/ and reused while its requirements are unchanged; building
one took 95 s (0.24) and 125 s (0.33) here — the torch CPU wheel (190 MB) and vLLM's (280/336 MB).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds a CPU venv with the real vLLM and starts it

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "tests" / "vllm-cpu-requirements.txt"
# the oldest supported, the one before the newest, and the newest (its metrics code imports what 0.33's does)
EXTRA = {"0.24.0": None, "0.33.0": ROOT / "tests" / "vllm-0.33-cpu-requirements.txt", "0.34.0": ROOT / "tests" / "vllm-0.33-cpu-requirements.txt"}


def _vllm_python(version: str) -> Path:
    venv_dir = ROOT / "test-artifacts" / f"vllm-{version}-cpu-venv"
    python = venv_dir / "bin" / "python"
    stamp = venv_dir / "requirements.sha256"
    extra = EXTRA[version]
    wanted = hashlib.sha256(REQUIREMENTS.read_bytes() + (extra.read_bytes() if extra else b"") + version.encode()).hexdigest()
    if not (python.exists() and stamp.exists() and stamp.read_text() == wanted):
        venv.create(venv_dir, with_pip=True, clear=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
        if extra is not None:
            subprocess.run([*pip, "--no-deps", "-r", str(extra)], check=True)
        subprocess.run([*pip, "--no-deps", f"vllm=={version}"], check=True)
        stamp.write_text(wanted)
    # this checkout, so the entry point vLLM looks up is the one under test
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "-e", str(ROOT)], check=True)
    return python


@pytest.mark.parametrize("version", sorted(EXTRA))
def test_vllm_loads_the_plugin_and_its_records_match_vllms_own_stats(tmp_path, version):
    python = _vllm_python(version)
    result = subprocess.run(
        [str(python), str(ROOT / "tests" / "plugin_in_vllm_driver.py"), str(tmp_path / "records")],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["vllm"] == version
    # record_admission_rejection(reason) arrived in vLLM 0.32's AggregateStatLoggerBase; the plugin's
    # adapter took the call above without error
    assert report["admission_rejection"] is (tuple(map(int, version.split(".")[:2])) >= (0, 32))
    assert "exporter.plugin.stat_logger:SpecDecodeStatLogger" in report["factories"]
    records = report["records"]
    (config,) = [r for r in records if r["kind"] == "config"]
    assert (config["method"], config["num_speculative_tokens"], config["model_name"], config["vllm_version"]) == ("ngram", 3, "tiny", version)
    intervals = {r["engine"]: r for r in records if r["kind"] == "interval"}
    assert set(intervals) == {0, 1}
    # engine 0: drafts (3,2) (3,0) (2,2) (1,1) (3,1) over two steps with drafts and one without
    zero = intervals[0]
    assert (zero["steps"], zero["drafts"], zero["draft_tokens"], zero["accepted_tokens"]) == (2, 5, 12, 6)
    assert zero["accepted_per_position"] == [4, 2, 0] and zero["draft_tokens_per_position"] == [5, 4, 3]
    one = intervals[1]
    assert (one["drafts"], one["draft_tokens"], one["accepted_tokens"], one["accepted_per_position"]) == (1, 3, 3, [1, 1, 1])
    assert all(r["errors"] == 0 for r in records)
