"""The only module that opens LanceDB: open with a stamp check, write, read (queries: index/reader.py)."""
from __future__ import annotations

import os
import shutil
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import lancedb
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.expr import Expr, col, lit
from lancedb.index import FTS, Bitmap, BTree, HnswSq

from citeline.index import compaction
from citeline.index.faults import failpoint
from citeline.index.reader import ChunkReader, has_vector_index
from citeline.index.filters import chunk_predicate, equals, one_of
from citeline.index.tokens import READ_CACHE_BYTES, TokenVectors
from citeline.schemas.errors import IndexMismatch, NoIndex
from citeline.schemas.paths import is_remote
from citeline.schemas.retrieval import Filters
from citeline.schemas.settings import DEFAULT_MODEL
from citeline.schemas.stamp import IndexStamp, stamp_differences
from citeline.schemas.tables import (
    CALIBRATION_KEY, CHUNKS_PREFIX, DOCUMENTS, DOCUMENTS_SCHEMA, FORGOTTEN, FORGOTTEN_SCHEMA, GENERATION,
    GENERATION_FIELD, HEALTH, META, META_SCHEMA, ROOT_KEY, STAMP_KEY, STAT_FIELDS, TOKENS_PREFIX, chunks_schema,
    chunks_table_name,
)


# Below this many chunks a query process holds the vectors and result columns (~30 MB at
# 20k) and scans them exactly, as fast as HNSW here; above it the index spares every query
# process from loading the table (docs/benchmarks.md, section 5).
ANN_MIN_ROWS = 20_000

# A row filter: an expression from index/filters.py, or SQL text that holds no value
# taken from a document (``"status = 'failed'"``).
Filter = Expr | str

# BM25's tokenizer, spelled out rather than left to defaults so that a LanceDB upgrade
# cannot change scores silently: these are the settings every index so far was built
# with (the defaults of the deprecated ``create_fts_index``). No positions: citeline
# runs no phrase queries, and they would make the index bigger.
# Scalar indexes on the columns query-time filters read (index/filters.py), so a prefilter
# looks rows up instead of scanning: a path prefix (BTree answers LIKE 'prefix%'), an
# extractor name (few distinct values: a bitmap), the ids a modified-since filter names.
CHUNK_FILTER_INDEXES = (("path", BTree()), ("extractor", Bitmap()), ("doc_id", BTree()))
DOCUMENT_FILTER_INDEXES = (("mtime_ns", BTree()),)

TEXT_INDEX = FTS(base_tokenizer="simple", language="English", max_token_length=40, lower_case=True,
                 stem=True, remove_stop_words=True, ascii_folding=True, with_position=False)


def now() -> datetime:
    return datetime.now(timezone.utc)


