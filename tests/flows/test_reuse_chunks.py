"""Chunk-level reuse: an edited document is re-chunked, but only chunks whose embedded text
changed are encoded; the others keep their stored vectors (pipeline/reuse.py).

The encoder is the session's fake, registered through the real registry: its ``stats.texts``
counts every text actually encoded, and a subclass below counts word-piece encodes too.
"""
import random
from pathlib import Path

import numpy as np
import pytest

from citeline.flows.ingest import index_folder
from citeline.index.check import check_index
from citeline.index.store import Store
from citeline.index.tokens import TokenVectors
from citeline.schemas.tokens import as_stored
from citeline.pipeline import embed
from citeline.schemas.settings import IndexSettings
from citeline.runtime.handles import embedder_for
from fakes import FAKE, HashEmbedder

pytestmark = [pytest.mark.usefixtures("prefect_harness")]

WORDS = ("gradient dropout learning rate schedule warmup batch norm layer residual attention head query key "
         "value softmax loss entropy optimizer momentum decay weight bias kernel stride pooling token vocab "
         "embedding cosine distance cluster shard replica commit manifest fragment index column row").split()


def paragraph(rng: random.Random, words: int = 55) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def long_document(sections: int, seed: int = 7) -> str:
    """A Markdown document of ``sections`` sections of three paragraphs (about 350 characters each)."""
    rng = random.Random(seed)
    parts = ["# A long report\n"]
    for n in range(sections):
        parts.append(f"## Section {n}\n")
        parts.extend(paragraph(rng) + "\n" for _ in range(3))
    return "\n".join(parts)


def sync(folder: Path, settings: IndexSettings):
    state = index_folder(str(folder), settings, return_state=True)
    assert state.is_completed(), state.message
    return state.result()


def encoded() -> int:
    # the instance the runs use (get_embedder(FAKE) alone is another lru_cache key, another instance)
    return embedder_for(IndexSettings(model=FAKE)).stats.texts


def vectors(db: str) -> dict[str, bytes]:
    """Every stored chunk's vector as float32 bytes, by chunk id."""
    return {r["chunk_id"]: np.asarray(r["vector"], dtype=np.float32).tobytes()
            for r in Store(db).chunk_rows(["chunk_id", "vector"])}


@pytest.fixture
def report(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "report.md").write_text(long_document(40))
    return folder / "report.md"


def edit_one_paragraph(path: Path, section: int) -> None:
    text = path.read_text()
    start = text.index(f"## Section {section}\n") + len(f"## Section {section}\n") + 1
    end = text.index(".", start) + 1
    path.write_text(text[:start] + "An edited paragraph about shard replicas and manifests." + text[end:])


