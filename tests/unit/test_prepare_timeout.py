"""``--timeout`` bounds a document's extraction and chunking; embedding runs while it makes progress.

A 3.2 MB book (8,706 chunks) failed ``timeout`` at 300 s under load, throwing away
the 4,160 chunks it had embedded. The limit is there to stop a stuck parser, not honest work: each
group of chunks embedded starts it again, so a long document finishes, and an encoder that stalls
past the limit still fails its document (a stuck extractor is killed at the limit:
tests/flows/test_index_flow.py::test_a_hanging_extractor_fails_alone_at_the_time_limit).
"""
import time

import pytest
from fakes import HashEmbedder

from citeline.pipeline.prepare import EMBED_GROUP, prepare
from citeline.pipeline.walk import SourceFile
from citeline.schemas.errors import Timeout
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp


class SlowEmbedder(HashEmbedder):
    """The shared fake, costing ``seconds`` per text like a real encoder on a busy CPU; the
    ``stall_at``-th call (counted from 1) sleeps ``stall_s`` more, as a stuck encoder would."""

    def __init__(self, seconds: float, stall_at: int = 0, stall_s: float = 0.0):
        super().__init__()
        self.seconds, self.stall_at, self.stall_s = seconds, stall_at, stall_s
        self.embedded = self.calls = 0

    def embed_counted(self, texts):
        self.calls += 1
        time.sleep(self.seconds * len(texts) + (self.stall_s if self.calls == self.stall_at else 0))
        self.embedded += len(texts)
        return super().embed_counted(texts)


def _long(tmp_path, paragraphs: int) -> SourceFile:
    path = tmp_path / "long.md"
    path.write_text("# Long\n\n" + "\n\n".join(f"Paragraph {i} says something about walruses."
                                              for i in range(paragraphs)))
    return SourceFile(str(path), str(tmp_path), "long.md")


def _settings(tmp_path) -> IndexSettings:
    return IndexSettings(db=str(tmp_path / "index"), timeout_s=1.0, budget=128, overlap=0)


def test_embedding_that_outlasts_the_limit_but_progresses_finishes(tmp_path):
    embedder = SlowEmbedder(seconds=0.008)  # a group of 64: ~0.5 s, within the 1 s limit
    started = time.monotonic()
    prepared = prepare(_long(tmp_path, 600), embedder, IndexStamp("slow", 8), _settings(tmp_path))
    took = time.monotonic() - started
    assert took > 2.0, took  # well past the 1 s limit in all
    assert len(prepared.rows) == embedder.embedded > 4 * EMBED_GROUP
    assert all(row["vector"] is not None for row in prepared.rows)


def test_an_encoder_that_stalls_past_the_limit_fails_the_document_before_its_next_group(tmp_path):
    embedder = SlowEmbedder(seconds=0.001, stall_at=2, stall_s=1.2)
    with pytest.raises(Timeout, match=r"1 s limit \(--timeout\).*embedding, 128 of \d+ chunks done") as caught:
        prepare(_long(tmp_path, 600), embedder, IndexStamp("slow", 8), _settings(tmp_path))
    assert caught.value.stage == "embed" and caught.value.kind == "timeout"
    assert embedder.embedded == 2 * EMBED_GROUP
