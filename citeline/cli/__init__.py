"""The command line: each command parses its options, calls the library (``citeline.Index``
or a flow), and prints. ``citeline.cli.main`` holds the group and the entry point."""
