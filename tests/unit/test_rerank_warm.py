"""MaxSim over an index without stored word-piece vectors: what was encoded once is read from
memory after, with the same scores."""
from __future__ import annotations

import threading

from citeline.query.rerank import MaxSimReranker, Passage
from fakes import HashEmbedder

TEXTS = ["the harbour committee meets on fridays", "rowing boats in the shed", "warranty claims within days"]


class Counting(HashEmbedder):
    def __init__(self):
        super().__init__()
        self.encoded: list[str] = []

    def token_vectors(self, texts):
        self.encoded += list(texts)
        return super().token_vectors(texts)


def test_a_warmed_reranker_encodes_only_the_question_and_scores_the_same():
    cold, warm = MaxSimReranker(Counting(), cache_bytes=0), MaxSimReranker(Counting())
    passages = [Passage(t) for t in TEXTS]
    assert warm.warm(TEXTS) == 3 and warm.warm(TEXTS) == 0  # each text once
    warm.embedder.encoded.clear()
    scores = warm.score("when does the committee meet", passages)
    assert warm.embedder.encoded == ["when does the committee meet"]
    assert scores == cold.score("when does the committee meet", passages)
    assert cold.embedder.encoded[1:] == TEXTS  # no cache: every candidate encoded per question


def test_what_a_question_encoded_is_kept_for_the_next():
    reranker = MaxSimReranker(Counting())
    reranker.score("q1", [Passage(TEXTS[0])])
    reranker.score("q2", [Passage(TEXTS[0]), Passage(TEXTS[1])])
    assert reranker.embedder.encoded == ["q1", TEXTS[0], "q2", TEXTS[1]]


def test_warming_stops_when_the_service_stops():
    stop = threading.Event()
    stop.set()
    assert MaxSimReranker(Counting()).warm(TEXTS, stop=stop) == 0
    assert MaxSimReranker(Counting(), cache_bytes=0).warm(TEXTS) == 0  # no cache: nothing to fill
