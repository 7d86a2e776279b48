"""The one catalogue (exporter/vocabulary.py): every reason, source kind and verdict state the code writes is in it.

Modules typed with its Literals are checked by mypy; the rest (plugin/, which must not import the
package, and the interval stage) are read here: each reason they write, as it is written in the
source, must be a word of the catalogue, and each word of the catalogue must be written somewhere.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from exporter import metric_names as names
from exporter.judge.verdict import STATES
from exporter.vocabulary import LOG_PROBLEMS, SCRAPE_PROBLEMS, SOURCE_KINDS, VERDICT_STATES, verdict_state

PACKAGE = Path(__file__).resolve().parent.parent / "exporter"
DATA_PATH = ("sources", "parse", "intervals", "state", "judge", "expose", "report", "cli", "plugin")
SCRAPE_MODULES = ("sources/scrape.py", "intervals/scrapes.py")
# call → which of its positional arguments is a problem reason
REASON_CALLS = {"SpecLineError": 0, "RecordError": 0, "ScrapeFailure": 0, "count_problem": 0, "ParseProblem": 1, "_problem": 1,
                "_failed": 1, "_count": 1, "refused": 2}  # _count(result.problems, reason, mask): intervals/batch.py; refused(upstream, line, reason): intervals/outcome.py
REASON_CONSTANTS = {"TRUNCATED", "UNRESOLVED", "TOO_LONG"}


def _strings(node: ast.AST) -> set[str]:
    """The words an expression can be: a literal, either branch of `a if c else b`, a `.get(key, default)`'s default."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _strings(node.body) | _strings(node.orelse)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and len(node.args) == 2:
        return _strings(node.args[1])
    return set()


def _is_problems(node: ast.AST) -> bool:
    """`problems` or `x.problems`: a Counter of problem reasons."""
    return (isinstance(node, ast.Name) and node.id == "problems") or (isinstance(node, ast.Attribute) and node.attr == "problems")


def _written(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(problem reasons, source kinds) written as string literals in a module."""
    reasons: set[str] = set()
    kinds: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else ""
            position = REASON_CALLS.get(called)
            counts_problems = called != "_count" or (bool(node.args) and _is_problems(node.args[0]))
            if position is not None and len(node.args) > position and counts_problems:
                reasons |= _strings(node.args[position])
            for keyword in node.keywords:
                if keyword.arg == "failure" and isinstance(keyword.value, ast.Tuple):
                    reasons |= _strings(keyword.value.elts[0])
                if keyword.arg == "kind":
                    kinds |= _strings(keyword.value)
                if keyword.arg == "problems" and isinstance(keyword.value, ast.IfExp | ast.Dict):  # ReadCounts(problems={reason: n} …)
                    for dict_node in (keyword.value.body, keyword.value.orelse) if isinstance(keyword.value, ast.IfExp) else (keyword.value,):
                        if isinstance(dict_node, ast.Dict):
                            reasons |= set().union(*(_strings(key) for key in dict_node.keys if key is not None))
        elif isinstance(node, ast.Subscript) and _is_problems(node.value):
            reasons |= _strings(node.slice)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = {t.id for t in targets if isinstance(t, ast.Name)}
            if node.value is not None and named & (REASON_CONSTANTS | {"reason"}):
                reasons |= _strings(node.value)
            if node.value is not None and "SOURCE_KIND" in named:
                kinds |= _strings(node.value)
    return reasons, kinds


def _scan() -> dict[str, tuple[set[str], set[str]]]:
    found = {}
    for stage in DATA_PATH:
        for path in sorted((PACKAGE / stage).rglob("*.py")):
            found[path.relative_to(PACKAGE).as_posix()] = _written(ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_every_problem_reason_written_is_in_the_catalogue_and_every_one_is_written() -> None:
    found = _scan()
    log_reasons = set().union(*(reasons for module, (reasons, _) in found.items() if module not in SCRAPE_MODULES))
    scrape_reasons = set().union(*(reasons for module, (reasons, _) in found.items() if module in SCRAPE_MODULES))
    assert log_reasons - set(LOG_PROBLEMS) == set()
    assert scrape_reasons - set(SCRAPE_PROBLEMS) == set()
    assert set(LOG_PROBLEMS) - log_reasons == set()  # no word without a writer
    assert set(SCRAPE_PROBLEMS) - scrape_reasons == set()


def test_every_source_kind_written_is_in_the_catalogue() -> None:
    kinds = set().union(*(kinds for _, kinds in _scan().values()))
    assert kinds and kinds <= set(SOURCE_KINDS)
    assert set(SOURCE_KINDS) <= kinds


def test_the_scan_sees_a_reason_outside_the_catalogue() -> None:
    reasons, kinds = _written(ast.parse('raise SpecLineError("misspelt_value", key)\nconsumers(up, kind="logs")'))
    assert reasons == {"misspelt_value"} and kinds == {"logs"}


def test_verdict_states_are_the_catalogues_in_the_exposition_order() -> None:
    assert STATES == VERDICT_STATES == ("ok", "wasteful", "degraded", "broken", "no_data")
    assert len(VERDICT_STATES) == names.HEALTH_STATES


def test_a_state_kept_as_text_is_read_back_or_refused() -> None:
    assert verdict_state("degraded") == "degraded"
    with pytest.raises(ValueError, match="not a verdict state"):
        verdict_state("sad")