def test_an_edited_paragraph_encodes_only_its_chunk_and_the_rest_match_a_full_encode(report, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    first = sync(report.parent, settings)
    assert first.encoded == first.chunks > 100 and first.reused == 0

    edit_one_paragraph(report, 20)
    before = encoded()
    again = sync(report.parent, settings)
    assert again.indexed == 1
    assert encoded() - before == again.encoded and 1 <= again.encoded <= 3
    assert again.reused == again.chunks - again.encoded
    assert check_index(Store(settings.db)) == []

    fresh = IndexSettings(db=str(tmp_path / "fresh"), model=FAKE)
    assert sync(report.parent, fresh).encoded == again.chunks
    assert vectors(settings.db) == vectors(fresh.db)  # same chunk ids, byte-identical vectors


def test_text_inserted_above_moves_the_chunks_but_keeps_their_vectors(report, tmp_path):
    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    first = sync(report.parent, settings)
    old_ids = set(vectors(settings.db))
    text = report.read_text()
    at = text.index("## Section 3\n")
    report.write_text(text[:at] + "## Inserted\n\nA brand new section about cosine clusters.\n\n" + text[at:])

    again = sync(report.parent, settings)
    assert again.encoded <= 2 and again.reused == first.chunks - 0  # every old text is still there
    assert again.chunks == first.chunks + again.encoded
    moved = set(vectors(settings.db)) - old_ids
    assert len(moved) > again.encoded  # chunk ids after the insertion moved (offsets), their vectors kept
    fresh = IndexSettings(db=str(tmp_path / "fresh"), model=FAKE)
    sync(report.parent, fresh)
    assert vectors(settings.db) == vectors(fresh.db)
    assert check_index(Store(settings.db)) == []


class TokenCounting(HashEmbedder):
    """The fake, counting the texts whose word-piece vectors it computes."""

    token_texts = 0

    def token_vectors(self, texts):
        TokenCounting.token_texts += len(texts)
        return super().token_vectors(texts)


def test_kept_chunks_keep_their_token_vectors(report, tmp_path):
    name = "fake/counting-token-vectors"
    with embed.registered(name, lambda precision, batch_size: TokenCounting(name)):
        settings = IndexSettings(db=str(tmp_path / "index"), model=name, token_vectors=True)
        sync(report.parent, settings)
        text = report.read_text()
        at = text.index("## Section 3\n")
        report.write_text(text[:at] + "## Inserted\n\nA brand new section about cosine clusters.\n\n" + text[at:])
        before, passes = TokenCounting.token_texts, embedder_for(settings).stats.texts
        again = sync(report.parent, settings)
        # the changed chunks' vectors come from the pass that embedded them; the kept ones' are copied
        assert embedder_for(settings).stats.texts - passes == again.encoded <= 2
        assert TokenCounting.token_texts - before == 0
        store = Store(settings.db)
        tokens = TokenVectors(store, store.stamp())
        ids = {r["chunk_id"] for r in store.chunk_rows(["chunk_id"])}
        assert tokens.stored_ids() == ids
        fresh = embedder_for(settings).token_vectors([r["text"] for r in store.chunk_rows(["chunk_id", "text"])])
        stored = tokens.read(sorted(ids))
        rows = store.chunk_rows(["chunk_id", "text"])
        for row, vectors_now in zip(rows, fresh):
            assert np.array_equal(stored[row["chunk_id"]], as_stored(vectors_now))  # int8, as stored
        assert check_index(store) == []


WORKER = """
import json, pickle, sys
sys.path.insert(0, {fixtures!r})
from citeline.index.reuse import StoredChunks
from citeline.index.store import Store
from citeline.pipeline import embed
from citeline.pipeline.prepare import prepare
from fakes import FAKE, HashEmbedder

embed.register(FAKE, lambda precision, batch_size: HashEmbedder())
with open({todo!r}, "rb") as f:
    todo, stamp, settings = pickle.load(f)
# what tasks/document.py::prepare_document does on a worker: open the index from the settings
prepared = prepare(todo.file, embed.get_embedder(FAKE), stamp, settings, todo.known,
                   todo.reuse(StoredChunks(Store(settings.db), stamp)))
print(json.dumps([prepared.reused.encoded, prepared.reused.reused, len(prepared.rows)]))
"""


def test_a_worker_in_another_process_reads_the_stored_vectors_from_the_index_path(report, tmp_path):
    """What a Dask worker does: get the pickled work item, open the index from the path in the settings."""
    import json
    import pickle
    import subprocess
    import sys

    from citeline.flows.ingest import plan_folder

    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    sync(report.parent, settings)
    edit_one_paragraph(report, 20)
    store = Store(settings.db)
    [todo] = plan_folder(str(report.parent), store, store.stamp()).todo
    (tmp_path / "todo.pickle").write_bytes(pickle.dumps((todo, store.stamp(), settings)))
    script = WORKER.format(fixtures=str(Path(__file__).parents[1] / "fixtures"), todo=str(tmp_path / "todo.pickle"))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    encoded_there, reused_there, rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert 1 <= encoded_there <= 3 and reused_there == rows - encoded_there


def test_a_repair_encodes_a_damaged_vector_again_rather_than_keep_it(report, tmp_path):
    """Reuse trusts a stored vector because its text is unchanged; a repair must not."""
    from citeline.flows.repair import repair_index

    settings = IndexSettings(db=str(tmp_path / "index"), model=FAKE)
    sync(report.parent, settings)
    store = Store(settings.db)
    victim = store.chunk_rows(["chunk_id", "vector"])[5]
    store.chunks(store.stamp()).update(where=f"chunk_id = '{victim['chunk_id']}'",
                                       values={"vector": [2 * x for x in victim["vector"]]})
    assert {v.rule for v in check_index(store)} == {"norm"}
    state = repair_index(settings, return_state=True)
    assert state.is_completed(), state.message
    assert check_index(store) == []
    assert vectors(settings.db)[victim["chunk_id"]] == np.asarray(victim["vector"], dtype=np.float32).tobytes()
