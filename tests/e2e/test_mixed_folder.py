"""One `citeline index` over a folder mixing every kind of document, good and bad."""
import json

import pytest

import make
from citeline.index.store import Store
from testkit import invoke

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("prefect_harness")]

GOOD = {
    "report.pdf": make.two_column_pdf,
    "scan.pdf": make.image_only_pdf,
    "sales.xlsx": make.workbook,
    "meeting.ogg": make.speech,
    "notes.md": lambda: b"# Notes\n\nThe harbour committee meets on Fridays.\n",
    "open.pdf": lambda: make.encrypted_pdf(""),
    "manual.pdf": make.manual_pdf,
    "handbook.docx": make.handbook_docx,
    "deck.pptx": make.deck_pptx,
    "guide.html": make.guide_html,
    "services.csv": make.services_csv,
    "services.ods": make.services_ods,
    "LICENSE": lambda: b"Permission is granted to anyone to use this harbour software for any purpose.\n",
}
BAD = {
    "locked.pdf": (lambda: make.encrypted_pdf("secret"), "encrypted"),
    "cut.pdf": (make.truncated_pdf, "truncated"),
    "locked.xlsx": (make.encrypted_xlsx, "encrypted"),
    "old.xlsx": (make.legacy_xls, None),
    "cut.mp4": (make.truncated_mp4, "truncated"),
    "empty.md": (lambda: b"", None),
    "locked.docx": (make.encrypted_xlsx, "encrypted"),
}
NOT_DOCUMENTS = {"blob.bin": lambda: b"\x00\x01\x02\x03" * 64}  # set aside, not failed


@pytest.fixture(scope="module")
def db(tmp_path_factory, prefect_harness):
    folder = tmp_path_factory.mktemp("mixed")
    for name, build in GOOD.items():
        (folder / name).write_bytes(build())
    for name, (build, _) in BAD.items():
        (folder / name).write_bytes(build())
    for name, build in NOT_DOCUMENTS.items():
        (folder / name).write_bytes(build())
    db = tmp_path_factory.mktemp("index") / "db"
    result = invoke("index", folder, "--db", db, "--no-progress")
    assert result.exit_code == 3, result.output  # finished; the bad files failed
    return db


def test_good_files_indexed_bad_files_failed_with_their_reason(db):
    docs = {d["path"]: d for d in json.loads(invoke("status", "--db", db, "--json").output)["documents"]}
    for name in GOOD:
        assert docs[name]["status"] == "indexed", (name, docs[name]["reason"])
        assert docs[name]["chunk_count"] > 0
    for name, (_, kind) in BAD.items():
        assert docs[name]["status"] == "failed", name
        assert docs[name]["reason"], name
        if kind:
            assert docs[name]["reason"].startswith(kind + ":"), (name, docs[name]["reason"])
    for name in NOT_DOCUMENTS:
        assert docs[name]["status"] == "not-a-document", name
        assert docs[name]["reason"].startswith("not a document: binary data of an unknown type"), docs[name]["reason"]


