"""Loads the suite's one plugin (tests/fixtures/testkit.py) for tests and doctests alike."""
pytest_plugins = ["testkit"]

# A script, not a module of doctests: importing it registers the fake embedder at import time
# (so the extractor workers it spawns have it too), which the session fixture then registers
# a second time: every test of the run errored with DuplicateModel on CI's clean clone.
collect_ignore = ["tests/fixtures/fake_cli.py"]
