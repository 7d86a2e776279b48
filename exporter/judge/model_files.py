"""What `check-config` reads of a model and says of it: the files, and one finding."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    severity: str  # error | warning | info
    field: str
    found: str
    expected: str
    why: str


@dataclass(frozen=True)
class ModelFiles:
    """A model directory (or a lone config.json): its config, and tensor shapes if weights are present."""

    path: str
    config: Mapping[str, Any]
    tensor_shapes: Mapping[str, tuple[int, ...]]
    added_token_ids: frozenset[int] | None  # ids of the tokenizer's added (special) tokens, when known


def text(value: Any) -> str:
    return "absent" if value is None else json.dumps(value) if not isinstance(value, str) else value


def field_of(config: Mapping[str, Any], key: str) -> Any:
    """A config field, looking into `text_config` for multimodal models."""
    if key in config:
        return config[key]
    inner = config.get("text_config")
    return inner.get(key) if isinstance(inner, dict) else None
