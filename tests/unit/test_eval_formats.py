"""``eval --formats``: a Markdown corpus rendered into other formats, evaluated and compared.

Plumbing runs on the deterministic fake embedder; what it shows is that each rendering
goes through the product's own extractors, that the needles survive (by the stated
rule) and that every citation of a needle chunk points where the needle really is.
"""
import json

import pytest
from click.testing import CliRunner
from fakes import HashEmbedder

from citeline.cli.eval_command import eval_command
from citeline.evaluation.dataset import load_corpus
from citeline.evaluation.formats import parse_formats, render, run_formats
from citeline.evaluation.harness import EvalConfig

NEEDLES = [
    ("n1", "a.md", "The zebra protocol retransmits every lost packet after exactly seven heartbeats.",
     "How often does the zebra protocol retransmit lost packets?", "zebra keeps resending, after how long?"),
    ("n2", "b.md", "Walrus indexes are rebuilt nightly from the granite ledger.",
     "How are walrus indexes rebuilt?", "walrus index rebuilt from what"),
]


PLACES = ["bridge", "harbour", "market", "library", "station", "garden", "tower", "museum", "school", "bakery"]
ACTS = ["opened", "closed", "was painted", "was rebuilt", "moved", "grew", "was sold", "flooded", "burned", "won a prize"]


def paragraph(word: str, n: int) -> str:
    """``n`` varied sentences (Whisper drops a window of near-identical ones as a repetition loop)."""
    return " ".join(f"The {word} {PLACES[(i * 7 + len(word)) % 10]} {ACTS[(i * 3 + len(word)) % 10]} "
                    f"in {1900 + 13 * i + len(word)}." for i in range(n))


def write_corpus(root, scale: int = 10):
    """Two documents, a needle in each; ``scale`` sets the filler (10: several PDF pages)."""
    docs = root / "docs"
    docs.mkdir(parents=True)
    texts = {
        "a.md": f"# Alpha protocols\n\n{paragraph('meadow', 3 * scale)}\n\n## Transport\n\n"
                f"{paragraph('river', scale)} {NEEDLES[0][2]} {paragraph('canyon', scale)}\n\n"
                f"{paragraph('forest', 4 * scale)}\n",
        "b.md": f"# Beta ledgers\n\n{paragraph('harbor', scale)}\n\n## Storage\n\n{NEEDLES[1][2]} "
                f"{paragraph('valley', 5 * scale)}\n",
    }
    for name, text in texts.items():
        (docs / name).write_text(text)
    with open(root / "ground_truth.jsonl", "w") as f:
        for nid, doc, needle, course, ticket in NEEDLES:
            f.write(json.dumps({"id": nid, "doc": doc, "needle": needle, "course": course, "ticket": ticket,
                                "char_start": texts[doc].index(needle)}) + "\n")
    with open(root / "out_of_domain.jsonl", "w") as f:
        f.write(json.dumps({"id": "o1", "query": "What is the capital of France?", "kind": "absurd"}) + "\n")
    return root


def test_parse_formats_puts_markdown_first_and_rejects_unknown_ones():
    assert parse_formats("scan,pdf,pdf") == ("md", "scan", "pdf")
    with pytest.raises(ValueError, match="unknown formats"):
        parse_formats("pdf,odt")


def test_pdf_and_scan_renderings_keep_every_needle_and_cite_its_page(tmp_path):
    corpus = load_corpus(write_corpus(tmp_path / "corpus"))
    config = EvalConfig(strategies=("E",), retrievers=("dense",), ks=(1, 4, 8, 20), precision="fp32")
    doc = run_formats(corpus, ("md", "pdf", "scan"), config, db_dir=tmp_path / "work", embedder=HashEmbedder())

    assert set(doc["formats"]) == {"md", "pdf", "scan"}
    for fmt, result in doc["formats"].items():
        assert result["config"]["format"] == fmt
        assert result["index"][0]["destroyed"] == 0, (fmt, result["index"][0]["destroyed_needles"])
    # The PDF and the scan are real renderings, read back by the product's extractors.
    assert sorted(p.name for p in (tmp_path / "work/render/pdf/docs").iterdir()) == ["a.pdf", "b.pdf"]
    for fmt in ("pdf", "scan"):
        check = doc["citations"][fmt]
        assert check["checked"] >= 2 and check["correct"] == check["checked"], check
    assert {c["format"] for c in doc["parity"]} == {"pdf", "scan"}
    assert {c["metric"] for c in doc["parity"]} == {"R@20", "MRR"}
    report = render(doc)
    assert "| scan | E/dense |" in report and "## Parity with Markdown" in report


