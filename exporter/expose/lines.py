"""Sample lines in Prometheus text format 0.0.4, exactly as prometheus_client writes them.

prometheus_client's value formatting (`floatToGoString`) and its layout are kept — sorted labels,
escaping, `_total` and `_info` names — and tests/test_export.py compares the two byte for byte.
A series' label text is templated once per family, since sorting and escaping every label of
every sample was most of a render.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from prometheus_client.utils import floatToGoString as _untyped_float_text

from exporter import metric_names as names
from exporter.expose.body import Owner, Piece

Add = Callable[[names.MetricSpec, list[str], float], None]
Info = Callable[[names.MetricSpec, dict[str, str]], None]
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

floatToGoString: Callable[[float], str] = _untyped_float_text  # prometheus_client's number format; its function is untyped


def _escape_label(value: str) -> str:
    if '"' not in value and "\\" not in value and "\n" not in value:
        return value
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


_LABEL_ORDER: dict[tuple[str, ...], tuple[int, ...]] = {}  # label names → their indexes in sorted order


def _label_text(keys: tuple[str, ...], values: Sequence[str]) -> str:
    """`{k="v",…}` sorted by name (as prometheus_client writes them), values escaped."""
    if not keys:
        return ""
    order = _LABEL_ORDER.get(keys)
    if order is None:
        order = _LABEL_ORDER[keys] = tuple(sorted(range(len(keys)), key=keys.__getitem__))
    return "{" + ",".join([f'{keys[i]}="{_escape_label(values[i])}"' for i in order]) + "}"


_FIXED = len(names.SERIES_LABELS)
_TEMPLATES: dict[tuple[str, tuple[str, ...]], tuple[tuple[int, ...], tuple[str, ...]]] = {}


def _series_template(spec: names.MetricSpec, series: tuple[str, ...]) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """A series' sample line of `spec` up to its value, cut where the per-sample labels (window,
    position, …; never input, so never escaped) go: (their indexes in sorted order, the text around them).
    Built once per series and family, since sorting and escaping every label of every sample was
    most of a render."""
    key = (spec.name, series)
    template = _TEMPLATES.get(key)
    if template is None:
        if len(_TEMPLATES) > 100_000:  # series come and go: start over rather than grow without end
            _TEMPLATES.clear()
        order = sorted(range(len(spec.labels)), key=spec.labels.__getitem__)
        segments, current, variable = [], spec.sample_name + "{", []
        for n, index in enumerate(order):
            current += ("," if n else "") + f'{spec.labels[index]}="'
            if index < _FIXED:
                current += _escape_label(series[index]) + '"'
            else:
                segments.append(current)
                variable.append(index)
                current = '"'
        segments.append(current + "} ")
        template = _TEMPLATES[key] = (tuple(variable), tuple(segments))
    return template


def _sample_line(name: str, labels: dict[str, str], value: float) -> str:
    return f"{name}{_label_text(tuple(labels), tuple(labels.values()))} {floatToGoString(value)}\n"


def header(spec: names.MetricSpec) -> str:
    name = spec.sample_name
    kind = "counter" if spec.type == "counter" else "gauge"  # text format 0.0.4 has no info or stateset
    help_text = spec.help.replace("\\", "\\\\").replace("\n", "\\n")
    return f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"


class Lines:
    """Sample lines per family, in the order they were added."""

    def __init__(self) -> None:
        self.by_family: dict[str, list[str]] = {}

    def add(self, spec: names.MetricSpec, labels: list[str], value: float) -> None:
        if spec.labels[:_FIXED] == names.SERIES_LABELS:  # a series' own sample: its labels are templated
            fixed, segments = _series_template(spec, tuple(labels[:_FIXED]))
            line = segments[0]
            for index, segment in zip(fixed, segments[1:], strict=False):
                line += labels[index] + segment
        else:
            line = spec.sample_name + _label_text(spec.labels, labels) + " "
        self.by_family.setdefault(spec.name, []).append(f"{line}{floatToGoString(value)}\n")

    def info(self, spec: names.MetricSpec, labels: dict[str, str]) -> None:
        self.by_family.setdefault(spec.name, []).append(_sample_line(spec.name, labels, 1.0))

    def pieces(self) -> Owner:
        return {family: Piece("".join(lines).encode()) for family, lines in self.by_family.items()}
