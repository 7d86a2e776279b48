"""`python -m exporter …` is `specdecode-exporter …`."""

from exporter.cli.main import main

main()
