"""``--timeout`` bounds a document's whole preparation, embedding included."""
import time

import pytest
from fakes import HashEmbedder

from citeline.pipeline.prepare import prepare
from citeline.pipeline.walk import SourceFile
from citeline.schemas.errors import Timeout
from citeline.schemas.settings import IndexSettings
from citeline.schemas.stamp import IndexStamp


class SlowEmbedder(HashEmbedder):
    """The shared fake, costing ``seconds`` per text like a real encoder on a busy CPU."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds
        self.embedded = 0

    def embed_counted(self, texts):
        time.sleep(self.seconds * len(texts))
        self.embedded += len(texts)
        return super().embed_counted(texts)


def test_embedding_past_the_time_limit_fails_the_document_as_timeout(tmp_path):
    path = tmp_path / "long.md"
    path.write_text("# Long\n\n" + "\n\n".join(f"Paragraph {i} says something about walruses." for i in range(2000)))
    embedder = SlowEmbedder(seconds=0.005)
    settings = IndexSettings(db=str(tmp_path / "index"), timeout_s=1.0, budget=128, overlap=0)
    started = time.monotonic()
    with pytest.raises(Timeout, match=r"1 s limit \(--timeout\).*embedding") as caught:
        prepare(SourceFile(str(path), str(tmp_path), "long.md"), embedder, IndexStamp("slow", 8), settings)
    assert time.monotonic() - started < 3.0  # all of it would take ~8 s
    assert caught.value.stage == "embed" and caught.value.kind == "timeout"
    assert 0 < embedder.embedded < 1000
