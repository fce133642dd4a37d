"""Read-only commands import only what they use (issue 28, item 1): `status`, `check`,
`chunks` and `gc`, each run in a fresh interpreter through the console script's own
``main()``, never import the extractors (PyMuPDF …) or the embedding stack (torch,
sentence-transformers, transformers). Each of those costs a cold command a second or more
(docs/benchmarks.md, "Cold commands")."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from testkit import EXAMPLES, ROOT, synced_index

pytestmark = pytest.mark.usefixtures("prefect_harness")

FORBIDDEN = ("fitz", "pymupdf", "torch", "sentence_transformers", "transformers", "citeline.extractors")

# The CLI as `.venv/bin/citeline` runs it, then the forbidden modules it left in sys.modules.
RUN = """
import json, sys
from citeline.cli import main
forbidden = json.loads(sys.argv[1])
sys.argv = ["citeline", *sys.argv[2:]]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code or 0
print("LOADED " + json.dumps({"exit": code, "loaded": [m for m in forbidden if m in sys.modules]}))
"""


@pytest.fixture(scope="module")
def db(tmp_path_factory, prefect_harness) -> str:
    folder = tmp_path_factory.mktemp("docs")
    for name in ("04-dropout.md", "10-lr-scheduler.md"):
        shutil.copy(EXAMPLES / name, folder / name)
    return synced_index(folder, tmp_path_factory, indexed=2).uri


@pytest.mark.parametrize("command", [["status"], ["check"], ["chunks", "04-dropout.md"], ["gc"]], ids=" ".join)
def test_read_only_command_imports_no_extractor_and_no_model(db, command):
    done = subprocess.run([sys.executable, "-c", RUN, json.dumps(FORBIDDEN), *command, "--db", db],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("LOADED ")]
    assert line, done.stdout + done.stderr
    report = json.loads(line[-1].removeprefix("LOADED "))
    assert report["exit"] == 0, done.stdout + done.stderr
    assert report["loaded"] == [], f"`citeline {' '.join(command)}` imported {report['loaded']}"


def test_status_still_tells_current_rows_without_importing_the_extractors(db):
    """The versions read from the extractors' source are the ones their import registers."""
    from citeline import extractors
    from citeline.extractor_versions import _read_from_source

    assert _read_from_source() == {name: m.VERSION for name, m in extractors.registered().items()
                                   if m.__name__.startswith("citeline.extractors.")}
    done = subprocess.run([sys.executable, "-m", "citeline", "status", "--json", "--db", db],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    docs = json.loads(done.stdout)["documents"]
    assert len(docs) == 2 and all(d["current"] for d in docs), docs
