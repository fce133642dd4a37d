"""E-mail messages (.eml, RFC 5322 with MIME) read with the standard library's ``email``
package (policy.default: encoded-word headers decoded, every transfer encoding undone) and laid
out by extractors/mail.py: headers, body, attachments, each located by its ``MimePart``.

The body is the text/plain part, or the text/html part (read by the HTML extractor) when a
multipart/alternative has no plain text; a part's charset is the declared one, else UTF-8, else
windows-1252. A file saved as UTF-16 (no BOM, as some exports write it) is decoded first. Parts
are numbered as IMAP numbers them ("1", "2.1"). A message attached as message/rfc822 is read as
an attachment (its own headers and body). Before this extractor a .eml failed "not read".
Attachments are sections of the message, not documents of their own: one
file is one document in the index.
"""
from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage
from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Empty
from citeline.schemas.options import ExtractOptions

from citeline.extractors.mail import HEADERS, Attachment, Body, build, decode_text

NAME = "eml"
VERSION = "1"
# MIME parsing and the attachments' extractors: a killable worker (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".eml",)
MAGIC: tuple[bytes, ...] = ()
_MAX_DEPTH = 8  # multiparts nested deeper are not walked (a hostile message may nest thousands)


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of one e-mail message.

    Raises:
        Empty, NoText, TooLarge, Timeout.
    """
    options = options or ExtractOptions()
    if not data.strip(b" \t\r\n\x00"):
        raise Empty("empty file" if not data else "the file holds only whitespace")
    message = email.message_from_bytes(_as_8bit(data), policy=email.policy.default)
    bodies, attachments = parts(message)
    title = str(message.get("Subject") or "").strip() or PurePath(name).stem
    return build(headers_of(message), bodies, attachments, title, (NAME, VERSION), len(data), options)


def headers_of(message: EmailMessage) -> list[tuple[str, str]]:
    """The headers a reader looks for, decoded; a header the parser cannot read as its
    type (a malformed address or date) is shown as written."""
    raw = {key.lower(): value for key, value in reversed(list(message.raw_items()))}  # the first of each
    out = []
    for key in HEADERS:
        try:
            value = message.get(key)
        except (ValueError, TypeError, IndexError, AttributeError, LookupError):
            value = raw.get(key.lower())
        if value is not None:
            out.append((key, str(value)))
    return out


def parts(message: EmailMessage) -> tuple[list[Body], list[Attachment]]:
    """The body parts to read and the attachments, in message order."""
    bodies: list[Body] = []
    attachments: list[Attachment] = []
    _walk(message, "", 0, bodies, attachments)
    return bodies, attachments


def _walk(part: EmailMessage, number: str, depth: int, bodies: list[Body], attachments: list[Attachment]) -> None:
    if depth > _MAX_DEPTH:
        return
    if part.is_multipart():
        children = [c for c in part.get_payload() if isinstance(c, EmailMessage)]
        numbered = [(f"{number}.{k}" if number else str(k), child) for k, child in enumerate(children, start=1)]
        if part.get_content_type() == "multipart/alternative":
            numbered = _alternative(numbered)
        for child_number, child in numbered:
            _walk(child, child_number, depth + 1, bodies, attachments)
        return
    number = number or "1"
    ctype = part.get_content_type()
    filename = _filename(part)
    if ctype == "message/rfc822":
        inner = part.get_payload()
        data = inner[0].as_bytes() if isinstance(inner, list) and inner else _payload(part)
        attachments.append(Attachment(number, (filename or "attached message") + ("" if filename.endswith(".eml") else ".eml"), data))
    elif ctype in ("text/plain", "text/html") and part.get_content_disposition() != "attachment" and not filename:
        text = decode_text(_payload(part), part.get_content_charset())
        bodies.append(Body(number, text, html=ctype == "text/html"))
    elif part.get_content_disposition() == "attachment" or filename or not ctype.startswith(("text/", "multipart/")):
        attachments.append(Attachment(number, filename or f"part {number} ({ctype})", _payload(part)))


def _alternative(numbered: list) -> list:
    """Of a multipart/alternative's versions, the one to read: plain text that holds text,
    else the richest other version (the last, as RFC 2046 orders them)."""
    for number, child in numbered:
        if child.get_content_type() == "text/plain" and decode_text(_payload(child), child.get_content_charset()).strip():
            return [(number, child)]
    return numbered[-1:]


def _filename(part: EmailMessage) -> str:
    try:
        return part.get_filename() or ""
    except (ValueError, TypeError, IndexError, AttributeError):
        return ""


def _payload(part: EmailMessage) -> bytes:
    """The part's bytes with its transfer encoding undone (base64 with bad padding and
    malformed quoted-printable decode as far as they go, as the parser does)."""
    payload = part.get_payload(decode=True)
    return payload if isinstance(payload, bytes) else b""


def _as_8bit(data: bytes) -> bytes:
    """A message saved as UTF-16 (every other byte NUL; a BOM or none) as UTF-8 bytes."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace").encode("utf-8")
    head = data[:2000]
    if len(head) >= 4 and head[1::2].count(0) > len(head) // 4:
        return data.decode("utf-16-le", errors="replace").encode("utf-8")
    if len(head) >= 4 and head[0::2].count(0) > len(head) // 4:
        return data.decode("utf-16-be", errors="replace").encode("utf-8")
    return data
