"""``citeline api`` refuses to listen beyond loopback without a token, before loading anything."""
from __future__ import annotations

import pytest

from testkit import invoke


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.org"])
def test_a_non_loopback_bind_needs_a_token(host, monkeypatch):
    monkeypatch.delenv("CITELINE_API_TOKEN", raising=False)
    result = invoke("api", "--host", host, "--db", "/nonexistent/index")
    assert result.exit_code == 2
    assert "set --token or CITELINE_API_TOKEN" in result.output


def test_api_has_help():
    result = invoke("api", "--help")
    assert result.exit_code == 0 and "--token" in result.output and "127.0.0.1" in result.output
