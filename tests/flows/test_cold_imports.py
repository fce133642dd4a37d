"""Read-only commands import only what they use: `status`, `check`,
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

from testkit import EXAMPLES, ROOT, probe_cli, synced_index
from citeline.extractors import BUILTINS

pytestmark = pytest.mark.usefixtures("prefect_harness")

# The package itself (its registry and pure helpers) is cheap; its extractors are not.
FORBIDDEN = ("fitz", "pymupdf", "openpyxl", "torch", "sentence_transformers", "transformers", "pytesseract",
             "botocore.session", *(f"citeline.extractors.{name}" for name in BUILTINS))


@pytest.fixture(scope="module")
def synced(tmp_path_factory, prefect_harness) -> tuple[str, str]:
    """(folder, index) synced once."""
    folder = tmp_path_factory.mktemp("docs")
    for name in ("04-dropout.md", "10-lr-scheduler.md"):
        shutil.copy(EXAMPLES / name, folder / name)
    return str(folder), synced_index(folder, tmp_path_factory, indexed=2).uri


@pytest.fixture(scope="module")
def db(synced) -> str:
    return synced[1]


@pytest.mark.parametrize("command", [["status"], ["check"], ["chunks", "04-dropout.md"], ["gc"]], ids=" ".join)
def test_read_only_command_imports_no_extractor_and_no_model(db, command):
    report = probe_cli([*command, "--db", db], FORBIDDEN, timeout=120)
    assert report.exit == 0, report.stdout
    assert report.imported == [], f"`citeline {' '.join(command)}` imported {report.imported}"


def test_status_still_tells_current_rows_without_importing_the_extractors(db):
    """The versions read from the extractors' source are the ones their import registers."""
    from citeline import extractors
    from citeline.pipeline.extractor_versions import _read_from_source

    assert _read_from_source() == {name: m.VERSION for name, m in extractors.registered().items()
                                   if m.__name__.startswith("citeline.extractors.")}
    done = subprocess.run([sys.executable, "-m", "citeline", "status", "--json", "--db", db],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    docs = json.loads(done.stdout)["documents"]
    assert len(docs) == 2 and all(d["current"] for d in docs), docs


@pytest.mark.parametrize("server", [True, False], ids=["PREFECT_API_URL set", "no Prefect server"])
def test_a_sync_with_nothing_changed_imports_no_extractor_no_model_and_no_prefect(synced, cli_env, server):
    """A scheduled sync of an unchanged folder reads no file, so it needs no extractor: importing
    them (PyMuPDF, lxml, Pillow ...) was ~1 s of CPU of every such run (docs/benchmarks.md). It
    runs no flow either: without a server, arming the signal handlers imported Prefect's server
    module to detach a temporary server that never started (a no-op sync 1.1 → 4.2 s)."""
    folder, db = synced
    env = cli_env if server else {k: v for k, v in cli_env.items() if k != "PREFECT_API_URL"}
    report = probe_cli(["index", folder, "--db", db, "--no-progress"], (*FORBIDDEN, "prefect"), env, fake=True)
    assert report.exit == 0 and "indexed 0, failed 0, skipped 2" in report.stdout, report.stdout
    assert report.imported == [], f"a no-op sync imported {report.imported}"


@pytest.mark.parametrize("command", [["ask", "Why does dropout only apply during training?"], ["search", "dropout"]],
                         ids=lambda c: c[0])
def test_a_question_imports_no_extractor_and_no_model(db, command, cli_env):
    """`ask` names the cell a table quote answers with citeline.extractors.tables' rules; that
    import loaded every extractor (PyMuPDF, lxml ...: ~0.9 s of a cold ask) until the registry
    loaded its built-ins on first use."""
    report = probe_cli([*command, "--db", db], FORBIDDEN, cli_env, fake=True)
    assert report.exit == 0 and "04-dropout.md" in report.stdout, report.stdout
    assert report.imported == [], f"`citeline {command[0]}` imported {report.imported}"


def test_a_sync_of_a_markdown_note_leaves_the_binary_parsers_to_the_worker_that_reads_them(synced, cli_env,
                                                                                          tmp_path):
    """Reading a note loads the registry, which imports every extractor module for its suffixes and
    magic bytes; PyMuPDF and openpyxl themselves are imported where a PDF or a workbook is read, in
    the isolated worker (0.4 s and 0.06 s of a sync that reads any file before; docs/benchmarks.md, "The
    exit, and PyMuPDF left to the PDF worker" and "A rename's floor")."""
    folder = tmp_path / "notes"
    shutil.copytree(synced[0], folder)
    (folder / "harbour.md").write_text("# Harbour\n\nThe committee meets at the old pier.\n")
    report = probe_cli(["index", str(folder), "--db", str(tmp_path / "db"), "--no-progress"], FORBIDDEN, cli_env,
                       fake=True)
    assert report.exit == 0 and "indexed 3, failed 0" in report.stdout, report.stdout
    assert "citeline.extractors.pdf" in report.imported  # the registry did load: the check below means something
    assert not {"pymupdf", "fitz", "openpyxl"} & set(report.imported), report.imported


def test_the_library_imports_no_entry_point_and_loads_nothing_heavy():
    """``from citeline import Index`` is a library's import: no click (the CLI), no FastAPI (the
    HTTP app), no Prefect, no model until a method needs one."""
    code = ("import sys; from citeline import Index; Index; import citeline.library; "
            "print([m for m in ('click', 'fastapi', 'prefect', 'torch', 'citeline.cli', 'citeline.web') "
            "if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
