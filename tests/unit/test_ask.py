"""citeline ask without a model: thresholds, the gate over hits, orchestration, JSON shape, CLI errors."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from citeline.cli.ask_command import ask as ask_command
from citeline.query.ask import Answer, AskOptions, apply_gate, ask, generate
from citeline.query.thresholds import COSINE_CUTS, GateQuery, Uncalibrated, cosine_cut, sweep
from citeline.schemas.errors import CitelineError
from citeline.schemas.retrieval import CLOSEST_NOTE, ChunkRow, Hit, Refusal
from citeline.schemas.stamp import IndexStamp

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
JSON_KEYS = ["query", "refused", "threshold", "gate", "citations", "prompt", "closest"]
CITATION_KEYS = ["index", "document_id", "document", "label", "fragment", "quote", "distance", "rerank_score",
                 "chunk_id", "path", "start", "end", "uri", "highlight"]


def hit(i, distance, rerank_score=None):
    content = f"Sentence number {i} of the document."
    chunk = ChunkRow(f"c{i}", "d1", "notes.md", "Notes", f"Part {i}", 100 * i, 100 * i + len(content), content, "")
    retriever = "dense" if rerank_score is None else "rerank"
    return Hit(f"c{i}", i, distance, retriever, chunk, distance=distance, rerank_score=rerank_score)


class UncalibratedStore:
    """An index whose gate was never calibrated (built before calibration existed)."""

    def calibration(self, table=None):
        return None


class FakeSearcher:
    """The slice of Searcher that ask() uses, with canned hits."""

    def __init__(self, hits, model=MINILM):
        self.hits, self.stamp, self.calls = hits, IndexStamp(model, 384), []
        self.store = UncalibratedStore()

    def search(self, query, retriever, k, filters=None):
        self.calls.append(("search", retriever, k))
        return self.hits[:k]

    def rerank(self, query, k, candidates, depth, filters=None):
        self.calls.append(("rerank", candidates, k, depth))
        return self.hits[:k]

    def dense(self, query, k, filters=None):
        self.calls.append(("dense", k))
        return sorted(self.hits, key=lambda h: h.distance)[:k]

    def fill_distances(self, query, hits):
        self.calls.append(("fill",))
        return list(hits)

    def calibration(self):
        return self.store.calibration()

    def default_reranker(self):
        class R:
            name = "maxsim"
        return R()


class FakeClient:
    def __init__(self, reply):
        self.reply, self.prompts = reply, []

    def complete(self, prompt):
        self.prompts.append(prompt)
        return self.reply


# ---- thresholds ------------------------------------------------------------------------------


def test_the_cut_is_calibrated_per_embedding_model():
    assert cosine_cut(MINILM) == COSINE_CUTS[MINILM]
    assert 0.35 <= cosine_cut(MINILM) <= 0.75


def test_a_model_without_a_calibrated_cut_borrows_none():
    with pytest.raises(Uncalibrated) as info:
        cosine_cut("/models/some-other-encoder")
    assert isinstance(info.value, CitelineError)
    assert any("--cut" in note for note in info.value.__notes__)


def test_sweep_counts_bluffs_and_lost_answers():
    in_domain = [GateQuery((0.30, 0.50), (False, True), True),  # answer at 0.50
                 GateQuery((0.40, 0.70), (True, False), True),  # answer at 0.40
                 GateQuery((0.60,), (False,), True)]  # answer not retrieved: not answerable
    out_of_domain = [GateQuery((0.45, 0.8), (False, False), False), GateQuery((0.65,), (False,), False)]
    tight, loose = sweep(in_domain + out_of_domain, [0.45, 0.7])
    assert (tight.bluffs, tight.lost, tight.answerable, tight.refused_in_domain) == (0, 1, 2, 1)
    assert (loose.bluffs, loose.lost, loose.refused_in_domain) == (2, 0, 0)
    scores = sweep([GateQuery((0.7,), (True,), True), GateQuery((0.5,), (False,), False)], [0.6], "rerank")[0]
    assert (scores.bluffs, scores.lost) == (0, 0)


# ---- the gate over hits -------------------------------------------------------------------


def test_gate_keeps_at_most_k_hits_strictly_under_the_cut_in_order():
    hits = [hit(1, 0.30), hit(2, 0.50), hit(3, 0.20), hit(4, 0.10), hit(5, 0.40), hit(6, 0.05)]
    kept = apply_gate(hits, "q", cut=0.45, k=4)
    assert kept == [hits[0], hits[2], hits[3], hits[4]]  # the same hits, untouched
    assert [h.chunk_id for h in apply_gate(hits, "q", cut=0.30, k=4)] == ["c3", "c4", "c6"]


def test_gate_refuses_with_the_cut_in_the_message():
    refusal = apply_gate([hit(1, 0.8), hit(2, 0.45)], "capital of France?", cut=0.45)
    assert refusal == Refusal("capital of France?", 0.45, "cosine", 0.45)
    assert refusal.message() == 'NO ANSWER: nothing under cosine distance 0.45 for "capital of France?"'
    assert isinstance(apply_gate([], "q", cut=0.5), Refusal)


def test_the_rerank_gate_applies_after_the_cosine_gate():
    hits = [hit(1, 0.2, 0.40), hit(2, 0.3, 0.70), hit(3, 0.9, 0.95)]
    assert [h.chunk_id for h in apply_gate(hits, "q", 0.5, min_rerank_score=0.5)] == ["c2"]
    refusal = apply_gate(hits, "q", 0.5, min_rerank_score=0.8)  # c3 scores high but is too far
    assert refusal.kind == "rerank" and refusal.best == 0.70
    assert refusal.message() == 'NO ANSWER: nothing over rerank score 0.8 for "q"'
    with pytest.raises(ValueError, match="reranked rows"):
        apply_gate([hit(1, 0.2)], "q", 0.5, min_rerank_score=0.1)


def test_a_table_chunk_is_gated_by_the_table_cut_and_prose_by_the_cut():
    from dataclasses import replace

    table = hit(1, 0.55)
    table = replace(table, chunk=replace(table.chunk, content="region | share\nNorth | 41%\nSouth | 23%"))
    prose = hit(2, 0.50)
    assert [h.chunk_id for h in apply_gate([table, prose], "q", 0.45, table_cut=0.6)] == ["c1"]
    assert isinstance(apply_gate([table, prose], "q", 0.45), Refusal)  # no table cut: one cut for all
    assert isinstance(apply_gate([table], "q", 0.45, table_cut=0.55), Refusal)  # strictly under it


def test_a_hit_without_a_distance_is_never_gated_as_if_it_had_one():
    bm25_only = Hit("c1", 1, 7.5, "bm25", hit(1, 0.1).chunk)  # BM25 score, distance not filled
    with pytest.raises(ValueError, match="'bm25' hit 'c1' carries no cosine distance"):
        apply_gate([bm25_only], "q", 0.5)


# ---- orchestration -------------------------------------------------------------------------


def test_ask_cites_the_hits_that_pass_and_builds_the_prompt():
    searcher = FakeSearcher([hit(1, 0.30, 0.6), hit(2, 0.60, 0.5), hit(3, 0.20, 0.4)])
    answer = ask(searcher, "What is in part 3?", AskOptions(k=4))
    assert searcher.calls == [("rerank", None, 4, None), ("dense", 4)]  # the default: the searcher's own rerank config
    assert not answer.refused and answer.threshold == cosine_cut(MINILM)
    assert [c.index for c in answer.citations] == [1, 2]
    assert [c.chunk_id for c in answer.citations] == ["c1", "c3"]
    first = answer.citations[0]
    assert (first.fragment, first.label, first.document) == ("#char=100,134", "Notes > Part 1", "notes.md")
    assert first.quote == hit(1, 0).chunk.content and first.rerank_score == 0.6
    assert answer.prompt.startswith("Answer using ONLY the numbered sources below. Cite every claim as [n].\n")
    assert "[2] notes.md - Notes > Part 3\n> Sentence number 3 of the document.\n" in answer.prompt
    assert answer.prompt.endswith("QUESTION\nWhat is in part 3?\n")


def test_ask_json_shape_is_exact():
    answer = ask(FakeSearcher([hit(1, 0.2, 0.5)]), "q?", AskOptions(retriever="dense", cut=0.5))
    data = answer.to_dict()
    assert list(data) == JSON_KEYS
    assert list(data["citations"][0]) == CITATION_KEYS
    assert data["refused"] is False and data["threshold"] == 0.5
    json.dumps(data)


def test_a_refused_question_has_no_prompt_and_never_reaches_the_model():
    client = FakeClient("should not be called")
    answer = ask(FakeSearcher([hit(1, 0.9), hit(2, 0.8)]), "absurd?", AskOptions(retriever="dense", cut=0.45))
    assert answer.refused and answer.prompt is None and answer.citations == ()
    assert generate(answer, client) is answer and client.prompts == []
    data = answer.to_dict()
    assert {k: data[k] for k in JSON_KEYS[:-1]} == {"query": "absurd?", "refused": True, "threshold": 0.45,
                                                    "gate": "cosine", "citations": [], "prompt": None}
    # the reason, as POST /ask gives it: the CLI's --json and the service print one object
    assert data["refusal"] == {**answer.refusal.to_dict(), "kind": "cosine", "best": 0.8, "terms": []}


def test_a_refusal_shows_the_closest_passages_marked_as_not_an_answer():
    answer = ask(FakeSearcher([hit(1, 0.9), hit(2, 0.8), hit(3, 0.95)]), "near miss?",
                 AskOptions(retriever="dense", cut=0.45, k=2))
    assert answer.refused and answer.prompt is None and answer.citations == ()
    # the retriever's first k, in its order, cited like sources (same fields, distance, locator)
    assert [c.chunk_id for c in answer.closest] == ["c1", "c2"]
    assert [c.distance for c in answer.closest] == [0.9, 0.8] and answer.closest[0].fragment.startswith("#char=")
    data = answer.to_dict()
    assert [list(c) for c in data["closest"]] == [CITATION_KEYS] * 2
    for c in data["closest"]:  # the line that answers: a canonical range inside the quote's, its own #char=
        line = c["highlight"]
        assert c["start"] <= line["start"] < line["end"] <= c["end"], (c, line)
        assert line["text"] == c["quote"][line["start"] - c["start"]:line["end"] - c["start"]] != ""
        assert line["fragment"] == f"#char={line['start']},{line['end']}"
    assert data["closest_note"] == "closest passages, below the confidence cut — check them yourself"
    answered = ask(FakeSearcher([hit(1, 0.2)]), "q?", AskOptions(retriever="dense", cut=0.5))
    assert answered.closest == () and answered.to_dict()["closest"] == [] and "closest_note" not in answered.to_dict()


def test_an_answer_shows_what_the_gate_cut_as_closest_passages_numbered_after_the_sources():
    """The sources may be the wrong passages; the right one just over the cut stays in reach,
    marked, and never reaches the prompt."""
    answer = ask(FakeSearcher([hit(1, 0.6), hit(2, 0.3), hit(3, 0.7), hit(4, 0.2), hit(5, 0.1)]), "q?",
                 AskOptions(retriever="dense", cut=0.45, k=4))
    assert [(c.index, c.chunk_id) for c in answer.citations] == [(1, "c2"), (2, "c4")]
    assert [(c.index, c.chunk_id) for c in answer.closest] == [(3, "c1"), (4, "c3")]  # the first k, c5 beyond it
    assert "Sentence number 1 " not in answer.prompt and "Sentence number 2 " in answer.prompt
    data = answer.to_dict()
    assert [c["chunk_id"] for c in data["closest"]] == ["c1", "c3"] and data["closest_note"] == CLOSEST_NOTE
    assert data["refused"] is False and len(data["citations"]) == 2


def test_the_cli_prints_the_closest_passages_under_a_refusal():
    from citeline.cli.ask_command import _print

    answer = ask(FakeSearcher([hit(1, 0.9)]), "near miss?", AskOptions(retriever="dense", cut=0.45))
    result = CliRunner().invoke(click_command(lambda: _print(answer, False)))
    lines = result.output.splitlines()
    assert lines[0] == 'NO ANSWER: nothing under cosine distance 0.45 for "near miss?"'
    assert lines[2] == "NOT AN ANSWER: closest passages, below the confidence cut — check them yourself"
    assert lines[3].startswith("[1] notes.md") and "distance 0.900" in lines[3]
    assert lines[4].strip() == "Sentence number 1 of the document."


def test_the_cli_prints_the_cut_passages_after_the_sources_of_an_answer():
    from citeline.cli.ask_command import _print

    answer = ask(FakeSearcher([hit(1, 0.9), hit(2, 0.3)]), "q?", AskOptions(retriever="dense", cut=0.45))
    lines = CliRunner().invoke(click_command(lambda: _print(answer, False))).output.splitlines()
    assert lines[0] == "SOURCES (1 under cosine distance 0.45)" and lines[1].startswith("[1] notes.md")
    assert lines[4] == f"NOT AN ANSWER: {CLOSEST_NOTE}"
    assert lines[5].startswith("[2] notes.md") and "distance 0.900" in lines[5]
    assert "PROMPT" not in lines  # a person's output: the prompt only when asked for
    prompted = CliRunner().invoke(click_command(lambda: _print(answer, False, True))).output.splitlines()
    assert prompted.index("PROMPT") > 5


def test_each_source_shows_its_line_that_answers_whole():
    """The figure asked for sat past the first 100 characters of a quote: each
    source now shows, in full, the sentence or row that best matches the question."""
    from citeline.cli.ask_command import _print

    long = ("The delivery note lists every item that arrived at the warehouse on the Monday morning. "
            "Twenty thousand bottles of water and ten thousand blankets were unloaded at the north gate. "
            "A total of 3 trucks were used for 15 hours.")
    chunk = ChunkRow("c1", "d1", "memo.pdf", "Memo", "", 0, len(long), long, "")
    answer = ask(FakeSearcher([Hit("c1", 1, 0.2, "dense", chunk, distance=0.2)]), "How many trucks were used?",
                 AskOptions(retriever="dense", cut=0.45, check_names=False))
    lines = CliRunner().invoke(click_command(lambda: _print(answer, False))).output.splitlines()
    assert lines[1].startswith("[1] memo.pdf") and lines[2] == "    A total of 3 trucks were used for 15 hours."


def click_command(body):
    import click

    return click.command()(body)


def test_generate_removes_unknown_citations_and_flags_uncited_sentences():
    answer = ask(FakeSearcher([hit(1, 0.2), hit(2, 0.3)]), "q?", AskOptions(retriever="hybrid"))
    client = FakeClient("Part one says so [1]. Part seven disagrees [7]. The sky is green.")
    done = generate(answer, client)
    assert client.prompts == [answer.prompt]
    assert done.answer == "Part one says so [1]. Part seven disagrees. The sky is green."
    assert done.check.unknown == (7,) and done.check.cited == (1,)
    assert done.check.uncited == ("Part seven disagrees.", "The sky is green.")
    data = done.to_dict()
    assert list(data) == [*JSON_KEYS, "answer", "answer_checks"]
    assert data["answer_checks"] == {"ok": False, "cited": [1], "unknown": [7],
                                     "uncited": ["Part seven disagrees.", "The sky is green."]}


def test_retriever_choice_and_reranking_a_chosen_list():
    searcher = FakeSearcher([hit(1, 0.2)])
    ask(searcher, "q", AskOptions(retriever="dense", cut=0.5))
    ask(searcher, "q", AskOptions(retriever="bm25", cut=0.5))
    ask(searcher, "q", AskOptions(retriever="dense", rerank=True, cut=0.5, k=2))
    assert searcher.calls == [("search", "dense", 8), ("search", "bm25", 8), ("fill",), ("rerank", "dense", 2, None),
                             ("dense", 2)]  # the nearest, read by the cosine gate beside the reranked list


def test_an_uncalibrated_model_needs_an_explicit_cut():
    searcher = FakeSearcher([hit(1, 0.2)], model="/models/other")
    with pytest.raises(Uncalibrated):
        ask(searcher, "q", AskOptions(retriever="dense"))
    assert not ask(searcher, "q", AskOptions(retriever="dense", cut=0.3)).refused


def test_options_are_checked():
    with pytest.raises(ValueError, match="unknown retriever"):
        AskOptions(retriever="colbert")
    with pytest.raises(ValueError, match="k must be"):
        AskOptions(k=0)
    assert AskOptions().reranking and AskOptions(retriever="dense", rerank=True).reranking
    assert not AskOptions(retriever="hybrid").reranking


def test_answer_without_a_check_serialises():
    assert Answer("q", 0.5).to_dict()["prompt"] is None


# ---- CLI argument errors (no model is loaded for any of these) ------------------------------


@pytest.mark.parametrize("args, message", [
    (["q", "--retriever", "dense", "--min-rerank-score", "0.5"], "--min-rerank-score needs reranking"),
    (["   "], "QUERY is empty"),
    (["q", "--retriever", "colbert"], "Invalid value for '--retriever'"),
    (["q", "-k", "0"], "Invalid value for '-k'"),
    (["q", "--cut", "3"], "Invalid value for '--cut'"),
    (["q", "--model", "/no/such/model"], "unknown embedding model"),
])
def test_bad_arguments_exit_2(tmp_path, args, message):
    result = CliRunner().invoke(ask_command, [*args, "--db", str(tmp_path / "db")])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_cross_encoder_without_a_model_exits_1_saying_how_to_configure_one(tmp_path, monkeypatch):
    monkeypatch.delenv("CITELINE_RERANKER", raising=False)
    result = CliRunner().invoke(ask_command, ["q", "--db", str(tmp_path / "db"), "--reranker", "cross-encoder"])
    assert result.exit_code == 1
    assert "no cross-encoder is configured" in result.output and "CITELINE_RERANKER" in result.output


def test_the_reranker_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CITELINE_RERANKER", "cross-encoder")
    result = CliRunner().invoke(ask_command, ["q", "--db", str(tmp_path / "db")])
    assert result.exit_code == 1 and "no cross-encoder is configured" in result.output


def test_help():
    result = CliRunner().invoke(ask_command, ["--help"])
    assert result.exit_code == 0
    for option in ("--json", "-k", "--retriever", "--rerank", "--reranker", "--cut", "--min-rerank-score",
                   "--generate"):
        assert option in result.output


def test_beside_a_reranked_list_the_cosine_gate_also_reads_the_nearest_chunks():
    """The reranker put a far chunk first and the nearest one fifth: the gate, which reads cosine
    distances, must see the nearest too, or it refuses what it would have passed."""
    reranked = [hit(1, 0.50, 0.9), hit(2, 0.55, 0.8), hit(3, 0.60, 0.7), hit(4, 0.62, 0.6), hit(5, 0.30, 0.5)]
    searcher = FakeSearcher(reranked)
    answer = ask(searcher, "q?", AskOptions(k=4, cut=0.45))
    assert not answer.refused and [c.chunk_id for c in answer.citations] == ["c5"]
    assert ("dense", 4) in searcher.calls
    # a score gate reads rerank scores, which a dense hit has none of: no nearest joins then
    scored = FakeSearcher(reranked)
    refused = ask(scored, "q?", AskOptions(k=4, cut=0.45, min_rerank_score=0.1))
    assert refused.refused and not any(call[0] == "dense" for call in scored.calls)
    # and a dense list is its own nearest
    plain = FakeSearcher(reranked)
    ask(plain, "q?", AskOptions(k=4, cut=0.45, retriever="dense"))
    assert not any(call[0] == "dense" for call in plain.calls)


def fragment_hit(i, distance, content):
    chunk = ChunkRow(f"c{i}", "d1", "report.pdf", "Report", "", 10 * i, 10 * i + len(content), content, "")
    return Hit(f"c{i}", i, distance, "dense", chunk, distance=distance)


def test_fragments_never_become_sources_and_stay_in_reach():
    """The annual report's sources 4-6 were "Corporate Overview", "AND" and a bare URL, each a
    chunk of its own: near every question because they say almost nothing.
    They are not sources now, and ask still lists them among the closest passages."""
    hits = [fragment_hit(1, 0.20, "AND"), fragment_hit(2, 0.22, "https://www.ril.com/InvestorRelations"),
            fragment_hit(3, 0.25, "Corporate Overview"), hit(4, 0.30), fragment_hit(5, 0.31, "Page 12")]
    kept = apply_gate(hits, "Who founded Reliance Industries?", cut=0.45, k=4)
    assert [h.chunk_id for h in kept] == ["c4"]
    answer = ask(FakeSearcher(hits), "Who founded Reliance Industries?", AskOptions(retriever="dense", cut=0.45, k=5, check_names=False))
    assert [c.chunk_id for c in answer.citations] == ["c4"]
    assert {c.chunk_id for c in answer.closest} == {"c1", "c2", "c3", "c5"}
    only = ask(FakeSearcher(hits[:3]), "Who founded it?", AskOptions(retriever="dense", cut=0.45, check_names=False))
    assert only.refused and only.prompt is None and len(only.closest) == 3
