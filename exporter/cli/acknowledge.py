"""`acknowledge`: tell a running sidecar that a series' current acceptance is its new normal.

It POSTs to the sidecar's /api/v1/acknowledge (behind its basic auth when --web-config-file set
one) and prints what the sidecar answered. A filter that matches no series, or a config the series
does not run, changes nothing and exits non-zero with the sidecar's message.
"""

from __future__ import annotations

import json
import sys

import click

from exporter.cli.options import option

# its own SPECDECODE_ACK_* variables: serve's SPECDECODE_ENGINE (the server kind) or SPECDECODE_MODEL_NAME
# set in a sidecar's container must not become this command's filters when it is run there


@click.command()
@option("--url", envvar="SPECDECODE_ACK_URL", default="http://127.0.0.1:9847", show_default=True, help="The sidecar (serve) to tell.")
@option("--model-name", envvar="SPECDECODE_ACK_MODEL_NAME", required=True, help="model_name of the series to acknowledge.")
@option("--engine", envvar="SPECDECODE_ACK_ENGINE", help="Only this engine (default: every engine of the model).")
@option("--upstream", envvar="SPECDECODE_ACK_UPSTREAM", help="Only this upstream (a log path or target URL).")
@option("--source", envvar="SPECDECODE_ACK_SOURCE", type=click.Choice(["log", "metrics", "plugin"]), help="Only this source.")
@option("--config-method", envvar="SPECDECODE_ACK_CONFIG_METHOD", help="The drafter method the series must run (a check: a mismatch changes nothing).")
@option("--config-k", envvar="SPECDECODE_ACK_CONFIG_K", type=click.IntRange(min=1), help="num_speculative_tokens the series must run (a check).")
@option("--config-draft-model", envvar="SPECDECODE_ACK_CONFIG_DRAFT_MODEL", help="The draft model the series must run (a check).")
@option("--user", envvar="SPECDECODE_ACK_USER", help="Basic-auth user (the sidecar's --web-config-file).")
@option("--password", envvar="SPECDECODE_ACK_PASSWORD", help="Basic-auth password (prefer the variable to the flag: flags show in ps).")
@option("--timeout", envvar="SPECDECODE_ACK_TIMEOUT", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds to wait for the sidecar.")
def acknowledge(url: str, model_name: str, engine: str | None, upstream: str | None, source: str | None, config_method: str | None,
                config_k: int | None, config_draft_model: str | None, user: str | None, password: str | None, timeout: float) -> None:
    """Accept a series' current acceptance as its new normal (after an intended change).

    The series' reference (what `degraded` compares against) becomes what the series does now; the
    old one stays listed under previous_references in /api/v1/status. The sidecar logs each one.
    """
    body: dict[str, object] = {"model_name": model_name, "engine": engine, "upstream": upstream, "source": source}
    config = {"method": config_method, "num_speculative_tokens": config_k, "draft_model": config_draft_model}
    if any(value is not None for value in config.values()):
        body["config"] = config
    auth = (user, password or "") if user else None
    import httpx  # here, not at the top: every command imports this module, and httpx costs analyze's start-up 0.1 s

    try:
        response = httpx.post(url.rstrip("/") + "/api/v1/acknowledge", json=body, auth=auth, timeout=timeout)
    except httpx.HTTPError as error:
        click.echo(f"acknowledge: cannot reach {url}: {error}", err=True)
        sys.exit(2)
    try:
        answer = response.json()
    except json.JSONDecodeError:
        answer = {"error": response.text.strip()}
    if response.status_code != 200:
        click.echo(f"acknowledge: refused ({response.status_code}): {answer.get('error', answer)}", err=True)
        sys.exit(1)
    for entry in answer["acknowledged"]:
        reference = entry["reference"]
        length = reference["mean_acceptance_length"]
        click.echo(
            f"acknowledged {entry['model_name']} engine {entry['engine']} ({entry['source']}, {entry['upstream']}): "
            f"new reference L = {'—' if length is None else f'{length:.3f}'} from {reference['drafts']} drafts"
        )
