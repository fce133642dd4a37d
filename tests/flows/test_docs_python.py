"""Every Python block of the reference docs runs as written, from the folder holding the index
as `.citeline` (the README's own block runs with the real model: tests/e2e/test_readme_api.py).
The fake embedder: this checks that the code is today's API, not what it retrieves."""
from __future__ import annotations

import json
import re

import pytest

from citeline import Index
from fakes import FAKE
from testkit import REFERENCE_DOCS, ROOT

pytestmark = pytest.mark.usefixtures("prefect_harness")
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks() -> list[tuple[str, int, str]]:
    """(doc, line, code) of each Python block of the reference docs but the README."""
    found = []
    for doc in REFERENCE_DOCS:
        if doc == "README.md":
            continue
        text = (ROOT / doc).read_text()
        for match in _BLOCK.finditer(text):
            found.append((doc, text.count("\n", 0, match.start()) + 1, match.group(1)))
    return found


def test_the_docs_have_python_blocks_to_run():
    assert python_blocks(), "no Python block found: the pattern or the docs changed"


@pytest.mark.parametrize("doc, line, code", python_blocks(), ids=lambda v: str(v)[:30])
def test_a_python_block_of_the_docs_runs(doc, line, code, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "dropout.md").write_text("# Dropout\n\nDropout zeroes out random units during training only; "
                                       "at test time every unit is kept and scaled.\n")
    assert Index.create(str(tmp_path / ".citeline"), model=FAKE).sync(str(folder)).indexed == 1
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{doc}:{line}", "exec"), {})
    printed = capsys.readouterr().out
    if "json.dumps" in code:  # what it prints is the answer or refusal it says it is
        answer = json.loads(printed)
        assert answer["query"] == "What does dropout zero out?" and ("citations" in answer or "refusal" in answer)
