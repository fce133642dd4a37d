"""Render a Markdown corpus into the formats people have, to measure retrieval per format.

Every published number came from Markdown. These functions turn each
document of a Markdown corpus into a PDF (typeset, some in two columns, with a
running header and page numbers), a scan of that PDF (raster only, slightly rotated
and noisy: OCR has to read it), a Word file (headings as Heading styles), an HTML
page (headings, with navigation and footer boilerplate around the content) and a
recording (espeak-ng reading the prose). The renderings are made in code from the
corpus itself, so the same needles and questions apply to every format.

Markdown is parsed once by markdown-it-py into ``Block``s; each format writes those
blocks. Fenced code is typeset in the visual formats but not read aloud: a talk does
not spell out source code, and espeak reading it would only add noise minutes.
"""
from __future__ import annotations

import html
import io
import random
import shutil
import subprocess
import wave
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

from citeline.schemas.errors import CitelineError
from citeline.schemas.settings import DOCUMENT_WORKERS

FORMATS = ("md", "pdf", "scan", "docx", "html", "speech")
SUFFIX = {"md": ".md", "pdf": ".pdf", "scan": ".pdf", "docx": ".docx", "html": ".html", "speech": ".wav"}

HEADING, PARAGRAPH, ITEM, CODE, TABLE = "heading", "paragraph", "item", "code", "table"


class RenderError(CitelineError):
    """A rendering tool is missing or failed (espeak-ng, fonts)."""


# The programs a format needs beyond Python packages, to be rendered (speech) or read back
# by the index (scan's OCR), with the Debian packages that install them.
PROGRAMS = {"scan": ("tesseract", "tesseract-ocr tesseract-ocr-eng"), "speech": ("espeak-ng", "espeak-ng")}


def require_programs(formats: Iterable[str]) -> None:
    """Raise before any work when a format's program is missing: the formats run one after
    another, and speech comes last, after the other formats' twenty minutes.

    Raises:
        RenderError: naming every missing program and the apt-get line that installs them.
    """
    missing = {PROGRAMS[f][0]: PROGRAMS[f][1] for f in formats if f in PROGRAMS and not shutil.which(PROGRAMS[f][0])}
    if missing:
        raise RenderError(f"{', '.join(missing)} not installed, needed by --formats "
                          f"(Debian: apt-get install {' '.join(missing.values())})")


@dataclass(frozen=True)
class Block:
    """One block of a document: its kind, its plain text, and a heading's level.

    A table's ``rows`` hold its cells; its ``text`` is the rows joined for speech.
    """

    kind: str
    text: str
    level: int = 0
    rows: tuple[tuple[str, ...], ...] = ()


def blocks(markdown: str) -> list[Block]:
    """The blocks of a Markdown document, inline markup reduced to its text.

    >>> [(b.kind, b.text) for b in blocks("# Title\\n\\nSome *very* `odd` text.\\n\\n- one\\n- two")]
    [('heading', 'Title'), ('paragraph', 'Some very odd text.'), ('item', 'one'), ('item', 'two')]
    >>> blocks("| a | b |\\n|---|---|\\n| 1 | 2 |")[0].rows
    (('a', 'b'), ('1', '2'))
    """
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    out: list[Block] = []
    in_item = 0
    row: list[str] = []
    rows: list[tuple[str, ...]] = []
    for i, tok in enumerate(tokens):
        if tok.type == "list_item_open":
            in_item += 1
        elif tok.type == "list_item_close":
            in_item -= 1
        elif tok.type == "heading_open":
            out.append(Block(HEADING, _inline(tokens[i + 1]), level=int(tok.tag[1])))
        elif tok.type == "paragraph_open":
            out.append(Block(ITEM if in_item else PARAGRAPH, _inline(tokens[i + 1])))
        elif tok.type in ("fence", "code_block"):
            out.append(Block(CODE, tok.content.rstrip("\n")))
        elif tok.type in ("th_open", "td_open"):
            row.append(_inline(tokens[i + 1]))
        elif tok.type == "tr_close":
            rows.append(tuple(row))
            row = []
        elif tok.type == "table_close":
            out.append(Block(TABLE, "\n".join(" ".join(r) for r in rows), rows=tuple(rows)))
            rows = []
    return out


