"""The HTTP app ``citeline api`` serves: the JSON API, the ask page and its static files."""
