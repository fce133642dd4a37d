"""Loads the suite's one plugin (tests/fixtures/testkit.py) for tests and doctests alike."""
pytest_plugins = ["testkit"]
