"""Writers of the versioned vLLM fixture logs (scripts/make_version_fixtures.py)."""
