"""`python -m exporter …` is `specdecode-exporter …`."""

from exporter.cli import main

main()
