"""The scalar/numpy twins: each rule that has a line form and a block form, and the one property test
that holds the pair equal.

A twin stays only where the block form is needed for speed (analyze's batch path); its two forms
sit side by side in one module where they belong to one stage, and the test named here is the
only place that says they agree. A rule written once (the two paths call the same arithmetic) is
no twin and is not listed. Adding a block form (`*_many`, `*_columns`) without a line here fails
`test_every_block_form_has_its_pair_and_its_test`.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]


class Twin(NamedTuple):
    line: str  # "module:qualified.name" of the form that takes one line / interval
    block: str  # the form that takes a block of them at once
    test: str  # "test_module::test_name": the property test that holds the pair equal


TWINS = (
    # intervals/: one module holds both forms
    Twin("exporter.intervals.reconstruct:reconstruct", "exporter.intervals.reconstruct:reconstruct_many",
         "test_batch_equivalence::test_reconstruct_many_equals_reconstruct_line_by_line"),
    Twin("exporter.intervals.clock:resolve_local", "exporter.intervals.clock:resolve_local_many",
         "test_clock::test_the_column_form_places_every_stamp_as_the_line_form_does"),
    Twin("exporter.intervals.clock:LogClock.local", "exporter.intervals.clock:LogClock.local_many",
         "test_batch_equivalence::test_batch_and_streaming_give_the_same_intervals"),  # resolve_local's pair, in the clock's modes
    Twin("exporter.intervals.clock:LogClock.place", "exporter.intervals.clock:LogClock.place_many",
         "test_clock::test_a_backlog_keeps_its_own_time_and_the_live_edge_takes_arrival"),
    # the line readers and the block path: the checks are one function (from_vllm.inconsistent_counts);
    # the sequence of a segment (engines, reconstruction, pinning, times, starts) is the block form
    Twin("exporter.intervals.from_vllm:VllmSpecReader.read", "exporter.intervals.batch:interpret_block",
         "test_batch_equivalence::test_batch_and_streaming_give_the_same_intervals"),
    Twin("exporter.intervals.pipeline:LogPipeline._interpret", "exporter.intervals.pipeline:LogPipeline._interpret_block",
         "test_batch_equivalence::test_analyze_reports_are_equal_both_ways"),
    # state/ and judge/: the forms live in their own stages' modules
    Twin("exporter.state.window:Totals.plus", "exporter.state.window:plus_columns",
         "test_remember::test_blocks_leave_the_memory_one_interval_at_a_time_leaves"),
    Twin("exporter.state.window:RollingWindow.add", "exporter.state.window:RollingWindow.add_columns",
         "test_remember::test_blocks_leave_the_memory_one_interval_at_a_time_leaves"),
    Twin("exporter.state.fold:fold", "exporter.state.fold:fold_block",  # what a window holds of a burst, one at a time or a block at once
         "test_fold::test_fold_block_holds_what_folding_one_at_a_time_holds"),
    Twin("exporter.state.health:HealthMemory.remember", "exporter.state.health:HealthMemory.remember_columns",
         "test_remember::test_blocks_leave_the_memory_one_interval_at_a_time_leaves"),
    Twin("exporter.state.load:LoadProfile.plus", "exporter.state.load:LoadProfile.plus_columns",
         "test_load::test_a_profile_of_columns_is_the_profile_of_its_intervals"),
    Twin("exporter.judge.verdict:judge", "exporter.judge.verdict_columns:judge_states",  # the thresholds: verdict.py's rules on arrays
         "test_remember::test_the_vectorised_verdict_is_the_verdict"),
    Twin("exporter.state.trace:Trace.add", "exporter.state.trace:Trace.add_columns",  # analyze's stretches (hindsight)
         "test_trace::test_blocks_leave_the_stretches_one_interval_at_a_time_leaves"),
)

# block forms that are no twin of a line form: the block scanner (its line form is the line parsers,
# held equal through interpret_block's test), the store's entry point for columns and the protocol
# it implements (they route to the twins above), a helper of a listed block form
NOT_TWINS = {
    "exporter.parse.vllm_block:scan_block", "exporter.intervals.pipeline:LogPipeline.consume_block",
    "exporter.sources.consumer:LogConsumer.consume_block", "exporter.intervals.columns:ColumnSink.record_columns",
    "exporter.state.store:Store.record_columns", "exporter.intervals.reconstruct:candidate_range_many",
    "exporter.state.remember:remember_columns"
}


def _resolve(name: str) -> object:
    module, _, qualified = name.partition(":")
    value: object = importlib.import_module(module)
    for part in qualified.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize("twin", TWINS, ids=lambda twin: twin.block.rpartition(":")[2])
def test_each_pair_exists_and_names_a_property_test(twin: Twin):
    pytest.importorskip("numpy")
    assert callable(_resolve(twin.line)) and callable(_resolve(twin.block))
    module, _, name = twin.test.partition("::")
    source = ast.parse((ROOT / "tests" / f"{module}.py").read_text(encoding="utf-8"))
    (test,) = [node for node in source.body if isinstance(node, ast.FunctionDef) and node.name == name]
    given = [d for d in test.decorator_list if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "given"]
    # a property test over generated inputs, or one that names both forms it compares
    assert given or {twin.line.rpartition(".")[2], twin.block.rpartition(".")[2]} <= {n.attr for n in ast.walk(test) if isinstance(n, ast.Attribute)}


def _block_forms() -> set[str]:
    """Every public `*_many` / `*_columns` / `*_block` function or method in the data path."""
    found = set()
    for path in sorted((ROOT / "exporter").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if module.startswith(("exporter.mixin", "exporter.simulate")):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        scopes: list[tuple[str, list[ast.stmt]]] = [("", tree.body)]
        scopes += [(node.name + ".", node.body) for node in tree.body if isinstance(node, ast.ClassDef)]
        for prefix, body in scopes:
            for node in body:
                named = isinstance(node, ast.FunctionDef) and node.name.lstrip("_").endswith(("_many", "_columns", "_block"))
                if named and (prefix or not node.name.startswith("_")):  # a private helper of a module is its block form's part
                    found.add(f"{module}:{prefix}{node.name}")
    return found


def test_every_block_form_has_its_pair_and_its_test():
    listed = {twin.block for twin in TWINS} | NOT_TWINS
    assert _block_forms() - listed == set(), "a block form without its line form and property test in TWINS"
    pytest.importorskip("numpy")
    assert all(callable(_resolve(name)) for name in NOT_TWINS)  # no stale entry
