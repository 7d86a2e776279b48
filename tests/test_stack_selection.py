"""Every preset, rendered, is selected by the monitoring stack it is for — together with the vLLM monitor
it relies on — or says it is not (issue 34).

The stacks and charts are read from their own templates and default values, kept with their sources in
tests/golden/charts/ (README there): kube-prometheus-stack's Prometheus selects monitors and rules by
`release: <release name>` in every namespace; production-stack's and llm-d's vLLM monitors carry no
`release` by default. Each test first asserts that the template lines it emulates are there, then
renders what a default install would: which labels each object gets, which the stack selects. Where
vLLM is scraped by a chart, the chart's monitor with our chart-values.yaml must be selected (and is
not without it: the failure the issue found), and its job must be the one the rules read. The
integration alert covers the rest: promtool fires SpecDecodeVLLMNotScraped on each chart preset's
own rules when the chart's monitor is not selected.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.mixin.alerts import alert_groups
from exporter.mixin.charts import MONITOR_VALUES, chart_values
from exporter.mixin.config import MixinConfig, load
from exporter.mixin.kubernetes import manifests
from exporter.mixin.rules import recording_rule_groups

ROOT = Path(__file__).parent.parent
CHARTS = ROOT / "tests/golden/charts"
PRESETS = sorted((ROOT / "deploy/mixin").glob("*.toml"))
FOR_KUBE_PROMETHEUS = {"kube-prometheus"}  # the presets of another stack than kube-prometheus-stack
RELEASE, MODEL = "my-release", "qwen3-8b"  # a chart install's release and model names


def golden(path: str) -> str:
    return (CHARTS / path).read_text(encoding="utf-8")


def matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A Kubernetes label selector: {} selects everything, None nothing (matchExpressions: none are relied on)."""
    if selector is None:
        return False
    assert set(selector) <= {"matchLabels"}, f"an emulation of {selector} is not written"
    return all(labels.get(key) == value for key, value in selector.get("matchLabels", {}).items())


class Stack:
    """What one stack's Prometheus and Alertmanager select: kind → (object selector, namespace selector or None: own namespace)."""

    def __init__(self, selectors: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]], home: str) -> None:
        self.selectors = selectors
        self.home = home

    def selects(self, obj: dict[str, Any]) -> bool:
        selector, namespaces = self.selectors[obj["kind"]]
        namespace = obj["metadata"].get("namespace", "default")
        in_scope = namespace == self.home if namespaces is None else matches(namespaces, {"kubernetes.io/metadata.name": namespace})
        return in_scope and matches(selector, obj["metadata"].get("labels", {}))


def kube_prometheus_stack(release: str) -> Stack:
    """kube-prometheus-stack installed as `release` with its default values (templates/prometheus/prometheus.yaml,
    templates/alertmanager/alertmanager.yaml, values.yaml)."""
    template = golden("kube-prometheus-stack/prometheus.yaml.excerpt")
    values = yaml.safe_load(golden("kube-prometheus-stack/values.yaml"))
    spec = values["prometheus"]["prometheusSpec"]
    selectors: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = {}
    for kind, key in (("ServiceMonitor", "serviceMonitor"), ("PodMonitor", "podMonitor"), ("PrometheusRule", "rule")):
        # {{ if .Values…Selector }} (an empty map is false in a Go template) … {{ else if …NilUsesHelmValues }} release
        assert f"if .Values.prometheus.prometheusSpec.{key}Selector }}}}" in template
        assert re.search(rf"else if \.Values\.prometheus\.prometheusSpec\.{key}SelectorNilUsesHelmValues\s*}}}}\n  {key}Selector:\n"
                         r"    matchLabels:\n      release: \{\{ \$\.Release\.Name \| quote \}\}", template)
        explicit, nil_uses_helm = spec[f"{key}Selector"], spec[f"{key}SelectorNilUsesHelmValues"]
        selector = explicit or ({"matchLabels": {"release": release}} if nil_uses_helm else {})
        assert f"{key}NamespaceSelector: {{}}" in template  # the else branch: every namespace
        selectors[kind] = (selector, spec[f"{key}NamespaceSelector"] or {})
    alertmanager = golden("kube-prometheus-stack/alertmanager.yaml.excerpt")
    am = values["alertmanager"]["alertmanagerSpec"]
    assert "alertmanagerConfigSelector: {}" in alertmanager and am["alertmanagerConfigSelector"] == {}
    assert am["alertmanagerConfigNamespaceSelector"] == {}  # rendered as {} (not null): every namespace
    selectors["AlertmanagerConfig"] = ({}, {})
    return Stack(selectors, home="monitoring")


