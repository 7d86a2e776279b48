"""The generated PodMonitor, PrometheusRule and AlertmanagerConfig validate against the operator's own
CRD schemas (tests/golden/prometheus-operator-v0.93.0-crds/), unknown fields refused, for the
shipped defaults and every preset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from exporter.mixin.config import load
from exporter.mixin.kubernetes import manifests

ROOT = Path(__file__).parent.parent
CRDS = {(d["apiVersion"], d["kind"]): d["schema"] for d in (json.loads(p.read_text()) for p in
        sorted((ROOT / "tests/golden/prometheus-operator-v0.93.0-crds").glob("*.json")))}
CONFIGS = [None, *sorted((ROOT / "deploy/mixin").glob("*.toml"))]


def strict(schema: Any) -> Any:
    """Objects with listed properties take no others (the API server's strict field validation); Go's
    mid-pattern `(?i)` moved to the front, where Python's re takes it."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if isinstance(out.get("pattern"), str) and "(?i)" in out["pattern"]:
            out["pattern"] = "(?i)" + out["pattern"].replace("(?i)", "")
        if "properties" in out and "additionalProperties" not in out and not out.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def custom_objects(config_path: Path | None) -> list[dict[str, Any]]:
    return [m for m in manifests(load(config_path)).values() if (m["apiVersion"], m["kind"]) in CRDS]


@pytest.mark.parametrize("config_path", CONFIGS, ids=lambda p: p.stem if p else "defaults")
def test_operator_objects_validate_against_the_crds(config_path):
    objects = custom_objects(config_path)
    assert {o["kind"] for o in objects} == {"PodMonitor", "PrometheusRule", "AlertmanagerConfig"}
    for obj in objects:
        jsonschema.validate(obj, strict(CRDS[(obj["apiVersion"], obj["kind"])]))


def test_the_schemas_refuse_what_the_operator_refuses():
    monitor = next(o for o in custom_objects(None) if o["kind"] == "PodMonitor")
    schema = strict(CRDS[(monitor["apiVersion"], monitor["kind"])])
    wrong = json.loads(json.dumps(monitor))
    wrong["spec"]["podMetricsEndpoints"][0]["scrapeInterval"] = "15s"  # a field PodMonitor does not have
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, schema)
    config = next(o for o in custom_objects(None) if o["kind"] == "AlertmanagerConfig")
    bad = json.loads(json.dumps(config))
    bad["spec"]["inhibitRules"][0]["sourceMatch"][0]["matchType"] = "=="
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, strict(CRDS[(config["apiVersion"], config["kind"])]))
