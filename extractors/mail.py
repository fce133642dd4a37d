"""The canonical text of one e-mail, whatever its container (.eml by extractors/eml.py, Outlook
.msg by extractors/msg.py): its headers at the top (From, To, Cc, Date, Subject as text), then
its body, then each attachment's text under a ``## Attachment: name`` heading. Every block's
segment is a ``MimePart`` locator: the headers, the body part, the attachment (by its part
number and file name), so a citation says which part of the message it quotes.

An attachment is read by the extractor the registry chooses for its bytes and name (a PDF by
the PDF extractor, a picture by OCR), within what is left of the message's time limit. One
that cannot be read (a picture with no text, an unsupported type, a damaged file, whatever its
parser raises) is left out with a note that names it: the message is still read.
"""
from __future__ import annotations

import codecs
from dataclasses import dataclass, replace

from citeline.schemas.document import Canonical
from citeline.schemas.errors import DocumentError, NoText
from citeline.schemas.locator import MimePart
from citeline.schemas.options import ExtractOptions

from citeline.extractors.blocks import Writer, one_line, text_limit
from citeline.extractors.clean import Deadline, clean

HEADERS = ("From", "To", "Cc", "Date", "Subject")
MAX_ATTACHMENTS = 200
_LATIN = {"latin-1", "iso8859-1", "cp1252", "ascii", "iso8859-15"}


@dataclass(frozen=True)
class Attachment:
    part: str  # its MIME part number ("2", "1.3") or, in a .msg, its attachment number
    name: str
    data: bytes


@dataclass(frozen=True)
class Body:
    part: str
    text: str  # plain text, or the markup of an HTML body when ``html``
    html: bool = False


def decode_text(payload: bytes, charset: str | None) -> str:
    """A text part's bytes in its declared charset; without one (or an unknown one), UTF-8,
    else windows-1252, the encodings mail clients fall back to. Bad bytes become U+FFFD.

    >>> decode_text("café".encode("latin-1"), "iso-8859-1"), decode_text(b"caf\\xc3\\xa9", None)
    ('café', 'café')
    >>> decode_text(b"caf\\xe9", "x-unknown"), decode_text("I’m".encode(), "iso-8859-1")
    ('café', 'I’m')
    """
    if charset:
        try:
            codec = codecs.lookup(charset.strip().strip('"'))
            if codec.name in _LATIN and not payload.isascii():
                # Mail clients label UTF-8 as Latin-1 often enough (and the reverse almost
                # never decodes as UTF-8 by chance) that valid UTF-8 wins: "I’m", not "Iâm".
                try:
                    return payload.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            if getattr(codec, "_is_text_encoding", True):
                return payload.decode(codec.name, errors="replace")
        except (LookupError, ValueError):
            pass
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return payload.decode("cp1252", errors="replace")


def build(headers: list[tuple[str, str]], bodies: list[Body], attachments: list[Attachment], title: str,
          extractor: tuple[str, str], data_size: int, options: ExtractOptions) -> Canonical:
    """The message's canonical text (see the module docstring).

    Raises:
        NoText: neither headers, body nor attachment holds text; TooLarge; Timeout.
    """
    deadline = Deadline(options.time_limit_s)
    writer = Writer(text_limit(options, data_size))
    shown = "\n".join(f"{key}: {one_line(value)}" for key, value in headers if one_line(value))
    writer.add(shown, MimePart(""))
    for body in bodies:
        deadline.check(f"body part {body.part}")
        writer.add((_html_text(body.text, options) if body.html else clean(body.text)).strip(), MimePart(body.part))
    notes: list[str] = []
    for attachment in attachments[:MAX_ATTACHMENTS]:
        deadline.check(f"attachment {attachment.part}")
        name = one_line(attachment.name)[:200] or f"part {attachment.part}"
        try:
            text = _attachment_text(attachment, name, options, deadline)
        except DocumentError as exc:
            notes.append(f"attachment {name!r} not read: {exc.kind}: {one_line(str(exc))[:200]}")
            continue
        except Exception as exc:  # noqa: BLE001 - whatever its parser raised, the message itself is read
            notes.append(f"attachment {name!r} not read: {type(exc).__name__}: {one_line(str(exc))[:200]}")
            continue
        if text.strip():
            writer.add(f"## Attachment: {name}\n\n{text.strip()}", MimePart(attachment.part, name))
    if len(attachments) > MAX_ATTACHMENTS:
        notes.append(f"{len(attachments) - MAX_ATTACHMENTS} attachments past the first {MAX_ATTACHMENTS} not read")
    if not writer.segments:
        raise NoText("the message has no headers, body or readable attachment")
    return Canonical(text=writer.text, title=one_line(title)[:300], extractor=extractor[0],
                     extractor_version=extractor[1], segments=writer.segments, notes=tuple(notes))


def _html_text(markup: str, options: ExtractOptions) -> str:
    """An HTML body as the HTML extractor reads it; its text only (the message's locators
    say where it is). A BOM makes the extractor read the bytes as the UTF-8 they are."""
    from citeline.extractors import html

    try:
        return html.extract(codecs.BOM_UTF8 + markup.encode("utf-8"), "body.html", options).text
    except NoText:
        return ""


def _attachment_text(attachment: Attachment, name: str, options: ExtractOptions, deadline: Deadline) -> str:
    """Raises:
        DocumentError: the attachment cannot be read (its kind says why)."""
    from citeline import extractors

    module = extractors.for_bytes(attachment.data[:8192], name)
    left = deadline.left()
    return module.extract(attachment.data, name, replace(options, time_limit_s=left if left else options.time_limit_s)).text