def test_a_renderer_that_drops_the_needle_shows_as_destroyed(tmp_path, monkeypatch):
    """The rule must be able to fail: a PDF rendered without its transport section loses n1."""
    from citeline.evaluation import render as render_module

    original = render_module.render_pdf

    def lossy(name, markdown, **kw):
        return original(name, markdown.replace(NEEDLES[0][2], "Something else entirely."), **kw)

    monkeypatch.setattr(render_module, "render_pdf", lossy)
    corpus = load_corpus(write_corpus(tmp_path / "corpus"))
    config = EvalConfig(strategies=("E",), retrievers=("dense",), precision="fp32")
    doc = run_formats(corpus, ("pdf",), config, db_dir=tmp_path / "work", embedder=HashEmbedder())
    assert doc["formats"]["pdf"]["index"][0]["destroyed_needles"] == ["n1"]
    assert doc["formats"]["md"]["index"][0]["destroyed"] == 0


@pytest.mark.slow
def test_speech_rendering_is_transcribed_and_its_time_citations_hold(tmp_path):
    corpus = load_corpus(write_corpus(tmp_path / "corpus", scale=1))
    config = EvalConfig(strategies=("E",), retrievers=("dense",), precision="fp32")
    doc = run_formats(corpus, ("speech",), config, db_dir=tmp_path / "work", embedder=HashEmbedder())
    # tiny.en hears espeak's "Walrus indexes ... granite ledger" as "while the indexers ...
    # planet's lander": invented words are lost to recognition, the plain sentence is not.
    assert "n1" not in doc["formats"]["speech"]["index"][0]["destroyed_needles"]
    check = doc["citations"]["speech"]
    assert check["checked"] >= 1 and check["correct"] == check["checked"], check


def test_speech_is_rendered_at_whispers_16_khz_so_a_long_chapter_stays_under_max_bytes(tmp_path):
    """At espeak's 22,050 Hz the 43-minute dev chapter 01-probability was a 113 MB WAV,
    which the index refused (--max-bytes 100 MB) and the speech evaluation of dev failed."""
    import wave

    from citeline.evaluation.render import render_speech
    from citeline.schemas.settings import IndexSettings

    spans = render_speech("# Alpha\n\nBeta is here, in 1995.", tmp_path / "a.wav")
    with wave.open(str(tmp_path / "a.wav")) as clip:
        assert (clip.getframerate(), clip.getnchannels(), clip.getsampwidth()) == (16000, 1, 2)
        assert spans[-1].end == round(clip.getnframes() / 16000, 3)
    assert IndexSettings(db="x").max_bytes / (16000 * 2) / 60 > 50  # minutes of 16 kHz speech under the limit


def test_speech_documents_rendered_side_by_side_come_back_in_corpus_order(tmp_path):
    """Speech renders two documents at a time; each result is its own document's, in order."""
    import wave

    from citeline.evaluation.render import render_corpus

    docs = [(f"{name}.md", f"# {name}\n\n{sentence}") for name, sentence in
            [("zulu", "A long sentence about the zebra crossing the river at dawn, slowly and with care."),
             ("alpha", "Short one."), ("mike", "The middle document says something else entirely.")]]
    rendered = render_corpus("speech", docs, tmp_path / "docs")
    assert [r.source for r in rendered] == [name for name, _ in docs]
    for r, (_, markdown) in zip(rendered, docs):
        assert r.path.stem == r.source.removesuffix(".md")
        assert r.spans[-1].text in markdown
        with wave.open(str(r.path)) as clip:
            assert r.spans[-1].end == round(clip.getnframes() / 16000, 3)


