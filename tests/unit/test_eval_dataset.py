"""Loading a corpus folder, and the errors a malformed one gets."""
import json

import pytest

from citeline.evaluation.dataset import DatasetError, load_corpus

DOC = "# Title\n\nSome intro.\n\n## Part\n\nThe answer sentence is here. More text.\n"
NEEDLE = "The answer sentence is here."


def make(tmp_path, gt=None, ood=None, docs=None):
    root = tmp_path / "corpus"
    (root / "docs").mkdir(parents=True)
    for name, text in (docs or {"01-a.md": DOC}).items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    gt = gt if gt is not None else [{"id": "q01", "doc": "01-a.md", "needle": NEEDLE, "course": "Where is the answer?",
                                     "ticket": "cant find it", "char_start": DOC.index(NEEDLE)}]
    ood = ood if ood is not None else [{"id": "o01", "query": "capital of France?", "kind": "absurd"}]
    for name, lines in (("ground_truth.jsonl", gt), ("out_of_domain.jsonl", ood)):
        (root / name).write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return root


def test_loads_and_counts(tmp_path):
    corpus = load_corpus(make(tmp_path))
    assert corpus.counts() == {"name": "corpus", "documents": 1, "characters": len(DOC), "needles": 1,
                               "queries": 2, "ood": 1, "ood_kinds": {"adjacent": 0, "absurd": 1}}
    assert [(q.id, q.phrasing) for q in corpus.queries] == [("q01:course", "course"), ("q01:ticket", "ticket")]
    assert corpus.queries[1].text == "cant find it" and corpus.queries[1].needle == NEEDLE


def test_dev_corpus_loads():
    from pathlib import Path

    dev = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "dev"
    if not dev.is_dir():
        pytest.skip("the shared dev corpus is not present")
    counts = load_corpus(dev).counts()
    assert (counts["needles"], counts["queries"], counts["ood"]) == (32, 64, 30)


GOOD = {"id": "q01", "doc": "01-a.md", "needle": NEEDLE, "course": "c", "ticket": "t", "char_start": DOC.index(NEEDLE)}


@pytest.mark.parametrize("gt, ood, message", [
    (["{not json"], None, r"ground_truth.jsonl:1: not valid JSON"),
    (["[1, 2]"], None, "expected a JSON object"),
    ([{k: v for k, v in GOOD.items() if k != "ticket"}], None, "missing field 'ticket'"),
    ([{**GOOD, "char_start": "12"}], None, "'char_start' must be int"),
    ([{**GOOD, "course": "  "}], None, "'course' is empty"),
    ([{**GOOD, "char_start": 0}], None, "not at char_start 0 of 01-a.md; it occurs at"),
    ([{**GOOD, "needle": "Not in the text.", "char_start": 0}], None, "does not occur"),
    ([{**GOOD, "doc": "99-x.md"}], None, "'99-x.md' is not in docs/"),
    ([GOOD, GOOD], None, r"duplicate ids \['q01'\]"),
    ([], None, "holds no needles"),
    (None, [{"id": "o1", "query": "q", "kind": "weird"}], "kind must be one of"),
])
def test_errors_name_the_problem(tmp_path, gt, ood, message):
    with pytest.raises(DatasetError, match=message):
        load_corpus(make(tmp_path, gt=gt, ood=ood))


def test_needle_must_be_unique_in_the_corpus(tmp_path):
    with pytest.raises(DatasetError, match="occurs 2 times"):
        load_corpus(make(tmp_path, docs={"01-a.md": DOC, "02-b.md": DOC}))


def test_missing_pieces(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        load_corpus(tmp_path / "nowhere")
    root = make(tmp_path)
    (root / "out_of_domain.jsonl").unlink()
    with pytest.raises(DatasetError, match="missing file .*out_of_domain.jsonl"):
        load_corpus(root)
    for f in (root / "docs").iterdir():
        f.unlink()
    with pytest.raises(DatasetError, match="holds no documents"):
        load_corpus(root)