def kube_prometheus() -> Stack:
    prometheus = yaml.safe_load(golden("kube-prometheus/prometheus-prometheus.yaml"))["spec"]
    alertmanager = yaml.safe_load(golden("kube-prometheus/alertmanager-alertmanager.yaml"))["spec"]
    selectors: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = {
        kind: (prometheus[f"{key}Selector"], prometheus[f"{key}NamespaceSelector"])
        for kind, key in (("ServiceMonitor", "serviceMonitor"), ("PodMonitor", "podMonitor"), ("PrometheusRule", "rule"))
    }
    selectors["AlertmanagerConfig"] = (alertmanager["alertmanagerConfigSelector"], alertmanager.get("alertmanagerConfigNamespaceSelector"))
    return Stack(selectors, home="monitoring")


def _values(excerpt: str) -> dict[str, Any]:
    """A values.yaml excerpt (a block indented under its parent key) parsed."""
    data: dict[str, Any] = yaml.safe_load(textwrap.dedent(golden(excerpt)))
    return data


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge of a values file over the chart's: maps key by key, anything else replaced."""
    out = dict(base)
    for key, value in over.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def production_stack_monitor(values: dict[str, Any], namespace: str) -> tuple[dict[str, Any] | None, str]:
    """servicemonitor-engine.yaml as helm renders it (None when disabled), and the job it scrapes vLLM as."""
    template = golden("production-stack/servicemonitor-engine.yaml")
    helpers = golden("production-stack/_helpers.tpl.excerpt")
    service = golden("production-stack/service-vllm.yaml.excerpt")
    assert template.startswith("{{- if and .Values.servingEngineSpec.enableEngine .Values.servingEngineSpec.serviceMonitor.enabled -}}")
    assert re.search(r"  labels:\n    \{\{- include \"chart\.engineCommonLabels\".*\n    \{\{- include \"chart\.engineLabels\" \$ \| nindent 4 \}\}\n"
                     r"    \{\{- with \.Values\.servingEngineSpec\.serviceMonitor\.additionalLabels \}\}", template)
    assert "jobLabel" not in template  # the job is the Service's name
    assert 'name: "{{ $.Release.Name }}-{{ $modelSpec.name }}-engine-service"' in service
    common = dict(re.findall(r"^(app\.kubernetes\.io/[a-z-]+): (.+)$", helpers, re.M))
    assert common == {"app.kubernetes.io/instance": "{{ .releaseName }}", "app.kubernetes.io/component": "serving-engine",
                      "app.kubernetes.io/part-of": "{{ .chartName }}", "app.kubernetes.io/managed-by": "helm"}
    monitor = values["servingEngineSpec"]["serviceMonitor"]
    if not monitor["enabled"]:
        return None, ""
    labels = {**common, "app.kubernetes.io/instance": RELEASE, "app.kubernetes.io/part-of": "vllm-stack",
              **values["servingEngineSpec"].get("labels", {}), **(monitor.get("additionalLabels") or {})}
    obj = {"kind": "ServiceMonitor", "metadata": {"name": f"{RELEASE}-engine-servicemonitor", "namespace": namespace, "labels": labels}}
    return obj, f"{RELEASE}-{MODEL}-engine-service"


