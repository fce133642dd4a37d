"""Types only: every value that crosses a module boundary is defined here, once."""
