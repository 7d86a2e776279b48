"""Judge: pure math over window totals — derived rates, the cost model, the verdict, advice.

Enters: Totals and SeriesSnapshots from state; DeriveSettings (thresholds, costs) from config.
Leaves: Derived values, a Verdict (state, reason code, sentence), cross-checks between sources,
and check-config findings for a drafter's config.json. derive.py is pure: no I/O, no clock.
May import: state, intervals (draft_length), config, records, vocabulary.
"""