class Store:
    """A citeline index: a ``documents`` table and stamped chunks tables, one of them active.

    Each chunks table holds one embedding model and strategy; ``meta`` names the active
    one. A re-index fills a new table beside the live one and switches the pointer in
    a single commit, so queries never see two models at once.

    Args:
        uri: any LanceDB URI (a local folder by default; object storage works the same).
        ann_min_rows: from this many chunks on, runs end by building an HNSW vector index;
            smaller tables are scanned exactly, which is faster there (index/reader.py).
    """

    def __init__(self, uri: str, ann_min_rows: int = ANN_MIN_ROWS):
        self.uri = uri
        self.db = lancedb.connect(uri, storage_options=storage_options(uri))
        self.ann_min_rows = ann_min_rows

    @classmethod
    def existing(cls, uri: str) -> "Store":
        """The index at ``uri`` for a command that must not create one.

        Raises:
            NoIndex: nothing has been indexed there (and nothing was created).
        """
        if not index_exists(uri):
            raise NoIndex(no_index_message(uri))
        return cls(uri)

    # ---- tables --------------------------------------------------------------------

    def table_names(self) -> list[str]:
        """Every table at this URI that can be opened.

        A kill -9 while LanceDB creates (or drops) a table leaves its folder without a
        manifest: listed, but ``open_table`` says "not found", so every command that checked
        ``has_table`` first failed on it until someone deleted the folder by hand. Such a
        folder is not a table here; a writer removes it (``clean_temp_files``).
        """
        listed = self._listed_tables()
        if is_remote(self.uri):
            return listed
        return [name for name in listed if _committed(self._table_folder(name))]

    def _listed_tables(self) -> list[str]:
        # LanceDB lists tables a page at a time (``table_names()`` stopped after the first
        # ten, so an index with nine re-indexed chunks tables lost its ``meta`` table).
        names: list[str] = []
        token = None
        while True:
            page = self.db.list_tables(page_token=token)
            names.extend(page.tables)
            token = page.page_token
            if not token:
                return names

    def _folder(self) -> Path:
        """The local folder of the index (not for object storage); LanceDB expands a ``~`` too."""
        return Path(self.uri.removeprefix("file://")).expanduser()

    def _table_folder(self, name: str) -> Path:
        return self._folder() / f"{name}.lance"

    def has_table(self, name: str) -> bool:
        return name in self.table_names()

    def documents(self):
        if not self.has_table(DOCUMENTS):
            return self.db.create_table(DOCUMENTS, schema=DOCUMENTS_SCHEMA, exist_ok=True)
        return self.db.open_table(DOCUMENTS)

    def active_table(self) -> str | None:
        """Name of the chunks table queries use, or None for a new index."""
        if not self.has_table(META):
            return None
        rows = _scan(self.db.open_table(META), ["value"], equals("key", "active"))
        return rows[0]["value"] if rows else None

    def meta_value(self, key: str) -> str | None:
        """The value of one meta row, or None when there is none."""
        if not self.has_table(META):
            return None
        rows = _scan(self.db.open_table(META), ["value"], equals("key", key))
        return rows[0]["value"] if rows else None

    def set_meta_value(self, key: str, value: str) -> None:
        """Upsert one meta row (one commit)."""
        self._set_meta(key, value)

    def meta_version(self) -> int:
        """The meta table's version (0 before it exists): it moves with every switch and calibration."""
        return self.db.open_table(META).version if self.has_table(META) else 0

    def documents_version(self) -> int:
        """The documents table's version (0 before it exists): it moves with every record written
        or forgotten, also when the chunks stay (a forgotten document's rows are kept, unowned)."""
        return self.db.open_table(DOCUMENTS).version if self.has_table(DOCUMENTS) else 0

    def activate(self, stamp: IndexStamp) -> None:
        """Point queries at the table of ``stamp`` (one commit: the switch is atomic).

        The same commit drops the re-index mark of that table (``mark_staging``): once
        live, it is no re-index in progress.
        """
        name = chunks_table_name(stamp)
        if not self.has_table(name):
            raise IndexMismatch(f"no chunks table for {stamp} to activate")
        self._set_meta("active", name, unmark=equals("key", "staging") & equals("value", name))

    def mark_staging(self, stamp: IndexStamp) -> None:
        """Record that a re-index builds the table of ``stamp``, so ``gc`` keeps it until the
        re-index switches to it (or another re-index replaces the mark)."""
        self._set_meta("staging", chunks_table_name(stamp))

    def _set_meta(self, key: str, value: str, unmark: Expr | None = None) -> None:
        """Upsert one meta row, deleting the rows ``unmark`` matches in the same commit."""
        meta = self.db.create_table(META, schema=META_SCHEMA, exist_ok=True)
        row = pa.Table.from_pylist([{"key": key, "value": value}], schema=META_SCHEMA)
        merge = meta.merge_insert("key").when_matched_update_all().when_not_matched_insert_all()
        if unmark is not None:
            merge = merge.when_not_matched_by_source_delete(unmark)
        merge.execute(row)

    # ---- gate calibration (query/calibrate.py) ---------------------------------------

    def calibration(self, table: str | None = None) -> str | None:
        """The stored gate calibration (JSON) of the active chunks table (or ``table``), if any.

        It is keyed by table, and a table holds one stamp, so a calibration never outlives
        the model it was measured with: a re-index starts without one.
        """
        name = table or self.active_table()
        if name is None or not self.has_table(META):
            return None
        rows = _scan(self.db.open_table(META), ["value"], equals("key", CALIBRATION_KEY + name))
        return rows[0]["value"] if rows else None

    def set_calibration(self, table: str, raw: str) -> None:
        """Store (or replace) the gate calibration of ``table``."""
        self._set_meta(CALIBRATION_KEY + table, raw)

    def staging_table(self) -> str | None:
        """The chunks table a live or interrupted re-index is building, if any."""
        if not self.has_table(META):
            return None
        rows = _scan(self.db.open_table(META), ["value"], equals("key", "staging"))
        return rows[0]["value"] if rows else None

    def table_stamp(self, name: str) -> IndexStamp:
        raw = (self.db.open_table(name).schema.metadata or {}).get(STAMP_KEY)
        if raw is None:
            raise IndexMismatch(f"the table {name} at {self.uri} carries no citeline stamp")
        return IndexStamp.from_json(raw)

    def stamp(self) -> IndexStamp | None:
        """The stamp of the active chunks table, or None for a new index."""
        name = self.active_table()
        return None if name is None else self.table_stamp(name)

    def require_stamp(self) -> IndexStamp:
        """The active stamp; an index that does not exist yet is an error here.

        Raises:
            NoIndex: nothing has been indexed at this URI.
        """
        found = self.stamp()
        if found is None:
            raise NoIndex(no_index_message(self.uri))
        return found

    def chunk_tables(self) -> list[tuple[str, IndexStamp, bool]]:
        """Every chunks table: (name, stamp, is it the active one)."""
        active = self.active_table()
        names = sorted(n for n in self.table_names() if n.startswith(CHUNKS_PREFIX))
        return [(n, self.table_stamp(n), n == active) for n in names]

    def drop_table(self, name: str) -> None:
        """Drop an idle chunks table and its token-vector twin, if it has one."""
        if name == self.active_table():
            raise IndexMismatch(f"{name} is the active chunks table; it cannot be dropped")
        twin = TOKENS_PREFIX + name.removeprefix(CHUNKS_PREFIX)
        if self.has_table(twin):
            self.db.drop_table(twin)
        failpoint("gc.drop")
        self.db.drop_table(name)
        if self.has_table(META):
            self.db.open_table(META).delete(equals("key", CALIBRATION_KEY + name))

    def chunks(self, expected: IndexStamp, create: bool = False):
        """Open the active chunks table (or create it), refusing one stamped differently.

        Raises:
            IndexMismatch: another embedding model, dimension, pipeline version or strategy.
        """
        found = self.stamp()
        if found is None:
            if not create:
                self.require_stamp()
            # The full-text index exists before the table goes live (empty, it costs
            # nothing; LanceDB also searches rows added since): a run killed before
            # finish_run leaves BM25 working, only lagging.
            self.staging(expected).create_index("text", config=TEXT_INDEX, replace=True)
            self.activate(expected)
            return self.db.open_table(chunks_table_name(expected))
        check_stamp(found, expected, self.uri)
        return self.db.open_table(self.active_table())

    def staging(self, stamp: IndexStamp):
        """The (possibly not yet active) chunks table for ``stamp``, created if missing."""
        return self.db.create_table(chunks_table_name(stamp), schema=chunks_schema(stamp), exist_ok=True)

    def clean_temp_files(self) -> list[str]:
        """Delete what a killed writer left half-written; call only under the writer lock.

        LanceDB commits by writing a new manifest, so a kill -9 mid-write leaves the table
        at its previous version plus an orphaned ``data/.tmp*`` file nobody removes, and a
        kill mid-create (or mid-drop) a table folder without a manifest.
        """
        removed = []
        for path in self.temp_files():
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed.append(str(path))
        return removed

    def temp_files(self) -> list[Path]:
        """The half-written data files and half-made table folders of a killed writer
        (``clean_temp_files``); none on object storage."""
        if is_remote(self.uri):
            return []
        half_made = [folder for folder in map(self._table_folder, self._listed_tables()) if not _committed(folder)]
        return half_made + [tmp for tmp in self._folder().glob("*.lance/data/.tmp*")
                            if not any(tmp.is_relative_to(folder) for folder in half_made)]

    # ---- documents -------------------------------------------------------------------

    def migrate(self) -> None:
        """Give tables written by an older citeline the columns it reads now, empty (writers only).

        A documents table without stat columns gets them (a record without a stat is hashed
        once, then gets one); a documents or chunks table without ``generation`` gets it
        (rows and records of before it all have none, which counts as owned). One commit each.
        """
        table = self.documents()
        if missing := _missing_fields(table, DOCUMENT_ADDED_FIELDS):
            table.add_columns(missing)
        for name in self.table_names():
            if name.startswith(CHUNKS_PREFIX) and (missing := _missing_fields(self.db.open_table(name),
                                                                               [GENERATION_FIELD])):
                self.db.open_table(name).add_columns(missing)

    def needs_migration(self) -> bool:
        """Whether ``migrate`` would write: no documents table yet, or a table without a column it adds."""
        if not self.has_table(DOCUMENTS) or _missing_fields(self.db.open_table(DOCUMENTS), DOCUMENT_ADDED_FIELDS):
            return True
        name = self.active_table()
        return name is not None and bool(_missing_fields(self.db.open_table(name), [GENERATION_FIELD]))

    def upsert_document(self, record: dict) -> None:
        """Write one document record; fields it leaves out keep their stored values."""
        self.upsert_documents([record])

    def upsert_documents(self, records: Sequence[dict]) -> None:
        """Write several document records in one commit (fields left out keep their values)."""
        if not records:
            return
        self.migrate()
        stored = {r["doc_id"]: r for r in self.document_rows(
            where=one_of("doc_id", [r["doc_id"] for r in records]))}
        rows = [_document_row({**stored.get(r["doc_id"], {}), **r}) for r in records]
        table = pa.Table.from_pylist(rows, schema=DOCUMENTS_SCHEMA)
        (self.documents().merge_insert("doc_id")
         .when_matched_update_all().when_not_matched_insert_all().execute(table))

    def delete_documents(self, doc_ids: Sequence[str], stamp: IndexStamp | None, batch: int = 5000) -> None:
        """Remove documents' records, then their chunks (when a chunks table is live), two
        commits per ``batch`` ids: one per document made thousands of deletes slow, and a
        renamed folder forgets all its old records at once.

        Records first: a run stopped between the two leaves chunks no record owns, which no
        reader sees and the next sync deletes (``sweep_unowned``); the other order left
        records saying "indexed" for chunks that were gone.
        """
        live = stamp is not None and self.stamp() is not None
        for start in range(0, len(doc_ids), batch):
            where = one_of("doc_id", doc_ids[start:start + batch])
            self.documents().delete(where)
            failpoint("delete.between")
            if live:
                self.chunks(stamp).delete(where)

    def document_rows(self, columns: Sequence[str] | None = None, where: Filter | None = None) -> list[dict]:
        return _scan(self.documents(), columns, where)

    # ---- documents forgotten, their rows kept for a grace period ------------------------

    def forget_documents(self, doc_ids: Sequence[str], stamp: IndexStamp | None, keep_rows: bool = True,
                         batch: int = 5000) -> int:
        """A sync's forgetting: the records go; with ``keep_rows`` the chunk rows stay for the
        grace period, owned by no record (so no reader sees them), named by their generation in
        the ``forgotten`` table. A file that comes back keeps their vectors (``forgotten_ids``);
        ``purge_forgotten`` deletes them once the grace period is over.

        Commits: the ``forgotten`` rows, then the records (``delete_documents``' batches), then
        the rows of records without a generation (written before generations: they cannot be
        told from owned rows, so they are not kept). A stop after the first leaves names of
        owned rows, which ``purge_forgotten`` drops; after the second, held rows as intended.

        Returns:
            how many documents' rows were kept.
        """
        if not doc_ids:
            return 0
        live = stamp is not None and self.stamp() is not None
        held = []
        if keep_rows and live:
            for start in range(0, len(doc_ids), batch):
                held += [r for r in self.document_rows(["doc_id", "path", GENERATION],
                                                       one_of("doc_id", list(doc_ids[start:start + batch])))
                         if r[GENERATION] is not None]
        if held:
            at = now()
            self.db.create_table(FORGOTTEN, schema=FORGOTTEN_SCHEMA, exist_ok=True).add(pa.Table.from_pylist(
                [{"generation": r[GENERATION], "doc_id": r["doc_id"], "path": r["path"], "forgotten_at": at}
                 for r in held], schema=FORGOTTEN_SCHEMA))
        kept = {r["doc_id"] for r in held}
        for start in range(0, len(doc_ids), batch):
            self.documents().delete(one_of("doc_id", list(doc_ids[start:start + batch])))
        failpoint("delete.between")
        if live and (rest := [d for d in doc_ids if d not in kept]):
            for start in range(0, len(rest), batch):
                self.chunks(stamp).delete(one_of("doc_id", rest[start:start + batch]))
        return len(kept)

    def forgotten(self) -> list[dict]:
        """The ``forgotten`` table's rows (generation, doc_id, path, forgotten_at); none before a sync forgot any."""
        if not self.has_table(FORGOTTEN):
            return []
        return _scan(self.db.open_table(FORGOTTEN), None, None)

    def forgotten_ids(self) -> set[str]:
        """The documents whose rows a sync kept when it forgot them: a file that comes back
        under one of these ids keeps the vectors of its unchanged chunks."""
        return {r["doc_id"] for r in self.forgotten()}

    def kept_generations(self) -> set[int]:
        """Generations named in ``forgotten`` (their rows, if any, are kept, not swept)."""
        return {r["generation"] for r in self.forgotten()}

    def debris_generations(self) -> list[int]:
        """Unowned generations no forgetting keeps: a stopped writer's rows, which the sweep deletes."""
        unowned = self.unowned_generations()
        return sorted(set(unowned) - self.kept_generations()) if unowned else []

    def purge_due(self, grace_days: float, at: datetime | None = None) -> bool:
        """Whether a forgotten document's grace period is over (``purge_forgotten`` would write)."""
        cutoff = (at or now()) - timedelta(days=grace_days)
        return any(r["forgotten_at"] <= cutoff for r in self.forgotten())

    def purge_forgotten(self, grace_days: float, at: datetime | None = None, dry_run: bool = False
                        ) -> list[dict]:
        """Delete the kept rows of documents forgotten ``grace_days`` or more before ``at``
        (now), then their names; names whose rows are gone (the file came back and was
        written again, a re-index) or owned go too. Writers only, under the lock.

        Rows first, names second: a stop in between leaves names of no rows, dropped next time.

        Returns:
            the purged documents (``forgotten`` rows, with ``rows``: how many rows went).
        """
        entries = self.forgotten()
        if not entries:
            return []
        cutoff = (at or now()) - timedelta(days=grace_days)
        unowned = set(self.unowned_generations())
        expired = [r for r in entries if r["forgotten_at"] <= cutoff and r["generation"] in unowned]
        name = self.active_table()
        if expired and name is not None:
            table = self.db.open_table(name)
            where = one_of(GENERATION, sorted({r["generation"] for r in expired}))
            counts = Counter(r[GENERATION] for r in _scan(table, [GENERATION], where))
            expired = [{**r, "rows": counts[r["generation"]]} for r in expired]
            if not dry_run:
                table.delete(where)
        if not dry_run:
            gone = sorted({r["generation"] for r in entries if r["forgotten_at"] <= cutoff or r["generation"] not in unowned})
            if gone:
                failpoint("purge.between")
                self.db.open_table(FORGOTTEN).delete(one_of("generation", gone))
        return expired

    def kept_rows(self) -> tuple[int, int]:
        """(documents, rows) kept for the grace period: unserved rows of forgotten documents."""
        kept = self.kept_generations()
        unowned = set(self.unowned_generations()) & kept if kept else set()
        if not unowned:
            return 0, 0
        table = self.db.open_table(self.active_table())
        rows = _scan(table, ["doc_id"], one_of(GENERATION, sorted(unowned)))
        return len({r["doc_id"] for r in rows}), len(rows)

    # ---- roots -----------------------------------------------------------------------

    def roots(self) -> list[str]:
        """The folders and files ``citeline index`` was given (resolved), sorted."""
        if not self.has_table(META):
            return []
        rows = _scan(self.db.open_table(META), ["key", "value"], None)  # a handful of rows
        return sorted(r["value"] for r in rows if r["key"].startswith(ROOT_KEY))

    def add_root(self, root: str) -> None:
        """Remember a synced folder or file (``check`` warns when it is gone)."""
        self._set_meta(ROOT_KEY + root, root)

    def remove_roots(self, roots: Sequence[str]) -> None:
        if roots and self.has_table(META):
            self.db.open_table(META).delete(one_of("key", [ROOT_KEY + r for r in roots]))

    # ---- health notes (schemas/health.py) ----------------------------------------------

    def health_notes(self) -> dict[str, str]:
        """What runs noted for operators (the last sync, the last check), by key; {} before any."""
        if not self.has_table(HEALTH):
            return {}
        return {r["key"]: r["value"] for r in _scan(self.db.open_table(HEALTH), ["key", "value"], None)}

    def set_health_note(self, key: str, value: str) -> None:
        """Upsert one note (writers only, under the writer lock).

        Every sync notes its end, every 15 minutes on a schedule: the table's old versions
        are pruned after an hour, so its manifests do not pile up (LanceDB keeps 7 days).
        """
        table = self.db.create_table(HEALTH, schema=META_SCHEMA, exist_ok=True)
        row = pa.Table.from_pylist([{"key": key, "value": value}], schema=META_SCHEMA)
        table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(row)
        table.optimize(cleanup_older_than=timedelta(hours=1))

    # ---- chunks ----------------------------------------------------------------------

    def replace_chunks(self, stamp: IndexStamp, doc_id: str, rows: pa.Table, generation: int | None = None,
                       staged: bool = False) -> int:
        """Swap one document's chunks for ``rows`` in a single commit; return the rows now stored."""
        return self.replace_chunks_of(stamp, {doc_id: rows}, {doc_id: generation}, staged)[doc_id]

    def replace_chunks_of(self, stamp: IndexStamp, docs: Mapping[str, pa.Table],
                          generations: Mapping[str, int | None] | None = None, staged: bool = False
                          ) -> dict[str, int]:
        """Swap several documents' chunks for theirs in a single commit; return the rows now stored of each.

        Readers see either the old chunks of every one of them or the new ones, never a mix.
        One commit for many small documents: each commit rewrites the manifest and adds a
        fragment that every later scan and merge reads, so one per document made the
        per-document cost grow with the table (bench/small_files.py). The counts come from
        the table after the commit: the store counts, nobody declares. ``staged`` writes
        into the table of ``stamp`` even while another table is active (re-index).

        Each document's rows are stamped with its ``generations`` entry, which its record must
        carry (written after this commit) for readers to see them; without ``generations`` the
        rows keep theirs (none: owned by any record of their document, as before generations).
        """
        rows = pa.concat_tables([t for t in docs.values() if t.num_rows]) if any(
            t.num_rows for t in docs.values()) else None
        return self.replace_rows_of(stamp, list(docs), rows, generations, staged)

    def replace_rows_of(self, stamp: IndexStamp, doc_ids: Sequence[str], rows: pa.Table | None,
                        generations: Mapping[str, int | None] | None = None, staged: bool = False
                        ) -> dict[str, int]:
        """``replace_chunks_of`` with the documents' new rows in one table (None: no rows)."""
        table = self.staging(stamp) if staged else self.chunks(stamp, create=True)
        where = one_of("doc_id", list(doc_ids))
        if rows is None or not rows.num_rows:
            table.delete(where)
        else:
            rows = rows if generations is None else with_generations(rows, generations)
            (table.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all()
             .when_not_matched_by_source_delete(where).execute(rows))
        stored = Counter(r["doc_id"] for r in _scan(table, ["doc_id"], where))
        return {doc_id: stored[doc_id] for doc_id in doc_ids}

    def chunk_arrow(self, where: Filter, table: str | None = None) -> pa.Table:
        """Every column of the matching rows of the active chunks table (or ``table``), as
        Arrow: vectors stay in their buffers (a rename copies them without reading them)."""
        return self.db.open_table(table or self.active_table()).search().where(where).limit(None).to_arrow()

    def rows_per_document(self, table: str | None = None, owned: bool = False) -> Counter:
        """Rows per document of the active chunks table (or ``table``), in one scan; with ``owned``,
        only the rows a record owns (``unowned_generations``)."""
        name = table or self.active_table()
        if name is None:
            return Counter()
        opened = self.db.open_table(name)
        return Counter(r["doc_id"] for r in _scan(opened, ["doc_id"], self.owned_where(opened) if owned else None))

    def delete_chunks_of(self, table: str, doc_ids: Iterable[str]) -> None:
        """Delete every row of these documents from ``table``, in one commit."""
        if doc_ids := list(doc_ids):
            self.db.open_table(table).delete(one_of("doc_id", doc_ids))

    def count_chunks(self, doc_id: str | None = None, table: str | None = None, owned: bool = False) -> int:
        """Rows of the active chunks table (or ``table``), of one document if given; with
        ``owned``, only those readers see (not a stopped writer's, not a forgotten document's)."""
        name = table or self.active_table()
        if name is None:
            return 0
        opened = self.db.open_table(name)
        where = None if doc_id is None else equals("doc_id", doc_id)
        if owned and (kept := self.owned_where(opened)) is not None:
            return _count(opened, kept if where is None else f"({where.to_sql()}) AND {kept}")
        return _count(opened, where)

    def unowned_generations(self, table=None) -> list[int]:
        """Generations of chunk rows in the active chunks table (or the open ``table``) that
        no document record holds: rows a writer committed without their record (killed,
        or refused by a full disk, between the two commits; or a delete stopped between its
        record and its rows). Usually none.

        One scan of an integer column of each table; an index written before generations
        were kept has none to compare (``migrate`` adds them).
        """
        if table is None:
            if (name := self.active_table()) is None:
                return []
            table = self.db.open_table(name)
        if GENERATION not in table.schema.names:
            return []
        stored = _distinct(table.search().select([GENERATION]).limit(None).to_arrow().column(GENERATION))
        if not stored:
            return []
        documents = self.documents()
        if GENERATION not in documents.schema.names:
            return sorted(stored)
        owned = _distinct(documents.search().select([GENERATION]).limit(None).to_arrow().column(GENERATION))
        return sorted(stored - owned)

    def sweep_unowned(self) -> list[dict]:
        """Delete the chunk rows no record owns (``unowned_generations``); writers only, under the lock.

        A document whose record is still there (its edit's rows were committed, its record
        was not) then owns no rows: its record loses its hash and stat, so the plan reads the
        file again, whatever its bytes (an edit undone since included), and re-indexes it or
        forgets it when the file is gone. Record first, rows second: a stop in between
        leaves rows this finds again.

        Returns:
            the affected documents (doc_id, and path when a record names it).
        """
        unowned = self.debris_generations()  # not the rows kept for forgotten documents (``forget_documents``)
        if not unowned:
            return []
        table = self.chunks(self.require_stamp())
        where = one_of(GENERATION, unowned)
        doc_ids = sorted({r["doc_id"] for r in _scan(table, ["doc_id"], where)})
        records = self.document_rows(["doc_id", "path"], one_of("doc_id", doc_ids)) if doc_ids else []
        if records:
            self.upsert_documents([{"doc_id": r["doc_id"], "sha256": None, "size": None, "mtime_ns": None,
                                    "inode": None, "device": None, "chunk_count": 0} for r in records])
        failpoint("sweep.between")
        table.delete(where)
        paths = {r["doc_id"]: r["path"] for r in records}
        return [{"doc_id": d, "path": paths.get(d)} for d in doc_ids]

    def owned_where(self, table=None) -> str | None:
        """The chunk predicate that hides rows no record owns (None: every row is owned)."""
        return hidden_where(self.unowned_generations(table))

    def chunk_rows(self, columns: Sequence[str] | None = None, where: Filter | None = None,
                   table: str | None = None, owned: bool = False) -> list[dict]:
        """Rows of the active chunks table (or ``table``); with ``owned``, only those a record
        owns, as readers see them (``unowned_generations``)."""
        name = table or self.active_table()
        if name is None:
            return []
        opened = self.db.open_table(name)
        if owned and (kept := self.owned_where(opened)) is not None:
            where = kept if where is None else f"({where if isinstance(where, str) else where.to_sql()}) AND {kept}"
        return _scan(opened, columns, where)

    def modified_since(self, since_ns: int) -> list[str]:
        """Ids of the documents whose file was last read with an mtime at or after ``since_ns``."""
        if "mtime_ns" not in self.documents().schema.names:
            return []
        return [r["doc_id"] for r in self.document_rows(["doc_id"], col("mtime_ns") >= lit(since_ns))]

    def predicate(self, filters: Filters | None) -> str | None:
        """The chunks-table prefilter of ``filters`` (None: none); modified-since reads the documents table."""
        if not filters:
            return None
        since = filters.modified_since
        modified = None if since is None else self.modified_since(int(since.timestamp() * 1_000_000) * 1000)
        return chunk_predicate(filters, modified)

    def reader(self, stamp: IndexStamp, columns: Sequence[str]) -> ChunkReader:
        """The active chunks table opened for queries (stamp checked once, rows as ``columns``)."""
        tokens = TokenVectors(self, stamp, cache_bytes=READ_CACHE_BYTES)
        table = self.chunks(stamp)
        return ChunkReader(table, columns, tokens if tokens.exists() else None, self.owned_where(table))

    def fts_search(self, stamp: IndexStamp, query: str, k: int, columns: Sequence[str] | None = None) -> list[dict]:
        """The k best chunks by BM25 over the embedded ``text`` (``_score``, higher is better)."""
        if not query.strip():
            return []
        search = self.chunks(stamp).search(query, query_type="fts").limit(k)
        if columns:
            search = search.select([*columns, "_score"])
        return search.to_list()

    def finish_run(self, stamp: IndexStamp, staged: bool = False) -> None:
        """Compact the run's small commits and bring every index up to the last row.

        The full-text index only covers rows that existed when it was built or last
        optimised, so every run ends here: a fresh document is found by BM25 at once.
        From ``ann_min_rows`` chunks on, the first run to get there also builds the HNSW
        vector index (minutes at 100k chunks on two cores).
        """
        if staged or self.stamp() is not None:
            table = self.staging(stamp) if staged else self.chunks(stamp)
            if not any(ix.index_type == "FTS" for ix in table.list_indices()):
                table.create_index("text", config=TEXT_INDEX, replace=True)
            if table.count_rows() >= self.ann_min_rows and not has_vector_index(table):
                table.create_index("vector", config=HnswSq(distance_type="cosine"))
                # Lookups by id (rerank texts, BM25-only vectors) stop being full scans.
                table.create_index("chunk_id", config=BTree())
            _add_indexes(table, CHUNK_FILTER_INDEXES)
            failpoint("finish.optimize")
            compaction.optimize(table)  # also folds the rows added since into every index
        _add_indexes(self.documents(), DOCUMENT_FILTER_INDEXES)
        self.documents().optimize()

    def rebuild_full_text(self, stamp: IndexStamp) -> None:
        """Build the active table's full-text index again over every row."""
        self.chunks(stamp).create_index("text", config=TEXT_INDEX, replace=True)

    def needs_finish(self) -> bool:
        """True when the full-text index lags the rows (a run died before finishing)."""
        return self.active_table() is not None and (not self.has_fts() or self.fts_coverage()[1] > 0)

    def has_fts(self) -> bool:
        name = self.active_table()
        return name is not None and any(ix.index_type == "FTS" for ix in self.db.open_table(name).list_indices())

    def fts_coverage(self) -> tuple[int, int]:
        """(indexed, unindexed) rows of the full-text index; (0, rows) when there is none."""
        table = self.db.open_table(self.active_table())
        for ix in table.list_indices():
            if ix.index_type == "FTS":
                stats = table.index_stats(ix.name)
                return stats.num_indexed_rows, stats.num_unindexed_rows
        return 0, table.count_rows()


