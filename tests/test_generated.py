"""Generated files are committed: they are `specdecode-exporter mixin` run on the shipped defaults and
on deploy/mixin/demo.toml; regenerating them must change nothing (edit the config or the generator)."""

from __future__ import annotations

from pathlib import Path

from exporter.mixin.build import artefacts
from exporter.mixin.config import load

ROOT = Path(__file__).parent.parent
CONFIGS = (None, ROOT / "deploy/mixin/demo.toml")


def test_committed_artefacts_match_the_generator():
    rendered = {path: content for config in CONFIGS for path, content in artefacts(load(config)).items()}
    drifted = [path for path, content in rendered.items() if not (ROOT / path).exists() or (ROOT / path).read_text(encoding="utf-8") != content]
    assert drifted == [], "run `scripts/generate` and commit the result"


def test_no_stale_generated_file_is_left_behind():
    rendered = {path for config in CONFIGS for path in artefacts(load(config))}
    generated_dirs = {"deploy/kubernetes/gpu", "deploy/kubernetes/demo", "dashboards"}
    committed = {str(p.relative_to(ROOT)) for d in generated_dirs for p in (ROOT / d).iterdir()}
    assert committed - rendered == set()


def test_committed_fixture_logs_match_their_writer(tmp_path):
    """tests/golden/vllm-<X>/ and tests/golden/wild/ are written by scripts/make_version_fixtures.py:
    writing them again must give the committed bytes. In a process of its own (the writer sets TZ
    for the whole process); the JSON-formatter scenario needs python-json-logger, left out when missing."""
    import subprocess
    import sys

    script = f"""
import importlib.util, sys
from pathlib import Path
sys.path.insert(0, {str(ROOT / "scripts")!r})
from version_fixtures import legacy, modern, wild
writers = [modern.s026_dp2, modern.s033_text, modern.s034, modern.s034_diffusion, modern.s024, modern.s028, modern.s030,
           legacy.s043, legacy.s063, legacy.s084, legacy.s_v1a, *wild.SCENARIOS]
if importlib.util.find_spec("pythonjsonlogger") is not None:
    writers.append(modern.s033_json)
for write in writers:
    write(Path({str(tmp_path)!r}))
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    written = sorted(path.relative_to(tmp_path) for path in tmp_path.rglob("*") if path.is_file())
    assert len(written) >= 2 * 22
    drifted = [str(path) for path in written if (tmp_path / path).read_bytes() != (ROOT / "tests" / "golden" / path).read_bytes()]
    assert drifted == [], "run `python scripts/make_version_fixtures.py` and commit the result"
