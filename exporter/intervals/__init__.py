"""Intervals: parsed records into Interval records, the common currency of the data path.

Enters: bytes from a source (LogPipeline, ScrapeInterpreter), parsed lines and counter sets.
Leaves: Interval, SampledValues and SpecConfig to a RecordSink (the store), plus what each read
counted (ReadCounts: the one writer of an upstream's counts). Log lines are reconstructed
(reconstruct.py states its error bound); /metrics counters become deltas (from_scrape.py: resets never become spikes).
May import: sources (framing helpers), parse, config, records, plugin.records.
"""
