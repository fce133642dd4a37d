"""The extractor bugs the hostile folder exposed, pinned where they live (no model needed)."""
import make
import pytest

from citeline.extractors import pdf, text
from citeline.schemas.errors import Corrupt, Empty


def test_a_zero_byte_text_file_is_empty_like_every_other_type():
    with pytest.raises(Empty, match="0 bytes"):
        text.extract(b"", "notes.md")


def test_a_pdf_whose_only_page_cannot_be_decoded_is_corrupt_not_textless():
    with pytest.raises(Corrupt, match=r"page 1 could not be read: its content is damaged \(MuPDF: .*zlib error"):
        pdf.extract(make.corrupt_stream_pdf(pages=1, bad=(0,)), "bad.pdf")


def test_a_damaged_page_is_named_and_the_readable_pages_are_kept():
    whole = pdf.extract(make.text_pdf(2), "ok.pdf")
    damaged = pdf.extract(make.corrupt_stream_pdf(pages=2, bad=(0,)), "half.pdf")
    first_line_of_page_1, last_line_of_page_2 = whole.text.splitlines()[0], whole.text.splitlines()[-1]
    assert last_line_of_page_2 in damaged.text and first_line_of_page_1 not in damaged.text
    assert [s.locator.page for s in damaged.segments] == [2]
    assert any(n.startswith("page 1 could not be read: its content is damaged") for n in damaged.notes)


@pytest.mark.parametrize("build", [make.two_column_pdf, lambda: make.text_pdf(3), make.chapters_pdf,
                                   lambda: make.encrypted_pdf("")], ids=["columns", "text", "chapters", "owner-only"])
def test_sound_pdfs_get_no_damage_note(build):
    assert not [n for n in pdf.extract(build(), "ok.pdf").notes if "damaged" in n]
