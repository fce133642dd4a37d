"""The gate calibrates itself on index, recalibrates on reindex and `calibrate`, and status shows it."""
import json

import pytest

from citeline.flows.ingest import index_folder
from citeline.flows.reindex import reindex
from citeline.index.store import Store
from citeline.pipeline import embed
from citeline.query.calibrate import CALIBRATED, Calibration, cut_in_use
from citeline.schemas.settings import IndexSettings
from fakes import FAKE, HashEmbedder
from testkit import invoke

pytestmark = [pytest.mark.usefixtures("prefect_harness")]

OTHER = "fake/other-bag-of-words"


def stored(db: str) -> Calibration:
    store = Store(db)
    return Calibration.from_json(store.calibration())


def test_index_calibrates_and_reindex_recalibrates_for_the_new_model(docs, tmp_path):
    s = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    index_folder(str(docs), s)
    first = stored(s.db)
    store = Store(s.db)
    assert first.model == FAKE and first.table == store.active_table()
    assert first.sampled > 0 and first.offtopic >= 300 and first.chunks == store.count_chunks()
    assert cut_in_use(store, store.stamp()).how == CALIBRATED
    assert first.answerability is None  # opt-in: calibrate --answerability

    with embed.registered(OTHER, lambda precision, batch_size: HashEmbedder(OTHER, 32)):
        reindex(IndexSettings(db=s.db, model=OTHER))
        second = stored(s.db)
        assert second.model == OTHER and second.table == store.active_table() != first.table
        assert cut_in_use(store, store.stamp()).cut == second.cut

        status = json.loads(invoke("status", "--db", s.db, "--json").output)["gate"]
        assert status["how"] == CALIBRATED and status["cut"] == second.cut
        assert status["calibration"]["model"] == OTHER and status["calibration"]["offtopic"] == second.offtopic
        text = invoke("status", "--db", s.db).output
        assert f"gate: cut {second.cut:.3f} calibrated" in text and OTHER in text


def test_calibrate_command_measures_again_and_a_resync_keeps_it(docs, tmp_path):
    s = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    index_folder(str(docs), s)
    first = stored(s.db)
    index_folder(str(docs), s)  # nothing changed: the calibration stands
    assert stored(s.db) == first
    result = invoke("calibrate", "--db", s.db, "--json")
    assert result.exit_code == 0, result.output
    again = json.loads(result.output)
    assert again["cut"] == first.cut and again["model"] == FAKE  # seeded: the same sample, the same cut
    assert stored(s.db).created_at >= first.created_at


def test_calibrate_answerability_fits_the_score_that_reranked_ask_then_gates_with(docs, tmp_path):
    s = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    index_folder(str(docs), s)
    assert json.loads(invoke("ask", "dropout", "--db", s.db, "--json").output)["gate"] == "cosine"
    result = invoke("calibrate", "--db", s.db, "--answerability", "--json")
    assert result.exit_code == 0, result.output
    store = Store(s.db)
    scored = cut_in_use(store, store.stamp()).answerability
    assert scored is not None and scored.reranker == "maxsim" and len(scored.weights) == len(scored.features)
    asked = json.loads(invoke("ask", "dropout", "--db", s.db, "--json").output)
    assert asked["gate"] == "answerability" and asked["threshold"] == scored.threshold
    dense = json.loads(invoke("ask", "dropout", "--db", s.db, "--json", "--retriever", "dense").output)
    assert dense["gate"] == "cosine" and dense["threshold"] == stored(s.db).cut  # not reranked: the cosine cut
    forced = json.loads(invoke("ask", "dropout", "--db", s.db, "--json", "--cut", "0.9").output)
    assert forced["gate"] == "cosine" and forced["threshold"] == 0.9  # --cut overrides the score too


def test_calibrate_without_an_index_fails_cleanly(tmp_path):
    result = invoke("calibrate", "--db", tmp_path / "nothing")
    assert result.exit_code == 1 and "no index at" in result.output