def _committed(table_folder: Path) -> bool:
    """Whether a listed table folder holds a manifest (a version LanceDB can open)."""
    try:
        with os.scandir(table_folder / "_versions") as entries:
            return any(entry.name.endswith(".manifest") and not entry.name.startswith(".") for entry in entries)
    except (FileNotFoundError, NotADirectoryError):
        return False


def storage_options(uri: str) -> dict[str, str] | None:
    """LanceDB's options for an index on object storage: none beyond the AWS variables it
    reads itself (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...), except that an ``http://``
    endpoint (a local S3-compatible server) must be allowed explicitly, which s3fs does not
    ask for: so one endpoint variable serves the input folder and the index alike."""
    if not is_remote(uri):
        return None
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    return {"allow_http": "true"} if endpoint.startswith("http://") else None


def no_index_message(uri: str) -> str:
    return f"no index at {uri}: run `citeline index PATH` first"


def index_exists(uri: str) -> bool:
    """Whether ``uri`` holds a citeline index, found out without creating anything.

    ``lancedb.connect`` makes a missing local folder, so a read-only command given a
    mistyped path would leave one behind: a local path is looked at on disk first.
    """
    if "://" not in uri or uri.startswith("file://"):
        if not (Path(uri.removeprefix("file://")).expanduser() / f"{META}.lance").is_dir():
            return False
    return Store(uri).active_table() is not None


