"""Parse: text into typed records — log envelopes, spec-decode lines, startup config, /metrics.

Enters: one line (or one /metrics body) as text; container framing (docker, CRI) is unwrapped here.
Leaves: ParsedSpecLine, EngineMarker, SpecConfig, LogEnvelope, ExpositionSnapshot; SpecLineError
with a reason for a line that looks like a spec line but cannot be used.
May import: exporter.config, exporter.records, exporter.plugin.records, exporter.vocabulary.
"""
