"""List the vLLM releases newer than the newest one this project is tested against (a report, not a check).

The support policy (README, "Supported vLLM versions"): the newest vLLM release is supported. This
asks the package index through pip's own client (`pip index versions vllm`) and prints each release
above the newest tested version — the last of exporter.simulate.layouts.SUPPORTED_VERSIONS, which
has a fixture in tests/golden/vllm-<X>/ and a run of the plugin inside it (tests/test_plugin_in_vllm.py).
It exits 0 whatever it finds (an index that cannot be reached is said, not failed on): a new
release is work to schedule — read its wheel, write its fixture — never a red build.

Run:  python scripts/newer_vllm_releases.py
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exporter.simulate.layouts import NEWEST

_AVAILABLE = re.compile(r"^Available versions:\s*(.+)$", re.MULTILINE)


def release_key(version: str) -> tuple[int, ...] | None:
    """(major, minor, patch) of a final release; None for a pre-release, dev or local build."""
    if not re.fullmatch(r"\d+(?:\.\d+){1,2}", version):
        return None
    parts = tuple(int(part) for part in version.split("."))
    return parts + (0,) * (3 - len(parts))


def newer_than(available: list[str], newest: str) -> list[str]:
    """The final releases in `available` above `newest`, oldest first."""
    floor = release_key(newest)
    assert floor is not None, newest
    found = [(key, version) for version in available if (key := release_key(version)) is not None and key > floor]
    return [version for _, version in sorted(found)]


def main() -> int:
    try:
        result = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "vllm", "--disable-pip-version-check"],
                                capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        print(f"could not ask the package index: {error}")
        return 0
    match = _AVAILABLE.search(result.stdout)
    if match is None:
        print(f"the package index gave no vLLM versions (pip said: {(result.stderr or result.stdout).strip()[-300:]})")
        return 0
    newer = newer_than([version.strip() for version in match[1].split(",")], NEWEST)
    if not newer:
        print(f"vLLM {NEWEST} is the newest release and it is tested here")
        return 0
    print(f"newest tested vLLM: {NEWEST}; newer releases, not tested yet: {', '.join(newer)}")
    print("to support one: read its wheel (docs/vllm-versions.md), add its fixture (scripts/make_version_fixtures.py),")
    print("its layout (exporter/simulate/layouts.py), its plugin run (tests/test_plugin_in_vllm.py) and move the [vllm] extra")
    return 0


if __name__ == "__main__":
    sys.exit(main())