def model_for(uri: str, model: str | None) -> str:
    """The model asked for, else the one the index was built with, else the default."""
    if model:
        return model
    stamp = Store(uri).stamp() if index_exists(uri) else None  # a new index: create nothing yet
    return stamp.embed_model if stamp else DEFAULT_MODEL


def check_stamp(found: IndexStamp, expected: IndexStamp, uri: str) -> None:
    """Raise IndexMismatch when two stamps would mix incomparable rows."""
    diffs = [f"{field}: index has {has!r}, asked for {wanted!r}"
             for field, (has, wanted) in stamp_differences(found.columns(), expected).items()]
    if diffs:
        err = IndexMismatch(f"the index at {uri} was built differently — " + "; ".join(diffs))
        err.add_note("Help: use the model and strategy the index was built with; move the index to another "
                     "model or strategy with `citeline reindex --model M --strategy S`; or use another --db.")
        raise err


# Columns added to the documents table after indexes existed (Store.migrate).
DOCUMENT_ADDED_FIELDS = [*STAT_FIELDS, GENERATION_FIELD]


def _missing_fields(table, fields) -> list:
    """Those of ``fields`` that ``table`` (written by an older citeline) lacks."""
    return [f for f in fields if f.name not in table.schema.names]


def _add_indexes(table, wanted) -> None:
    """Build the scalar indexes ``table`` lacks (once; ``optimize`` keeps them current)."""
    have = {tuple(ix.columns) for ix in table.list_indices()}
    for column, config in wanted:
        if (column,) not in have and column in table.schema.names:
            table.create_index(column, config=config)


