"""State: per-series counters, rolling windows, each series' reference (its memory of normal) and their persistence.

Enters: Interval and SampledValues records (the Store is the RecordSink the CLI hands out).
Leaves: immutable Snapshots (series totals per window, source health) for judge, expose, report.
May import: intervals, parse, sources, config, records.
"""
