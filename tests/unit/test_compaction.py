"""The token table's compaction (index/compaction.py) on a real LanceDB table: a sync's few new rows
no longer rewrite the table's big fragment, small commits are merged once enough piled up, a
fragment a tenth deleted is rewritten without those rows, and every read stays the same."""
import numpy as np
import pytest

from citeline.index import compaction
from citeline.index.store import Store
from citeline.index.tokens import TokenVectors
from citeline.schemas.stamp import IndexStamp

DIM = 32
STAMP = IndexStamp(embed_model="test/compaction", embed_dim=DIM)


def vectors(seed: int, count: int = 24) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def data_files(tokens: TokenVectors) -> list[set[str]]:
    return [{f.path for f in fragment.metadata.files} for fragment in tokens._table().to_lance().get_fragments()]


@pytest.fixture
def tokens(tmp_path, monkeypatch):
    """A token table whose first commit holds 2,000 chunks: one fragment over the target size
    (rows of ~0.8 KiB, 64 KiB worth: the floor of 1,024 rows)."""
    monkeypatch.setattr(compaction, "FRAGMENT_BYTES", 64 * 1024)
    table = TokenVectors(Store(str(tmp_path / "db")), STAMP)
    table.write((f"c{i:05d}", vectors(i)) for i in range(2000))
    assert table.optimize() is False  # one fragment: nothing to merge
    return table


def test_a_few_new_rows_leave_the_big_fragment_alone_until_enough_small_ones_pile_up(tokens):
    big = data_files(tokens)[0]
    for run in range(compaction.SMALL_FRAGMENTS - 1):
        tokens.write([(f"new{run}", vectors(10_000 + run))])
        assert tokens.optimize() is False
    assert data_files(tokens)[0] == big and len(data_files(tokens)) == compaction.SMALL_FRAGMENTS

    tokens.write([("last", vectors(20_000))])
    assert tokens.optimize() is True
    files = data_files(tokens)
    assert files[0] == big and len(files) == 2  # the eight one-row commits merged into one fragment
    ids = [f"c{i:05d}" for i in range(0, 2000, 97)] + [f"new{run}" for run in range(7)] + ["last"]
    read = TokenVectors(tokens.store, STAMP).read(ids)
    assert read.keys() == set(ids)
    assert np.allclose(read["last"], vectors(20_000), atol=0.02)  # int8 per word piece
    assert np.allclose(read["c00097"], vectors(97), atol=0.02)


def test_a_fragment_over_a_tenth_deleted_is_rewritten_without_its_deleted_rows(tokens):
    big = data_files(tokens)[0]
    tokens._table().delete("chunk_id < 'c00200'")  # 200 of 2,000: a tenth, not more
    assert tokens.optimize() is False and data_files(tokens)[0] == big
    tokens._table().delete("chunk_id < 'c00201'")
    assert tokens.optimize() is True
    assert big not in data_files(tokens)
    assert tokens.count() == 1799 and tokens.stored_ids() == {f"c{i:05d}" for i in range(201, 2000)}


def test_lancedb_own_optimize_rewrites_the_big_fragment_for_one_row(tokens):
    """Why this module exists: what ``Table.optimize`` did with the same table and one new row."""
    big = data_files(tokens)[0]
    tokens.write([("new", vectors(30_000))])
    tokens._table().optimize()
    assert big not in data_files(tokens)
