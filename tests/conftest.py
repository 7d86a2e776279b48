"""Shared fixtures: the golden captures, and the --update-golden flag."""

from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
CAPTURE = GOLDEN / "vllm-0.24.0" / "draft_model-noisy-k8"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite expected golden files instead of comparing")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(scope="session")
def golden_log_lines() -> list[str]:
    return (CAPTURE / "server.log").read_text(encoding="utf-8").splitlines()
