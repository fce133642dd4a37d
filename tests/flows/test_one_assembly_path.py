"""Each command is its library call, printed: `citeline X --json` and the `Index` method it
calls give the same result on the same index (the CLI parses, calls `Index`, and prints).

Writing commands run twice over the same folder, once through the CLI into one index and once
through `Index` into another, and their reports are compared; reading commands are compared
on one index. The fake embedder under the session's Prefect harness: this is plumbing.
"""
import json
import shutil
from dataclasses import asdict

import pytest
from click.testing import CliRunner

from citeline import Filters, Index
from citeline.cli.main import cli
from citeline.pipeline import embed
from citeline.pipeline.extractor_versions import extractor_versions
from fakes import FAKE, HashEmbedder

pytestmark = pytest.mark.usefixtures("prefect_harness")
OTHER = "fake/other-bag-of-words"  # a second model for reindex


def run_json(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args] + ["--json"])
    try:
        return result.exit_code, json.loads(result.stdout)
    except ValueError:
        raise AssertionError(f"not JSON (exit {result.exit_code}): {result.stdout!r}\n{result.stderr}") from None


def _folder(root):
    folder = root / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "dropout.md").write_text("# Dropout\n\nDropout zeroes random units during training only.\n\n"
                                       "## At test time\n\nAll units are kept and scaled.\n")
    (folder / "sub" / "adam.md").write_text("# Adam\n\nAdam keeps running averages of gradients and their squares.\n")
    (folder / "broken.md").write_bytes(b"caf\xe9 latin-1\x00\x01")
    return folder


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """The same folder indexed by `citeline index` into one index and by `Index.sync` into another."""
    root = tmp_path_factory.mktemp("twins")
    folder = _folder(root)
    code, report = run_json("index", folder, "--db", root / "by-cli", "--model", FAKE, "--no-progress")
    index = Index.create(str(root / "by-library"), model=FAKE)
    summary = index.sync(str(folder))
    return folder, root / "by-cli", index, code, report, summary


def _counts(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("in_words",)}


def as_json(value):
    """What ``value`` reads as once printed as JSON (tuples become lists)."""
    return json.loads(json.dumps(value))


def test_index_reports_what_index_sync_returns(twins):
    folder, _, _, code, report, summary = twins
    assert code == 3  # a document failed
    expected = asdict(summary)
    assert _counts(report["summary"]) == as_json({k: v for k, v in expected.items()
                                                  if k not in ("failures", "not_documents")})
    assert report["failures"] == as_json([asdict(f) for f in summary.failures])
    assert report["summary"]["in_words"] == summary.words()


def test_an_unchanged_sync_reports_the_same_both_ways(twins):
    folder, by_cli, index, *_ = twins
    code, report = run_json("index", folder, "--db", by_cli, "--no-progress")
    summary = index.sync(str(folder))
    assert code == 0 and summary.skipped == 3 - 1  # the broken file is still failing, not read again
    assert _counts(report["summary"]) == as_json({k: v for k, v in asdict(summary).items()
                                                  if k not in ("failures", "not_documents")})


@pytest.mark.parametrize("retriever", ["rerank", "dense", "bm25", "hybrid"])
def test_search_prints_index_search(twins, retriever):
    _, by_cli, *_ = twins
    code, report = run_json("search", "dropout during training", "--db", by_cli, "--retriever", retriever, "--local")
    expected = Index(str(by_cli)).search("dropout during training", 8, retriever)
    assert code == 0 and expected
    assert report["results"] == [c.to_dict() for c in expected]


def test_search_with_filters_prints_index_search_with_them(twins):
    _, by_cli, *_ = twins
    code, report = run_json("search", "gradients", "--db", by_cli, "--type", "md", "--path", "sub", "--local")
    expected = Index(str(by_cli)).search("gradients", 8, filters=Filters.parse(("sub",), ("md",), None))
    assert code == 0 and [c.path for c in expected] == ["sub/adam.md"]
    assert report["results"] == [c.to_dict() for c in expected]


@pytest.mark.parametrize("args, options", [
    (["--retriever", "dense", "--cut", "0.99"], {"retriever": "dense", "cut": 0.99}),
    (["--retriever", "rerank", "--cut", "0.99", "--cosine-weight", "0"],
     {"retriever": "rerank", "cut": 0.99, "cosine_weight": 0.0}),
    (["--retriever", "dense", "--cut", "0.0001"], {"retriever": "dense", "cut": 0.0001}),  # a refusal
])
def test_ask_prints_index_ask(twins, args, options):
    _, by_cli, *_ = twins
    code, report = run_json("ask", "when does dropout apply?", "--db", by_cli, *args, "--local")
    expected = Index(str(by_cli)).ask("when does dropout apply?", **options)
    assert code == 0
    assert report == as_json(expected.to_dict())


def test_check_chunks_and_status_print_the_library_s_answers(twins):
    _, by_cli, *_ = twins
    index = Index(str(by_cli))
    code, report = run_json("check", "--db", by_cli)
    assert (code, report) == (0, index.check().to_dict())
    code, report = run_json("chunks", "dropout.md", "--db", by_cli)
    assert code == 0 and report["chunks"] == [c.to_dict() for c in index.chunks("dropout.md")]
    code, report = run_json("status", "--db", by_cli)
    expected = index.status_report(extractor_versions())
    expected.pop("gate_line")
    assert code == 0 and report == as_json(expected)


def test_rm_reports_what_index_delete_removes(twins, tmp_path):
    folder, by_cli, index, *_ = twins
    cli_copy, library_copy = tmp_path / "cli", tmp_path / "library"
    shutil.copytree(by_cli, cli_copy)
    shutil.copytree(index.uri, library_copy)
    code, report = run_json("rm", "sub/adam.md", "--db", cli_copy)
    removal = Index(str(library_copy)).delete("sub/adam.md")
    assert code == 0 and removal.paths
    assert report["removed"] == list(removal.paths) and report["target"] == removal.target
    assert Index(str(cli_copy)).check().to_dict() == Index(str(library_copy)).check().to_dict()


def test_reindex_and_retry_report_what_the_library_returns(twins, tmp_path):
    folder, by_cli, index, *_ = twins
    cli_copy, library_copy = tmp_path / "cli", tmp_path / "library"
    shutil.copytree(by_cli, cli_copy)
    shutil.copytree(index.uri, library_copy)
    with embed.registered(OTHER, lambda precision, batch_size: HashEmbedder(OTHER, 32)):
        code, report = run_json("reindex", "--db", cli_copy, "--model", OTHER)
        library = Index(str(library_copy))
        summary = library.reindex(OTHER)
        assert code == 0 and summary.switched and library.model == OTHER
        assert report["state"] == "Completed"
        assert report["summary"] == as_json({k: v for k, v in asdict(summary).items() if k != "failures"})
        code, report = run_json("retry", "--db", cli_copy)
        retried = library.retry()
    assert code == 3 and report["failures"] == as_json([asdict(f) for f in retried.failures])
    assert [f["path"] for f in report["failures"]] == ["broken.md"]