def _scan(table, columns: Sequence[str] | None, where: Filter | None) -> list[dict]:
    query = table.search()
    if where:
        query = query.where(where)
    if columns:
        query = query.select(list(columns))
    return query.limit(None).to_list()


def _count(table, where: Filter | None) -> int:
    """Rows of ``table`` matching ``where``: a scan, since ``count_rows`` takes only SQL text."""
    if where is None:
        return table.count_rows()
    return table.search().where(where).select([]).limit(None).to_arrow().num_rows


def _document_row(record: dict) -> dict:
    row = {field.name: None for field in DOCUMENTS_SCHEMA}
    row.update(record)
    row["updated_at"] = now()
    row["created_at"] = row["created_at"] or row["updated_at"]
    return row


def _distinct(column: pa.ChunkedArray) -> set[int]:
    """The distinct non-null values of an integer column."""
    return set(pc.unique(column.drop_null()).to_pylist())


def hidden_where(unowned: Sequence[int]) -> str | None:
    """SQL keeping the rows whose generation is not one of ``unowned`` (None: nothing to hide).

    >>> hidden_where([7, 9])
    '(generation IS NULL OR generation NOT IN (7, 9))'
    """
    if not unowned:
        return None
    return f"({GENERATION} IS NULL OR {GENERATION} NOT IN ({', '.join(str(int(g)) for g in unowned)}))"


def with_generations(rows: pa.Table, generations: Mapping[str, int | None]) -> pa.Table:
    """``rows`` with each row's ``generation`` set to its document's."""
    values = pa.array([generations[d] for d in rows.column("doc_id").to_pylist()], pa.int64())
    if GENERATION in rows.schema.names:
        index = rows.schema.get_field_index(GENERATION)
        return rows.set_column(index, GENERATION_FIELD, values)
    return rows.append_column(GENERATION_FIELD, values)


def chunk_table(rows: Iterable[dict], stamp: IndexStamp) -> pa.Table:
    """Rows as an Arrow table of the chunks schema (vectors as fixed-size float32 lists)."""
    return pa.Table.from_pylist(list(rows), schema=chunks_schema(stamp))