def llm_d_monitor(values: dict[str, Any], namespace: str) -> tuple[dict[str, Any] | None, str]:
    """decode-podmonitor.yaml as helm renders it (None when disabled), and the job it scrapes vLLM as."""
    template = golden("llm-d-modelservice/decode-podmonitor.yaml")
    helpers = golden("llm-d-modelservice/_helpers.tpl.excerpt")
    assert template.startswith("{{- if and .Values.decode.create .Values.decode.monitoring.podmonitor.enabled }}")
    assert re.search(r"  labels:\n    \{\{- include \"llm-d-modelservice\.labels\" \. \| nindent 4 \}\}\n    app\.kubernetes\.io/component: decode\n"
                     r"  \{\{- with \.Values\.decode\.monitoring\.podmonitor\.labels \}\}", template)
    assert 'name: {{ include "llm-d-modelservice.decodeName" . }}-podmonitor' in template
    assert '{{ include "llm-d-modelservice.fullname" . }}-decode' in helpers
    assert 'printf "%s-%s" .Release.Name $name' in helpers  # fullname: <release>-<chart name>
    monitor = values["decode"]["monitoring"]["podmonitor"]
    if not monitor["enabled"]:
        return None, ""
    labels = {"helm.sh/chart": "llm-d-modelservice-v0.4.12", "app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/component": "decode",
              **(monitor.get("labels") or {})}
    name = f"{RELEASE}-llm-d-modelservice-decode-podmonitor"
    return {"kind": "PodMonitor", "metadata": {"name": name, "namespace": namespace, "labels": labels}}, f"{namespace}/{name}"


def chart_defaults(chart: str) -> dict[str, Any]:
    if chart == "production-stack":
        return {"servingEngineSpec": {"enableEngine": True, **_values("production-stack/values.yaml.excerpt")}}
    return {"decode": {"create": True, **_values("llm-d-modelservice/values.yaml.excerpt")}}


