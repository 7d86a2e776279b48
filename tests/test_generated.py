"""Generated files are committed; regenerating them must change nothing (edit the generator instead)."""

from __future__ import annotations

from pathlib import Path

from exporter.mixin.build import artefacts

ROOT = Path(__file__).parent.parent


def test_committed_artefacts_match_the_generator():
    drifted = [path for path, content in artefacts().items() if (ROOT / path).read_text(encoding="utf-8") != content]
    assert drifted == [], "run `scripts/generate` and commit the result"