def search(db, query, k=3):
    result = invoke("search", query, "--db", db, "-k", k, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["results"]


def test_pdf_hit_cites_the_pages_its_quote_is_on(db):
    from citeline.schemas.document import segments_from_json

    hit = search(db, "turbine inspection interval hours")[0]
    assert hit["document"] in ("report.pdf", "open.pdf")  # the same pages, one of them encrypted
    assert "450 hours" in hit["quote"] and hit["fragment"].startswith("#page=")
    store = Store(str(db))
    doc = store.document_rows(["canonical", "segments"], f"doc_id = '{hit['document_id']}'")[0]
    chunk = next(c for c in store.chunk_rows(["doc_id", "start", "end", "content", "locators"])
                 if c["doc_id"] == hit["document_id"] and c["content"] == hit["quote"])
    cited = {loc["page"] for loc in json.loads(chunk["locators"])}
    needle = doc["canonical"].index("interval is 450 hours", chunk["start"])
    page_of_needle = next(s.locator.page for s in segments_from_json(doc["segments"]) if s.start <= needle < s.end)
    assert page_of_needle == 3 and page_of_needle in cited
    # A chunk crossing pages opens the page holding most of it ...
    held = {}
    for seg in segments_from_json(doc["segments"]):
        if seg.locator.page in cited:
            held[seg.locator.page] = held.get(seg.locator.page, 0) + max(
                0, min(chunk["end"], seg.end) - max(chunk["start"], seg.start))
    most = max(sorted(held), key=held.get)
    assert int(hit["fragment"].removeprefix("#page=")) == most
    # ... and its label still names every page from where it starts (the chunk runs on to
    # page 4).
    assert f"(pages {min(cited)}–" in hit["label"], hit["label"]


def test_spreadsheet_hit_cites_a_sheet_range(db):
    hits = search(db, "auditors signed off", 5)
    hit = next(h for h in hits if h["document"] == "sales.xlsx")
    assert hit["fragment"].startswith("'Notes '!A")


def test_media_hit_cites_a_time_span(db):
    hit = search(db, "report delivered to the board on Tuesday morning")[0]
    assert hit["document"] == "meeting.ogg" and hit["fragment"].startswith("#t=")
    start, end = map(float, hit["fragment"].removeprefix("#t=").split(","))
    assert 0 <= start < end <= make.SPEECH_SECONDS + 0.5


def test_every_quote_is_the_canonical_slice(db):
    result = invoke("check", "--db", db, "--json")
    assert result.exit_code == 0, result.output
    store = Store(str(db))
    canonical = {d["doc_id"]: d["canonical"] for d in store.document_rows(["doc_id", "canonical"])}
    for row in store.chunk_rows(["doc_id", "start", "end", "content"]):
        assert canonical[row["doc_id"]][row["start"]:row["end"]] == row["content"]


@pytest.mark.parametrize(
    ("query", "document", "fragment", "quoted"),
    [
        ("Which ASN.1 type does libtasn1 not handle", "manual.pdf", "#page=3", make.MANUAL_ANSWER),
        ("run the installer twice before the first start", "handbook.docx", "#char=", "Run the installer twice"),
        ("auditors signed off quarterly results notes", "deck.pptx", "#slide=1", "auditors signed off"),
        ("mooring costs euros a night", "guide.html", "#char=", "Mooring costs 12 euros"),
        ("ssh 22 tcp service port", "services.csv", "#row=", "ssh | 22 | tcp"),
        ("ssh 22 tcp service port", "services.ods", "Ports!B", "ssh | 22 | tcp"),
        ("permission granted harbour software", "LICENSE", "#char=", "Permission is granted"),
    ],
    ids=["pdf-section", "docx", "pptx", "html", "csv", "ods", "no-suffix"],
)
def test_each_new_format_is_found_and_cited_where_its_quote_is(db, query, document, fragment, quoted):
    hit = next(h for h in search(db, query, 10) if h["document"] == document and quoted in h["quote"])
    assert hit["fragment"].startswith(fragment), hit


def test_a_pdf_chunk_is_labelled_with_its_section(db):
    store = Store(str(db))
    rows = [r for r in store.chunk_rows(["path", "section", "text", "content"]) if r["path"] == "manual.pdf"]
    answer = next(r for r in rows if make.MANUAL_ANSWER in r["content"])
    assert answer["section"] == "2.1 Limitations"
    assert answer["text"].startswith(f"[{make.MANUAL_TITLE} > 2.1 Limitations]\n")


def ask(db, query):
    result = invoke("ask", query, "--db", db, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_gate_is_calibrated_for_this_index(db):
    gate = json.loads(invoke("status", "--db", db, "--json").output)["gate"]
    assert gate["how"] == "calibrated" and gate["calibration"]["model"].endswith("all-MiniLM-L6-v2")
    assert gate["table_cut"] > gate["cut"]  # the folder holds tables: they have their own cut


@pytest.mark.parametrize("question, document", [
    ("When did the auditors sign off?", "sales.xlsx"),
    ("When was the report delivered to the board?", "meeting.ogg"),
    ("What share of revenue did the northern region have?", "sales.xlsx"),  # a table chunk, at 0.53
])
def test_spreadsheet_and_transcript_answers_are_not_refused_for_their_kind(db, question, document):
    answer = ask(db, question)
    assert not answer["refused"], answer
    assert document in [c["document"] for c in answer["citations"]]


def test_an_off_topic_question_is_still_refused(db):
    assert ask(db, "Which striker scored the winning goal in the cup final?")["refused"]
