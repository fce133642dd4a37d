"""Citations from hits: label, fragment, quote == canonical slice."""
from __future__ import annotations

import json
from dataclasses import asdict, replace

import pytest

from citeline.query.cite import build_citations, citation_from_hit, verify_quote, with_sources
from citeline.schemas.locator import CharRange, Page, SheetRange, TimeSpan
from citeline.schemas.retrieval import ChunkRow, Citation, Hit

CANONICAL = (
    "# Guide\n\n"
    "## Install\n\n"
    "Run the installer   twice.\nThen reboot.\n\n"
    "## Use\n\nOpen the app.\n"
)


def _row(content: str, **extra) -> dict:
    """A chunks-table row whose content is the canonical slice, with a header in text."""
    start = CANONICAL.index(content)
    row = {
        "chunk_id": f"c{start}",
        "doc_id": "d" * 64,
        "path": "guides/guide.md",
        "title": "Guide",
        "section": "Install",
        "ordinal": 0,
        "start": start,
        "end": start + len(content),
        "content": content,
        "text": f"[Guide > Install]\n{content}",
        "locators": "[]",
        "distance": 0.25,
    }
    row.update(extra)
    return row


def _hit(row: dict, rank: int = 1) -> Hit:
    """The hit the searcher makes of a table row."""
    return Hit(row["chunk_id"], rank, row["distance"], "dense", ChunkRow.from_row(row),
               distance=row["distance"], rerank_score=row.get("rerank_score"))


def _hits(rows: list[dict]) -> list[Hit]:
    return [_hit(row, rank) for rank, row in enumerate(rows, 1)]


def _locators(*locs) -> str:
    return json.dumps([asdict(loc) for loc in locs])


def test_text_chunk_cites_title_section_and_its_own_char_range():
    content = "Run the installer   twice.\nThen reboot."
    row = _row(content)
    (c,) = build_citations([_hit(row)])
    start = CANONICAL.index(content)
    assert c == Citation(
        index=1,
        document_id="d" * 64,
        document="guides/guide.md",
        label="Guide > Install",
        fragment=f"#char={start},{start + len(content)}",
        quote=content,
        distance=0.25,
        rerank_score=None,
        chunk_id=f"c{start}",
        start=start,
        end=start + len(content),
        path="guides/guide.md",
    )


def test_quote_is_content_never_the_embedded_text():
    row = _row("Open the app.", section="Use")
    (c,) = build_citations([_hit(row)])
    assert c.quote == "Open the app."
    assert "[Guide > Install]" not in c.quote
    assert verify_quote(c, CANONICAL) and verify_quote(ChunkRow.from_row(row), CANONICAL)


def test_a_quote_that_is_not_the_canonical_slice_fails_verification():
    row = _row("Open the app.")
    tampered = dict(row, content=row["text"][: len(row["content"])])
    assert not verify_quote(ChunkRow.from_row(tampered), CANONICAL)
    shifted = dict(row, start=row["start"] + 1, end=row["end"] + 1)
    assert not verify_quote(ChunkRow.from_row(shifted), CANONICAL)
    outside = dict(row, start=len(CANONICAL), end=len(CANONICAL) + 13)
    assert not verify_quote(ChunkRow.from_row(outside), CANONICAL)


def test_citation_without_offsets_cannot_be_verified():
    c = Citation(1, "d", "doc", "label", "#page=1", "quote")
    with pytest.raises(ValueError, match=r"citation \[1\] has no start/end"):
        verify_quote(c, "quote")


def test_numbering_follows_hit_order_from_one():
    rows = [_row("Open the app."), _row("Then reboot."), _row("Run the installer")]
    assert [(c.index, c.quote) for c in build_citations(_hits(rows))] == [
        (1, "Open the app."),
        (2, "Then reboot."),
        (3, "Run the installer"),
    ]


def test_without_section_the_label_is_the_title():
    (c,) = build_citations([_hit(_row("Open the app.", section=""))])
    assert c.label == "Guide"


def test_missing_title_falls_back_to_path_and_missing_path_to_doc_id():
    c = citation_from_hit(1, _hit(_row("Open the app.", title=None, section=None)))
    assert (c.document, c.label) == ("guides/guide.md", "guides/guide.md")
    c = citation_from_hit(1, _hit(_row("Open the app.", title="", path="")))
    assert c.document == "d" * 64


def test_absent_locators_column_gives_a_char_fragment():
    row = _row("Then reboot.")
    del row["locators"]
    assert citation_from_hit(1, _hit(row)).fragment == f"#char={row['start']},{row['end']}"


def test_char_locator_uses_the_chunks_own_range_not_the_segments():
    row = _row("Then reboot.", locators=_locators(CharRange(0, len(CANONICAL))))
    c = citation_from_hit(1, _hit(row))
    assert c.fragment == f"#char={row['start']},{row['end']}"
    assert c.label == "Guide > Install"


def test_single_pdf_page():
    row = _row("Open the app.", title="Report", locators=_locators(Page(3)))
    c = citation_from_hit(1, _hit(row))
    assert (c.label, c.fragment) == ("Report, p. 3", "#page=3")


def test_chunk_over_several_pages_gives_a_range_and_opens_at_the_first():
    row = _row("Open the app.", title="Report", locators=_locators(Page(3), Page(4)))
    c = citation_from_hit(1, _hit(row))
    assert (c.label, c.fragment) == ("Report, pp. 3–4", "#page=3")