def _inline(token) -> str:
    parts = []
    for child in token.children or ():
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts)


def title_of(name: str, parts: list[Block]) -> str:
    return next((b.text for b in parts if b.kind == HEADING), Path(name).stem)


# -- HTML -------------------------------------------------------------------------

def body_html(parts: list[Block]) -> str:
    """The blocks as HTML elements; every text is escaped."""
    out = []
    items: list[str] = []
    for block in parts + [Block("end", "")]:
        if block.kind != ITEM and items:
            out.append("<ul>" + "".join(items) + "</ul>")
            items = []
        text = html.escape(block.text)
        if block.kind == HEADING:
            out.append(f"<h{block.level}>{text}</h{block.level}>")
        elif block.kind == PARAGRAPH:
            out.append(f"<p>{text}</p>")
        elif block.kind == ITEM:
            items.append(f"<li>{text}</li>")
        elif block.kind == CODE:
            out.append(f"<pre>{text}</pre>")
        elif block.kind == TABLE:
            cells = "".join(
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in block.rows
            )
            out.append(f"<table>{cells}</table>")
    return "\n".join(out)


def render_html(name: str, markdown: str) -> bytes:
    """A web page: the document in ``<main>``, site navigation, a sidebar and a footer around it."""
    parts = blocks(markdown)
    title = html.escape(title_of(name, parts))
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title} | Course notes</title></head>
<body>
<header><nav><a href="/">Home</a> | <a href="/chapters">Chapters</a> | <a href="/search">Search</a>
| <a href="/about">About</a> | <a href="/login">Sign in</a></nav></header>
<aside><h3>On this site</h3><ul><li><a href="/prev">Previous chapter</a></li>
<li><a href="/next">Next chapter</a></li><li><a href="/feedback">Send feedback</a></li></ul></aside>
<main><article>
{body_html(parts)}
</article></main>
<footer><p>Copyright the authors. All rights reserved. Privacy policy | Terms of use | Cookie settings</p>
<p>Subscribe to our newsletter for updates.</p></footer>
</body></html>
"""
    return page.encode("utf-8")


# -- PDF --------------------------------------------------------------------------

_PDF_CSS = """
body { font-family: serif; font-size: 10pt; }
h1 { font-size: 18pt; font-weight: bold; }
h2 { font-size: 14pt; font-weight: bold; }
h3, h4 { font-size: 11pt; font-weight: bold; }
pre { font-family: monospace; font-size: 8pt; }
td { border: 1px solid gray; padding: 2px; }
"""


def render_pdf(name: str, markdown: str, *, columns: int = 1) -> bytes:
    """A typeset PDF with a text layer: ``columns`` text columns, a running header, page numbers.

    >>> import pymupdf
    >>> pdf = pymupdf.open(stream=render_pdf("a.md", "# Alpha\\n\\nBeta gamma."), filetype="pdf")
    >>> "Beta gamma." in pdf[0].get_text(), "Page 1 of 1" in pdf[0].get_text()
    (True, True)
    """
    import pymupdf

    parts = blocks(markdown)
    title = title_of(name, parts)
    story = pymupdf.Story(html=body_html(parts), user_css=_PDF_CSS)
    page = pymupdf.paper_rect("a4")
    margin, gap = 54, 18
    width = (page.width - 2 * margin - (columns - 1) * gap) / columns
    frames = [
        pymupdf.Rect(margin + c * (width + gap), margin + 18, margin + c * (width + gap) + width,
                     page.height - margin)
        for c in range(columns)
    ]
    buffer = io.BytesIO()
    writer = pymupdf.DocumentWriter(buffer)
    more = True
    while more:
        device = writer.begin_page(page)
        for frame in frames:
            more, _ = story.place(frame)
            story.draw(device)
            if not more:
                break
        writer.end_page()
    writer.close()
    doc = pymupdf.open(stream=buffer.getvalue(), filetype="pdf")
    for number, p in enumerate(doc, start=1):
        p.insert_text((margin, margin - 6), f"{title} — course notes", fontsize=8, fontname="helv")
        p.insert_text((page.width / 2 - 20, page.height - margin / 2), f"Page {number} of {len(doc)}",
                      fontsize=8, fontname="helv")
    doc.set_metadata({"title": title})
    return doc.tobytes(garbage=3, deflate=True)


def render_scan(pdf: bytes, *, dpi: int = 200, seed: int = 0) -> bytes:
    """The PDF as a scanner would return it: each page an image, slightly rotated and noisy, no text.

    >>> import pymupdf
    >>> scan = pymupdf.open(stream=render_scan(render_pdf("a.md", "Hello there.")), filetype="pdf")
    >>> scan[0].get_text().strip(), len(scan[0].get_images())
    ('', 1)
    """
    import numpy as np
    import pymupdf
    from PIL import Image

    rng = random.Random(seed)
    source = pymupdf.open(stream=pdf, filetype="pdf")
    out = pymupdf.open()
    for page in source:
        pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
        image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
        image = image.rotate(rng.uniform(-0.8, 0.8), resample=Image.BILINEAR, expand=False, fillcolor=255)
        pixels = np.asarray(image, dtype=np.int16)
        noise = np.random.default_rng(rng.randrange(2**32)).normal(0, 12, pixels.shape)
        noisy = Image.fromarray(np.clip(pixels + noise, 0, 255).astype(np.uint8), "L")
        png = io.BytesIO()  # JPEG, as scanners send: noise makes PNG five times larger
        noisy.save(png, format="JPEG", quality=70)
        target = out.new_page(width=page.rect.width, height=page.rect.height)
        target.insert_image(target.rect, stream=png.getvalue())
    return out.tobytes(garbage=3, deflate=True)


# -- DOCX -------------------------------------------------------------------------

def render_docx(name: str, markdown: str) -> bytes:
    """A Word document: headings as Heading 1-4 styles, lists as List Bullet, tables as tables.

    >>> import docx
    >>> d = docx.Document(io.BytesIO(render_docx("a.md", "# Alpha\\n\\nBeta.")))
    >>> [(p.style.name, p.text) for p in d.paragraphs]
    [('Heading 1', 'Alpha'), ('Normal', 'Beta.')]
    """
    import docx

    document = docx.Document()
    for block in blocks(markdown):
        if block.kind == HEADING:
            document.add_heading(block.text, level=min(block.level, 4))
        elif block.kind == PARAGRAPH:
            document.add_paragraph(block.text)
        elif block.kind == ITEM:
            document.add_paragraph(block.text, style="List Bullet")
        elif block.kind == CODE:
            document.add_paragraph(block.text, style="No Spacing")
        elif block.kind == TABLE and block.rows:
            table = document.add_table(rows=len(block.rows), cols=max(len(r) for r in block.rows))
            for r, cells in enumerate(block.rows):
                for c, cell in enumerate(cells):
                    table.cell(r, c).text = cell
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


# -- speech -----------------------------------------------------------------------

def spoken_blocks(markdown: str) -> list[str]:
    """What a reader says, block by block: headings, prose, list items, table rows; no code.

    >>> spoken_blocks("# Alpha\\n\\nBeta.\\n\\n```\\nx = 1\\n```\\n\\n- gamma")
    ['Alpha.', 'Beta.', 'gamma']
    """
    said = []
    for block in blocks(markdown):
        text = block.text.strip()
        if block.kind == CODE or not text:
            continue
        if block.kind == HEADING and not text.endswith((".", "?", "!")):
            text += "."  # a pause after a heading, as a speaker makes one
        said.append(text)
    return said


@dataclass(frozen=True)
class Spoken:
    """Where one block of text sits in the recording, in seconds."""

    start: float
    end: float
    text: str


SPEECH_RATE = 16000  # Whisper's own rate; espeak's 22,050 Hz made a 43-minute chapter a 113 MB WAV, over --max-bytes


def _at_speech_rate(wav: bytes):
    """espeak-ng's mono 16-bit WAV as 16 kHz samples (int16), resampled with an anti-alias filter."""
    import numpy as np
    from scipy.signal import resample_poly

    with wave.open(io.BytesIO(wav)) as source:
        rate, width = source.getframerate(), source.getsampwidth()
        # espeak streams to stdout with a placeholder length: read what is there
        frames = source.readframes(source.getnframes())
    if width != 2 or source.getnchannels() != 1:
        raise RenderError(f"espeak-ng wrote {source.getnchannels()} channels of {8 * width}-bit samples, not mono 16-bit")
    samples = np.frombuffer(frames, dtype="<i2").astype(np.float32)
    divisor = np.gcd(SPEECH_RATE, rate)
    resampled = resample_poly(samples, SPEECH_RATE // divisor, rate // divisor)
    return np.clip(np.round(resampled), -32768, 32767).astype("<i2")


def render_speech(markdown: str, out: Path, *, words_per_minute: int = 190) -> list[Spoken]:
    """Write ``out`` (a .wav) of espeak-ng reading the document's prose; return each block's span.

    Each block is synthesised on its own and the audio concatenated, so the time at which
    every block is spoken is known exactly: the ground truth for checking a transcript
    chunk's ``#t=`` citation.

    Raises:
        RenderError: espeak-ng is not installed or failed.
    """
    require_programs(["speech"])
    exe = shutil.which(PROGRAMS["speech"][0])
    spans: list[Spoken] = []
    with wave.open(str(out), "wb") as sink:
        sink.setnchannels(1)
        sink.setsampwidth(2)
        sink.setframerate(SPEECH_RATE)
        elapsed = 0.0
        for text in spoken_blocks(markdown):
            done = subprocess.run(
                [exe, "-v", "en-us", "-s", str(words_per_minute), "--stdout", "--stdin"],
                input=text.encode("utf-8"), capture_output=True, timeout=600,
            )
            if done.returncode != 0:
                raise RenderError(f"espeak-ng failed: {done.stderr.decode(errors='replace').strip()[:200]}")
            samples = _at_speech_rate(done.stdout)
            sink.writeframes(samples.tobytes())
            seconds = len(samples) / SPEECH_RATE
            spans.append(Spoken(round(elapsed, 3), round(elapsed + seconds, 3), text))
            elapsed += seconds
    return spans


# -- a whole corpus ---------------------------------------------------------------

def render_document(fmt: str, name: str, markdown: str, folder: Path, *, index: int = 0) -> Rendered:
    """Write ``name`` rendered as ``fmt`` into ``folder``; return the file and, for speech, its spans.

    Every other PDF is set in two columns, so both layouts are measured.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    target = folder / (Path(name).stem + SUFFIX[fmt])
    spans: tuple[Spoken, ...] = ()
    if fmt == "md":
        target.write_text(markdown, encoding="utf-8")
    elif fmt == "pdf":
        target.write_bytes(render_pdf(name, markdown, columns=2 if index % 2 else 1))
    elif fmt == "scan":
        target.write_bytes(render_scan(render_pdf(name, markdown, columns=2 if index % 2 else 1), seed=index))
    elif fmt == "docx":
        target.write_bytes(render_docx(name, markdown))
    elif fmt == "html":
        target.write_bytes(render_html(name, markdown))
    else:
        spans = tuple(render_speech(markdown, target))
    return Rendered(name, target, spans)


@dataclass(frozen=True)
class Rendered:
    """One document rendered: the Markdown name it came from, the file, speech block spans."""

    source: str
    path: Path
    spans: tuple[Spoken, ...] = ()


def render_corpus(fmt: str, documents: Iterable[tuple[str, str]], folder: Path) -> list[Rendered]:
    """Render every ``(name, markdown)`` into ``folder`` (created); return them in order.

    Speech renders ``DOCUMENT_WORKERS`` documents at a time: espeak-ng runs in its own
    process, so two documents keep two cores busy (dev: 68 s one at a time). The others
    render one at a time: PyMuPDF is not thread-safe.
    """
    folder.mkdir(parents=True, exist_ok=True)
    work = [(i, name, text) for i, (name, text) in enumerate(documents)]
    render = lambda job: render_document(fmt, job[1], job[2], folder, index=job[0])  # noqa: E731
    if fmt != "speech":
        return [render(job) for job in work]
    with ThreadPoolExecutor(DOCUMENT_WORKERS, thread_name_prefix="render") as pool:
        return list(pool.map(render, work))