def chart_monitor(config: MixinConfig, values: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    render = production_stack_monitor if config.chart == "production-stack" else llm_d_monitor
    return render(values, config.namespace or "default")


def vllm_job_selected(config: MixinConfig, job: str) -> bool:
    """Whether the rules' vllm_selector (a job matcher) reads the job the chart scrapes vLLM as."""
    matcher = re.fullmatch(r'job=~"(.+)"', config.vllm_selector)
    assert matcher, config.vllm_selector
    return re.fullmatch(matcher.group(1), job) is not None


@pytest.mark.parametrize("preset", [p for p in PRESETS if p.stem not in FOR_KUBE_PROMETHEUS], ids=lambda p: p.stem)
def test_every_preset_is_selected_by_kube_prometheus_stack_with_the_vllm_monitor_it_relies_on(preset):
    config = load(preset)
    stack = kube_prometheus_stack(release=config.monitor_labels["release"])
    files = manifests(config)
    for name in ("podmonitor.yaml", "prometheusrule.yaml", "alertmanagerconfig.yaml"):
        assert stack.selects(files[name]), f"{preset.name}: {name} is not selected by kube-prometheus-stack's defaults"
    if config.scrape_vllm:  # our PodMonitor scrapes vLLM: the same object, selected above
        assert any(e["port"] == "http" for e in files["podmonitor.yaml"]["spec"]["podMetricsEndpoints"])
        return
    defaults = chart_defaults(config.chart)
    alone, _ = chart_monitor(config, _merged(defaults, monitor_enabled(config)))
    assert alone is not None and not stack.selects(alone), "the chart's monitor with its default labels: the failure this fixes"
    monitor, job = chart_monitor(config, _merged(defaults, chart_values(config)))
    assert monitor is not None and stack.selects(monitor), f"{preset.name}: chart-values.yaml does not get the chart's monitor selected"
    assert vllm_job_selected(config, job), f"{preset.name}: the rules read {config.vllm_selector}, the chart scrapes vLLM as {job}"


def monitor_enabled(config: MixinConfig) -> dict[str, Any]:
    """The chart's monitor turned on by hand, as the presets' comments used to advise: its labels left at the default."""
    path, _ = MONITOR_VALUES[config.chart]
    values: dict[str, Any] = {"enabled": True}
    for key in reversed(path):
        values = {key: values}
    return values


def test_kube_prometheus_selects_everything_but_reads_pods_and_alertmanager_configs_in_few_namespaces():
    """kube-prometheus: {} selectors everywhere, but prometheus-k8s may list pods only where a RoleBinding lets it, and its
    Alertmanager reads AlertmanagerConfigs from its own namespace only: the preset binds the first; the docs say the second."""
    config = load(ROOT / "deploy/mixin/kube-prometheus.toml")
    stack, files = kube_prometheus(), manifests(config)
    assert stack.selects(files["podmonitor.yaml"]) and stack.selects(files["prometheusrule.yaml"])
    assert not stack.selects(files["alertmanagerconfig.yaml"])  # namespace inference, Alertmanager in monitoring
    bindings = yaml.safe_load(golden("kube-prometheus/prometheus-roleBindingSpecificNamespaces.yaml"))["items"]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["default", "kube-system", "monitoring"]
    assert config.namespace not in {b["metadata"]["namespace"] for b in bindings}
    role, binding = files["prometheus-role.yaml"], files["prometheus-rolebinding.yaml"]
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == config.namespace
    assert binding["subjects"] == bindings[0]["subjects"]  # the same service account kube-prometheus binds
    assert any("pods" in rule["resources"] and "list" in rule["verbs"] for rule in role["rules"])
    readme = (ROOT / "deploy/README.md").read_text()
    assert "alertmanagerConfigNamespaceSelector" in readme and "prometheus_rbac" in readme


# --- or it says so: the integration alert on each chart preset's own rules -----------------------------


def _vllm_series(job: str) -> str:
    return (f'vllm:spec_decode_num_drafts_total{{namespace="inference",pod="engine-0",job="{job}",instance="10.0.0.5:8000",'
            'model_name="m",engine="0"}')


@pytest.mark.slow  # promtool
@pytest.mark.parametrize("preset", [p for p in PRESETS if p.stem in {"production-stack", "llm-d"}], ids=lambda p: p.stem)
def test_a_chart_monitor_not_selected_fires_the_integration_alert(preset, tmp_path):
    config = load(preset)
    defaults = chart_defaults(config.chart)
    _, job = chart_monitor(config, _merged(defaults, chart_values(config)))
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump({"groups": recording_rule_groups(config) + alert_groups(config)}, sort_keys=False, width=1 << 20))
    sidecar = ('specdecode_drafts_total{namespace="inference",pod="engine-0",job="specdecode",instance="10.0.0.5:9847",'
               'upstream="http://127.0.0.1:8000/metrics",source="metrics",model_name="m",engine="0"}')
    test = {"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": [
        {"name": "only the sidecar is scraped", "interval": "1m", "input_series": [{"series": sidecar, "values": "0+600x30"}],
         "alert_rule_test": [{"eval_time": "25m", "alertname": "SpecDecodeVLLMNotScraped", "exp_alerts": [{
             "exp_labels": {"severity": "warning", "namespace": "inference", "pod": "engine-0"}}]}]},
        {"name": "the chart's monitor selected too", "interval": "1m",
         "input_series": [{"series": sidecar, "values": "0+600x30"}, {"series": _vllm_series(job), "values": "0+600x30"}],
         "alert_rule_test": [{"eval_time": "25m", "alertname": "SpecDecodeVLLMNotScraped", "exp_alerts": []}]},
        {"name": "vLLM scraped under another job than the rules read", "interval": "1m",
         "input_series": [{"series": sidecar, "values": "0+600x30"}, {"series": _vllm_series("inference/something-else"), "values": "0+600x30"}],
         "alert_rule_test": [{"eval_time": "25m", "alertname": "SpecDecodeVLLMNotScraped", "exp_alerts": [{
             "exp_labels": {"severity": "warning", "namespace": "inference", "pod": "engine-0"}}]}]},
    ]}
    # promtool compares annotations: these quote the preset's selector, so they are cut here (integration-test.yaml has them whole)
    document = yaml.safe_load(rules.read_text())
    for group in document["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    rules.write_text(yaml.safe_dump(document, sort_keys=False, width=1 << 20))
    path = tmp_path / "test.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False, width=1 << 20))
    tool = shutil.which("promtool")
    assert tool
    result = subprocess.run([tool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr
