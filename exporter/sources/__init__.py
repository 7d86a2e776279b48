"""Sources: where raw text comes from — followed log files, stdin, scraped /metrics bodies.

Enters: paths, globs, target URLs, file events.
Leaves: bytes of whole lines to a LogConsumer, /metrics bodies to a ScrapeConsumer, and each
upstream's SourceHealth (up, rotations, errors), posted whole, to a HealthBoard (its one writer) —
all protocols, wired by the CLI.
May import: exporter.config, exporter.records, exporter.plugin.records, exporter.vocabulary. Never a later stage.
"""
