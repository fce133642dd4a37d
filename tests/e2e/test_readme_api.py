"""The README's Python API example runs as written (on two of the sample documents)."""
from __future__ import annotations

import re

import pytest

from testkit import ROOT

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("prefect_harness")]


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("### Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_python_example_runs(docs, tmp_path, monkeypatch, capsys):
    code = readme_example().replace('"examples/docs"', repr(str(docs)))
    monkeypatch.chdir(tmp_path)  # Index.create(".citeline") lands in the temp folder
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.startswith("indexed 2, failed 0")
    assert re.search(r"^1 04-dropout\.md .* file://.*/04-dropout\.md#char=\d+,\d+$", out, re.M), out
    assert (tmp_path / ".citeline").is_dir()
