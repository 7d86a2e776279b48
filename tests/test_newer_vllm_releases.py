"""scripts/newer_vllm_releases.py: which releases are newer than the newest tested one (pure part)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("newer_vllm_releases", ROOT / "scripts" / "newer_vllm_releases.py")
assert spec is not None and spec.loader is not None
releases = importlib.util.module_from_spec(spec)
sys.modules["newer_vllm_releases"] = releases
spec.loader.exec_module(releases)


def test_only_final_releases_above_the_newest_tested_are_listed_oldest_first():
    available = ["0.35.1", "0.34.0", "0.36.0rc1", "0.35.0", "0.33.0", "0.4.3", "0.34.1.dev3", "1.0"]
    assert releases.newer_than(available, "0.34.0") == ["0.35.0", "0.35.1", "1.0"]
    assert releases.newer_than(["0.34.0", "0.33.0"], "0.34.0") == []


def test_the_newest_tested_version_has_a_fixture_and_a_plugin_run():
    from exporter.simulate.layouts import NEWEST

    assert (ROOT / "tests" / "golden" / f"vllm-{NEWEST}").is_dir()
    assert f'"{NEWEST}"' in (ROOT / "tests" / "test_plugin_in_vllm.py").read_text()
    assert f"<0.{int(NEWEST.split('.')[1]) + 1}" in (ROOT / "pyproject.toml").read_text()  # the [vllm] extra admits it
