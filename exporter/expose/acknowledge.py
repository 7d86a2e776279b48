"""POST /api/v1/acknowledge: a series' current acceptance becomes its new normal, on purpose.

The body names the series (model_name, and optionally engine, upstream, source) and may state the
config the operator believes it runs (method, num_speculative_tokens, draft_model): a mismatch
is refused (409), as is a filter that matches nothing (404) or a body that is not one (400).
Nothing changes on a refusal; every acknowledgement and refusal is logged with who asked.
"""

from __future__ import annotations

import logging
from typing import Any

from exporter.config import DeriveSettings
from exporter.judge.status import memory_fields
from exporter.state.reference import SpecIdentity
from exporter.state.store import AcknowledgeError, CannotAcknowledge, NoSuchSeries, Store

log = logging.getLogger(__name__)

FILTERS = ("model_name", "engine", "upstream", "source")


class BadBody(AcknowledgeError):
    """The request's body is not an acknowledgement."""


STATUS = {BadBody: 400, NoSuchSeries: 404, CannotAcknowledge: 409}  # what each refusal is in HTTP


def _text(value: Any, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise BadBody(f"{name}: expected a string, got {value!r}")


def _identity(config: Any) -> SpecIdentity | None:
    if config is None:
        return None
    if not isinstance(config, dict) or set(config) - {"method", "num_speculative_tokens", "draft_model"}:
        raise BadBody("config: expected an object of method, num_speculative_tokens, draft_model")
    k = config.get("num_speculative_tokens")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise BadBody(f"config.num_speculative_tokens: expected a positive integer, got {k!r}")
    return SpecIdentity(_text(config.get("method"), "config.method"), k, _text(config.get("draft_model"), "config.draft_model"))


def acknowledge(store: Store, settings: DeriveSettings, body: Any, who: str) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON answer) for one acknowledgement request."""
    try:
        if not isinstance(body, dict):
            raise BadBody('expected a JSON object like {"model_name": "my-model", "engine": "0"}')
        unknown = set(body) - {*FILTERS, "config"}
        if unknown:
            raise BadBody(f"unknown field(s) {sorted(unknown)}; known: {[*FILTERS, 'config']}")
        match = {name: _text(body.get(name), name) for name in FILTERS}
        if not match["model_name"]:
            raise BadBody("model_name is required")
        keys = store.acknowledge(match, _identity(body.get("config")))
    except AcknowledgeError as error:
        status = STATUS[type(error)]
        log.warning("acknowledgement refused by=%s status=%d: %s", who, status, error)
        return status, {"error": str(error)}
    snapshot = {s.key: s for s in store.snapshot().series}
    answer = []
    for key in keys:
        series = snapshot.get(key)
        fields = memory_fields(series.memory if series else None, series.reference_rule if series else None)
        log.warning(
            "acknowledged by=%s series=%s/engine %s/%s/%s: new reference L=%s from %s drafts", who, key.model_name, key.engine,
            key.source, key.upstream, fields["reference"]["mean_acceptance_length"] if fields["reference"] else None,
            fields["reference"]["drafts"] if fields["reference"] else 0,
        )
        answer.append({"upstream": key.upstream, "model_name": key.model_name, "engine": key.engine, "source": key.source, **fields})
    return 200, {"acknowledged": answer}
