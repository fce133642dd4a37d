"""One shape per fact: the stamp rule, the document record, the prior state, bad input vs bugs."""
from datetime import datetime, timezone

import pytest

from citeline.pipeline.prepare import doc_id_for, is_bad_input, tag
from citeline.pipeline.record import Prior, failed_record
from citeline.pipeline.walk import SourceFile
from citeline.schemas.errors import Encrypted
from citeline.schemas.stamp import STAMP_COLUMNS, IndexStamp, Stamp, is_current, stamp_differences
from citeline.schemas.status import DocError, DocStatus, Stage
from citeline.schemas.tables import DOCUMENTS_SCHEMA, chunks_schema

STAMP = Stamp(IndexStamp("m", 384, "1", "E"), "text", "3")


def test_stamp_columns_are_the_tables_stamp_columns():
    assert tuple(STAMP.columns()) == STAMP_COLUMNS
    assert set(STAMP_COLUMNS) <= set(DOCUMENTS_SCHEMA.names) & set(chunks_schema(STAMP.index).names)


@pytest.mark.parametrize("column, value", [
    ("embed_model", "other"), ("embed_dim", 768), ("pipeline_version", "2"), ("strategy", "A"),
    ("extractor", "pdf-text"), ("extractor_version", "2"),
])
def test_a_row_differing_in_any_stamp_column_is_stale(column, value):
    row = {**STAMP.columns(), column: value, "unrelated": 1}
    assert is_current(STAMP.columns(), STAMP) and not is_current(row, STAMP)
    assert stamp_differences(row, STAMP) == {column: (value, STAMP.columns()[column])}


def test_an_index_stamp_ignores_the_extractor():
    assert is_current({**STAMP.columns(), "extractor": "ocr"}, STAMP.index)


def test_a_failed_record_leaves_the_last_good_version_alone():
    created = datetime(2026, 1, 1, tzinfo=timezone.utc)
    file = SourceFile("/docs/a.pdf", "/docs", "a.pdf")
    record = failed_record(file, Prior(attempts=2, created_at=created), DocError("extract", "encrypted", "no"), 7)
    assert record["doc_id"] == doc_id_for("/docs/a.pdf")
    assert (record["status"], record["stage"], record["reason"]) == ("failed", "extract", "encrypted: no")
    assert (record["attempts"], record["chunk_count"], record["created_at"]) == (3, 7, created)
    # Left out, so the stored canonical text, hash and stamps of the searchable version stay.
    assert not {"canonical", "sha256", *STAMP_COLUMNS} & set(record)
    assert set(record) <= set(DOCUMENTS_SCHEMA.names)


def test_prior_of_a_stored_record_or_none():
    assert Prior.of(None) == Prior(0, None)
    assert Prior.of({"attempts": 4, "created_at": None, "status": DocStatus.FAILED}) == Prior(4, None)


@pytest.mark.parametrize("exc, stage, bad", [
    (Encrypted("x"), Stage.EXTRACT, True),
    (OSError(5, "Input/output error"), Stage.READ, True),
    (OSError("cannot identify image file"), Stage.EXTRACT, True),
    (OSError(28, "No space left on device"), Stage.EMBED, False),  # not the document's fault
    (TypeError("a bug"), Stage.CHUNK, False),
    (KeyError("a bug"), Stage.EXTRACT, False),
])
def test_only_bad_input_fails_a_document(exc, stage, bad):
    assert is_bad_input(tag(exc, stage)) is bad


def test_doc_status_formats_as_its_value_in_sql():
    assert f"status = '{DocStatus.FAILED}'" == "status = 'failed'"