def test_cli_writes_the_formats_report(tmp_path, monkeypatch):
    from citeline.evaluation import harness

    monkeypatch.setattr(harness, "load_embedder", lambda config: HashEmbedder())
    monkeypatch.setattr("citeline.evaluation.formats.load_embedder", lambda config: HashEmbedder())
    corpus = write_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    result = CliRunner().invoke(eval_command, [str(corpus), "--out", str(out), "--formats", "pdf",
                                               "--strategies", "E", "--retrievers", "dense", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "| pdf | E/dense |" in (out / "formats.md").read_text()
    assert (out / "recall_by_format.png").read_bytes().startswith(b"\x89PNG")
    assert json.loads((out / "formats.json").read_text())["parity"]


def test_the_report_counts_honest_answers_per_format_and_phrasing():
    def honest(answered):
        return {"answered": answered, "queries": 2, "refused": 2 - answered, "lost": 0, "found": answered,
                "bluffs": 1, "ood": 3, "share": answered / 2}

    def result(course, ticket):
        return {"runs": [], "gate_summary": [], "answered_honestly": [
            {"strategy": "E", "retriever": "dense", "all": {**honest(course + ticket), "queries": 4},
             "by_phrasing": {"course": honest(course), "ticket": honest(ticket)}}]}

    doc = {"formats": {"md": result(2, 1), "scan": result(1, 0)}, "parity": [], "citations": {},
           "timings": {}}
    report = render(doc)
    assert "## Answered honestly per format" in report
    assert "| md | E/dense | 2/2 | 1/2 | 3/4 | 0/3 | 1/3 |" in report
    assert "| scan | E/dense | 1/2 | 0/2 | 1/4 | 0/1 | 1/3 |" in report


def test_documents_narrow_every_format_and_a_narrower_run_renders_again(tmp_path, monkeypatch):
    """``--documents`` measures a subset (speech costs minutes per document), Markdown's baseline
    on the same subset; a reused --db-dir rendered for other documents is not searched."""
    from citeline.evaluation import harness

    monkeypatch.setattr(harness, "load_embedder", lambda config: HashEmbedder())
    monkeypatch.setattr("citeline.evaluation.formats.load_embedder", lambda config: HashEmbedder())
    corpus, work = write_corpus(tmp_path / "corpus"), tmp_path / "work"

    def run(*documents):
        out = tmp_path / f"out-{len(documents)}"
        narrowed = ["--documents", ",".join(documents)] if documents else []
        result = CliRunner().invoke(eval_command, [str(corpus), "--out", str(out), "--formats", "pdf",
                                                   "--strategies", "E", "--retrievers", "dense", "--no-progress",
                                                   "--db-dir", str(work), *narrowed])
        assert result.exit_code == 0, result.output
        return json.loads((out / "formats.json").read_text())["formats"]

    everything = run()
    assert {q["id"] for q in everything["pdf"]["runs"][0]["per_query"]} >= {"n1:course", "n2:course"}
    narrowed = run("b.md")
    for fmt in ("md", "pdf"):
        assert {q["id"].split(":")[0] for q in narrowed[fmt]["runs"][0]["per_query"]} == {"n2"}
        assert narrowed[fmt]["index"][0]["chunks"] < everything[fmt]["index"][0]["chunks"]
    assert sorted(p.name for p in (work / "render" / "pdf" / "docs").iterdir()) == ["b.pdf"]


def test_an_unknown_document_is_refused_with_the_known_ones(tmp_path):
    result = CliRunner().invoke(eval_command, [str(write_corpus(tmp_path / "corpus")), "--out", str(tmp_path / "o"),
                                               "--documents", "c.md", "--no-progress"])
    assert result.exit_code == 1 and "no document named 'c.md'" in result.output and "a.md, b.md" in result.output


def test_a_narrowed_markdown_evaluation_indexes_only_its_documents(tmp_path):
    from citeline.evaluation.harness import run_evaluation

    corpus = load_corpus(write_corpus(tmp_path / "corpus"))
    config = EvalConfig(strategies=("E",), retrievers=("dense",), precision="fp32")
    full = run_evaluation(corpus, config, db_dir=tmp_path / "full", embedder=HashEmbedder())
    narrow = run_evaluation(corpus.only(["b.md"]), config, db_dir=tmp_path / "narrow", embedder=HashEmbedder())
    assert {q["id"] for q in narrow["runs"][0]["per_query"]} == {"n2:course", "n2:ticket"}
    assert 0 < narrow["index"][0]["chunks"] < full["index"][0]["chunks"]


def test_a_needle_over_a_page_break_is_on_its_two_cited_pages(tmp_path):
    """Each page's text layer holds its running header and number, so the halves are apart."""
    import pymupdf

    from citeline.evaluation.formats import _page_wrong
    from citeline.evaluation.match import contains
    from citeline.evaluation.render import Rendered
    from citeline.schemas.locator import Page

    doc = pymupdf.open()
    for n, body in enumerate(["Intro text. In this case we cannot use an optimizer over", '"mini-batches" of data.'], 1):
        page = doc.new_page()
        page.insert_text((50, 40), "Gaussian Process Inference")
        page.insert_text((50, 100), body)
        page.insert_text((280, 800), str(n))
    (path := tmp_path / "gp.pdf").write_bytes(doc.tobytes())
    rendered, needle = Rendered("gp.md", path), 'we cannot use an optimizer over "mini-batches" of data.'

    def wrong(*pages):
        return _page_wrong(needle, [Page(p) for p in pages], rendered, None, "pdf", {}, contains)

    assert wrong(1, 2) is None
    assert wrong(1) == "not on the cited pages 1-1" and wrong(2) == "not on the cited pages 2-2"


def test_a_missing_program_stops_the_run_before_any_format_is_measured(tmp_path, monkeypatch):
    """espeak-ng absent: the first dev run of all six formats died at speech, the last one, after
    22 minutes of the other five, with a traceback and no report."""
    from citeline.evaluation import harness

    monkeypatch.setattr(harness, "load_embedder", lambda config: HashEmbedder())
    monkeypatch.setattr("citeline.evaluation.formats.load_embedder", lambda config: HashEmbedder())
    corpus = write_corpus(tmp_path / "corpus", scale=1)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # neither tesseract nor espeak-ng on it
    work = tmp_path / "work"
    result = CliRunner().invoke(eval_command, [str(corpus), "--out", str(tmp_path / "out"), "--db-dir", str(work),
                                               "--formats", "pdf,scan,speech", "--retrievers", "dense",
                                               "--no-progress"])
    assert result.exit_code == 1, result.output
    assert "tesseract, espeak-ng not installed" in result.output, result.output
    assert "apt-get install tesseract-ocr tesseract-ocr-eng espeak-ng" in result.output
    assert "Traceback" not in result.output and not (work / "index").exists()
