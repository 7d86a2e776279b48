"""Write the small versioned vLLM fixture logs under tests/golden/vllm-<X>/.

Every line shape comes from a format string read in that version's wheel (cited, with
file:line, in docs/vllm-versions.md and in each version's README.md). The counts are
chosen first (integers) and each line is then formatted the way that version prints them,
so truth.json is exact by construction. The logs of tests/golden/wild/ (issue #25: the shapes users
post from the wild) are written the same way (scripts/version_fixtures/wild.py). No vLLM code is imported or copied; the logging
layout is rebuilt from the format strings with the standard library's logging, and the
0.32+ JSON records are written by python-json-logger itself (the formatter vLLM names).

Run:  python scripts/make_version_fixtures.py [OUT_ROOT]   (default tests/golden)
The JSON scenario needs `python-json-logger` importable; the others need nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from version_fixtures import legacy, modern, posted, wild

SCENARIOS = [modern.s026_dp2, modern.s033_json, modern.s033_text, modern.s034, modern.s034_diffusion, modern.s024,
             modern.s028, modern.s030, legacy.s043, legacy.s063, legacy.s084, legacy.s_v1a]


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("tests/golden")
    for fn in [*SCENARIOS, *wild.SCENARIOS, *posted.SCENARIOS]:
        fn(root)


if __name__ == "__main__":
    main()
