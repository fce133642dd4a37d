"""The evaluate flow under a real Prefect server, with the real embedding model, on a tiny corpus."""
import json

import pytest

from flows.evaluate import ARTIFACT_KEY, evaluate

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("prefect_harness")]

NEEDLES = {
    "n1": "Dropout zeroes each hidden unit with probability p during training only.",
    "n2": "Batch normalization rescales activations with statistics of the current minibatch.",
}


def tiny_corpus(root):
    text = (
        "# Regularization notes\n\nSome words about models and how they are trained.\n\n"
        f"## Dropout\n\n{NEEDLES['n1']} At test time nothing is dropped.\n\n"
        f"## Normalization\n\n{NEEDLES['n2']} It was introduced in 2015.\n"
    )
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "01-notes.md").write_text(text)
    questions = {"n1": ("What does dropout do to hidden units?", "why do my neurons get switched off in training"),
                 "n2": ("What statistics does batch normalization use?", "batchnorm uses which numbers")}
    with open(root / "ground_truth.jsonl", "w") as f:
        for nid, needle in NEEDLES.items():
            f.write(json.dumps({"id": nid, "doc": "01-notes.md", "needle": needle, "course": questions[nid][0],
                                "ticket": questions[nid][1], "char_start": text.index(needle)}) + "\n")
    (root / "out_of_domain.jsonl").write_text(
        json.dumps({"id": "o1", "query": "What is the capital of France?", "kind": "absurd"}) + "\n")
    return root


def test_evaluate_flow_publishes_the_report(tmp_path):
    from prefect.artifacts import Artifact

    root = tiny_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    state = evaluate(str(root), str(out), strategies=["A", "E"], retrievers=["dense", "bm25", "hybrid"],
                     return_state=True)
    assert state.is_completed()
    results = state.result()
    assert [(r["strategy"], r["retriever"]) for r in results["runs"]] == [
        (s, r) for s in "AE" for r in ("dense", "bm25", "hybrid")]
    # Two short sections: every chunk holds its needle whole, and dense finds both at depth 20.
    assert all(e["destroyed"] == 0 for e in results["index"])
    assert all(r["recall"]["20"] == 1.0 for r in results["runs"] if r["retriever"] == "dense")
    assert results["index"][1]["header_tokens"] > 0 and results["recommended_cut"] is not None
    report = (out / "report.md").read_text()
    assert "## Recall@k and MRR" in report and (out / "results.json").is_file()
    artifact = Artifact.get(ARTIFACT_KEY)
    assert artifact is not None and "## Refusal gate" in artifact.data