def test_printed_page_labels_come_first_with_the_physical_page_after():
    one = _row("Open the app.", title="Book", locators=_locators(Page(5, "iii")))
    two = _row("Open the app.", title="Book", locators=_locators(Page(5, "iii"), Page(6, "iv")))
    assert citation_from_hit(1, _hit(one)).label == "Book, p. iii (page 5)"
    assert citation_from_hit(1, _hit(two)).label == "Book, pp. iii–iv (pages 5–6)"
    assert citation_from_hit(1, _hit(two)).fragment == "#page=5"


def test_sheet_range_label_and_fragment_in_a1_notation():
    sheet = _locators(SheetRange("Q1 sales", "A1:D9"))
    quoted = _row("Open the app.", title="Budget", locators=sheet)
    bare = _row("Open the app.", title="Budget", locators=_locators(SheetRange("Data", "B2:C4")))
    c = citation_from_hit(1, _hit(quoted))
    assert (c.label, c.fragment) == ("Budget, 'Q1 sales'!A1:D9", "'Q1 sales'!A1:D9")
    c = citation_from_hit(1, _hit(bare))
    assert (c.label, c.fragment) == ("Budget, Data!B2:C4", "Data!B2:C4")


def test_a_repeated_header_row_is_not_the_fragment_when_data_rows_are_quoted():
    rows = _locators(SheetRange("Countries", "A1:B1", header=True), SheetRange("Countries", "A102:B121"))
    c = citation_from_hit(1, _hit(_row("Open the app.", title="Services", locators=rows)))
    assert (c.label, c.fragment) == ("Services, Countries!A102:B121", "Countries!A102:B121")
    only_header = _locators(SheetRange("Countries", "A1:B1", header=True))
    c = citation_from_hit(1, _hit(_row("Open the app.", title="Services", locators=only_header)))
    assert c.fragment == "Countries!A1:B1"


def test_time_spans_are_merged_from_first_start_to_last_end():
    row = _row(
        "Open the app.", title="Talk", locators=_locators(TimeSpan(12, 20.5), TimeSpan(20.5, 31))
    )
    c = citation_from_hit(1, _hit(row))
    assert (c.label, c.fragment) == ("Talk, 0:12–0:31", "#t=12.00,31.00")
    hour = _row("Open the app.", title="Talk", locators=_locators(TimeSpan(3725, 3790)))
    assert citation_from_hit(1, _hit(hour)).label == "Talk, 1:02:05–1:03:10"


def test_the_hits_distance_and_rerank_score_are_carried():
    c = citation_from_hit(1, _hit(_row("Open the app.", distance=0.5, rerank_score=4.0)))
    assert (c.distance, c.rerank_score) == (0.5, 4.0)


def test_a_bare_fused_id_cannot_be_cited():
    with pytest.raises(ValueError, match="hit 'c1' carries no chunk"):
        build_citations([Hit("c1", 1, 0.03, "hybrid")])


def test_to_dict_has_exactly_the_json_fields():
    c = citation_from_hit(2, _hit(_row("Open the app.", section="Use")))
    assert c.to_dict() == {
        "index": 2,
        "document_id": "d" * 64,
        "document": "guides/guide.md",
        "label": "Guide > Use",
        "fragment": f"#char={c.start},{c.end}",
        "quote": "Open the app.",
        "distance": 0.25,
        "rerank_score": None,
        "chunk_id": c.chunk_id,
        "path": "guides/guide.md",
        "start": c.start,
        "end": c.end,
        "uri": "",
        "highlight": None,  # no question, no line that answers it
    }


def test_a_citation_for_a_question_carries_the_line_that_answers_it_with_its_own_locator():
    c = citation_from_hit(1, _hit(_row("Run the installer   twice.\nThen reboot.")), "When do I reboot?")
    at = CANONICAL.index("Then reboot.")
    assert c.to_dict()["highlight"] == {"start": at, "end": at + 12, "fragment": f"#char={at},{at + 12}",
                                        "locator": f"#char={at},{at + 12}", "text": "Then reboot."}
    assert CANONICAL[at:at + 12] == c.highlight


def test_with_sources_gives_each_citation_a_uri_at_its_place():
    pdf = replace(citation_from_hit(1, _hit(_row("Open the app."))), fragment="#page=3", document_id="p")
    sheet = replace(pdf, fragment="'Q1 sales'!A1:D9", document_id="x")
    media = replace(pdf, fragment="#t=12.00,19.50", document_id="m")
    text = citation_from_hit(4, _hit(_row("Open the app.")))
    sources = {"p": "/data/a.pdf", "x": "/data/book.xlsx", "m": "/data/talk.mp3", text.document_id: "/d/a b.md"}
    got = [c.uri for c in with_sources([pdf, sheet, media, text], sources)]
    assert got == ["file:///data/a.pdf#page=3", "file:///data/book.xlsx#'Q1%20sales'!A1:D9",
                   "file:///data/talk.mp3#t=12.00,19.50", f"file:///d/a%20b.md#char={text.start},{text.end}"]
    assert with_sources([pdf], {})[0].uri == ""


def test_hits_are_values_that_citing_cannot_change():
    hit = _hit(_row("Open the app."))
    with pytest.raises(AttributeError):
        hit.distance = 0.1  # frozen: no stage of the query side edits a hit
    assert build_citations([hit])[0].distance == 0.25
