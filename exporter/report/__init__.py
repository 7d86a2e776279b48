"""Report: `analyze` — whole log files through the same pipeline into one offline report.

Enters: log paths (plain, .gz, stdin). Leaves: a report dict, rendered as a table, JSON, CSV or a plot.
May import: judge, state, intervals, parse, config, records. Never expose or cli.
"""
