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
