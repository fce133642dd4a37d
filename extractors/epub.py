"""EPUB e-books (EPUB 2 and 3) read with EbookLib: the spine's chapters in reading order, each
an XHTML page read by the HTML extractor (headings, lists, tables; navigation left out), joined
into one canonical text. Each chapter's segments keep the HTML extractor's ``Passage`` locators
(its heading path), shifted to where the chapter lands. The book's navigation document (its table
of contents) is not a chapter and is not read. Before this extractor an EPUB failed as "a zip
archive"."""
from __future__ import annotations

import io
import zipfile
from pathlib import PurePath

from citeline.schemas.document import Canonical, Segment
from citeline.schemas.errors import Corrupt, DocumentError, Empty, NoText, TooLarge
from citeline.schemas.options import ExtractOptions

from citeline.extractors import html
from citeline.extractors.blocks import amplified, text_limit
from citeline.extractors.clean import Deadline
from citeline.extractors.ooxml import ZIP

NAME = "epub"
VERSION = "1"
# Parses untrusted zip and XML input: run in a killable worker process (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".epub",)
MAGIC: tuple[bytes, ...] = ()
_MIMETYPE = b"mimetypeapplication/epub+zip"


def claims(head: bytes) -> bool:
    """An EPUB: a zip whose first, stored entry is its mimetype."""
    return head.startswith(ZIP) and _MIMETYPE in head[:200]


def _check(data: bytes, options: ExtractOptions) -> None:
    """Empty, not a zip, damaged, or a zip bomb: refused before EbookLib inflates anything."""
    if not data:
        raise Empty("empty file (0 bytes)")
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise Corrupt(f"damaged or truncated zip, not readable as an EPUB e-book: {exc}") from None
    unpacked = sum(info.file_size for info in infos)
    if unpacked > options.max_unpacked_bytes:
        raise TooLarge(f"the e-book would unpack to {unpacked:,} bytes from {len(data):,} (limit "
                       f"{options.max_unpacked_bytes:,}, max_unpacked_bytes): refused as a zip bomb")


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of an EPUB's chapters, in spine order.

    Raises:
        Empty, Corrupt (not a zip, damaged, no readable package document), TooLarge (zip bomb),
        NoText, Timeout.
    """
    from ebooklib import epub  # EbookLib: imported here so the registry loads without it

    options = options or ExtractOptions()
    _check(data, options)
    try:
        book = epub.read_epub(io.BytesIO(data), {"ignore_ncx": True})
    except (epub.EpubException, KeyError, ValueError, AttributeError, TypeError, IndexError,
            zipfile.BadZipFile) as exc:
        raise Corrupt(f"EbookLib cannot read the e-book: {type(exc).__name__}: {exc}") from None
    deadline = Deadline(options.time_limit_s)
    limit = text_limit(options, len(data))
    pieces: list[str] = []
    segments: list[Segment] = []
    offset = 0
    # A chapter the spine lists again is read once: a 4 KB book whose spine names one chapter
    # 600 times made ~24,000 characters per byte of file until the time limit.
    spine = list(dict.fromkeys(idref for idref, _linear in book.spine))
    for number, idref in enumerate(spine, start=1):
        deadline.check(f"chapter {number} of {len(spine)}")
        item = book.get_item_with_id(idref)
        if item is None or not item.is_chapter():
            continue
        try:
            chapter = html.extract(item.get_content(), item.get_name(), options)
        except NoText:
            continue  # a cover page or a blank separator
        except TooLarge:
            raise
        except DocumentError as exc:
            raise Corrupt(f"chapter {item.get_name()} cannot be read: {exc}") from None
        if pieces:
            pieces.append("\n\n")
            offset += 2
        pieces.append(chapter.text)
        segments += [Segment(s.start + offset, s.end + offset, s.locator) for s in chapter.segments]
        offset += len(chapter.text)
        if offset > limit:
            raise amplified(limit)
    if not segments:
        raise NoText("the e-book holds no text in its chapters")
    title = (book.title or "").strip() or PurePath(name).stem
    return Canonical(text="".join(pieces), title=title, extractor=NAME, extractor_version=VERSION,
                     segments=tuple(segments))