def test_a_copy_of_a_document_is_not_taken_for_an_adjacent_question(docs, tmp_path):
    """Leave-one-document-out simulates questions whose answer is absent; a copy of the
    source (one file saved twice, shared boilerplate) holds the answer, so it must not
    count, or it drags the cut below the index's own answers."""
    from citeline.query.calibrate import copies, measure
    from citeline.query.search import Searcher
    from citeline.runtime.handles import embedder_for

    (docs / "copy-of-dropout.md").write_bytes((docs / "04-dropout.md").read_bytes())
    s = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    index_folder(str(docs), s)
    store = Store(s.db)
    views = measure(Searcher(store, embedder_for(s), store.stamp()))
    # A question's own chunk and that chunk's copy sit at the same distance from it: without
    # the copies rule most "adjacent" distances were those of the questions' own answers.
    pairs = [(q.values[q.relevant.index(True)], d) for q, d in zip(views.in_domain, views.adjacent)
             if True in q.relevant and d is not None]
    assert len(pairs) > 10
    assert sum(abs(own - other) < 1e-6 for own, other in pairs) <= 1
    assert copies("dropout zeroes activations training", "During training, dropout zeroes activations.")


def test_a_calibration_under_an_older_rule_is_measured_again_by_the_next_sync(docs, tmp_path):
    from dataclasses import replace

    s = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    index_folder(str(docs), s)
    store = Store(s.db)
    old = replace(stored(s.db), version="1", cut=0.123)
    store.set_calibration(store.active_table(), old.to_json())
    index_folder(str(docs), s)  # nothing changed in the folder
    again = stored(s.db)
    assert again.version != "1" and again.cut != 0.123


def test_the_same_documents_in_another_folder_get_the_same_calibration(docs, tmp_path):
    """Chunk ids hash a document's absolute path; the pseudo-question sample must not, or a
    folder moved elsewhere (or an evaluation under another --db-dir) gets another cut."""
    import shutil
    from dataclasses import asdict

    found = []
    for where in ("a", "b/deeper"):
        folder = shutil.copytree(docs, tmp_path / where / "docs")
        s = IndexSettings(db=str(tmp_path / where / "index"), model=FAKE)
        index_folder(str(folder), s)
        found.append({k: v for k, v in asdict(stored(s.db)).items() if k not in ("table", "created_at")})
    assert found[0] == found[1]


def test_an_adjacent_question_naming_what_no_other_document_mentions_never_passes(docs, tmp_path):
    """ask refuses a question naming what no passage holds (query/unmentioned.py), so the
    leave-one-document-out simulation must not count such a question as one that passes at its
    distance: with its document left out, it passes at no cut."""
    from citeline.query.calibrate import NEVER_PASSES, _asked, measure
    from citeline.query.search import Searcher
    from citeline.query.unmentioned import named_terms
    from citeline.runtime.handles import embedder_for

    (docs / "zorblax.md").write_text(
        "# Zorblax\n\n" + "\n\n".join(
            f"The Zorblax-{i} engine spins quietly while the Quuxian valves regulate pressure number {i}."
            for i in range(30)) + "\n")
    s = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    index_folder(str(docs), s)
    store = Store(s.db)
    searcher = Searcher(store, embedder_for(s), store.stamp())
    asked = _asked(store.chunk_rows(["chunk_id", "content", "doc_id"]), 300, 16)
    checked, unchecked = measure(searcher).adjacent, measure(searcher, check_names=False).adjacent
    own = [i for i, (q, _, _) in enumerate(asked) if any("Zorblax" in t or "Quuxian" in t for t in named_terms(q))]
    assert own, "no pseudo-question drawn from the Zorblax document names it"
    assert all(checked[i] == NEVER_PASSES for i in own)
    assert all(unchecked[i] is not None and unchecked[i] < NEVER_PASSES for i in own)
    # A question that names nothing is measured as before.
    plain = [i for i, (q, _, _) in enumerate(asked) if not named_terms(q)]
    assert plain and [checked[i] for i in plain] == [unchecked[i] for i in plain]
