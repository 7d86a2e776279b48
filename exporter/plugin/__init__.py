"""The vLLM stat-logger plugin: exact spec-decode counts from inside vLLM, as JSON lines.

Runs in vLLM's API-server process, so it imports only the standard library (and vLLM, in
`stat_logger`). `records` is the format both sides share; the sidecar reads it with its log source.
"""
