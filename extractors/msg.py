"""Outlook messages (.msg, an OLE2 container of MAPI properties) read with olefile (BSD) and laid
out as an e-mail by extractors/mail.py: headers, body, attachments, each located by its
``MimePart`` (the body is part 1, the attachments parts 2, 3 … by their file names).

The properties read: subject (0x0037), sender (0x0C1A name, 0x0C1F address), display To and Cc
(0x0E04, 0x0E03), the date from the transport headers (0x007D) or the submit time (0x0039), the
plain body (0x1000), else the HTML body (0x1013, read by the HTML extractor); each attachment's
long file name (0x3707) and bytes (0x3701). Strings are UTF-16 (type 001F) or 8-bit (001E, the
message's code page, else windows-1252). An attached Outlook message (an embedded storage, not
bytes) is noted, not read. Before this extractor a .msg crashed the sync (calc.py
claimed every OLE2 file).
"""
from __future__ import annotations

import datetime
import io
import email.parser
import email.policy
from pathlib import PurePath

from citeline.schemas.document import Canonical
from citeline.schemas.errors import Corrupt, Empty, TooLarge, UnsupportedType
from citeline.schemas.options import ExtractOptions

from citeline.extractors.mail import Attachment, Body, build, decode_text
from citeline.extractors.ooxml import OLE2

NAME = "msg"
VERSION = "1"
# olefile parses untrusted binary input: a killable worker (pipeline.isolate).
ISOLATE = True
SUFFIXES = (".msg",)
MAGIC: tuple[bytes, ...] = ()
# A file named .msg whose bytes are OLE2 is read here, not by the OLE2 magic's extractor (calc):
# the directory that would say "Outlook" may lie past the bytes the registry sniffs.
REFINES = OLE2
_STREAM = "__substg1.0_"
_MAX_ATTACHMENTS = 200


def claims(head: bytes) -> bool:
    """An OLE2 file whose directory, when it lies in ``head``, holds MAPI property streams."""
    return head.startswith(OLE2) and _STREAM.encode("utf-16-le") in head


def extract(data: bytes, name: str, options: ExtractOptions | None = None) -> Canonical:
    """Canonical text of an Outlook message.

    Raises:
        Empty, Corrupt (damaged container), UnsupportedType (an OLE2 file that is no
        message), NoText, TooLarge, Timeout.
    """
    import olefile  # imported here so the registry loads without it

    options = options or ExtractOptions()
    if not data:
        raise Empty("empty file (0 bytes)")
    try:
        ole = olefile.OleFileIO(io.BytesIO(data))  # bytes under 1536 would be taken as a file name
    except Exception as exc:  # olefile raises OSError, ValueError, IndexError ... on damaged input
        raise Corrupt(f"damaged OLE2 container, not a readable Outlook message: {type(exc).__name__}: {exc}") from None
    with ole:
        reader = _Reader(ole, options.max_unpacked_bytes)
        try:
            streams = {"/".join(entry) for entry in ole.listdir(streams=True, storages=False)}
            if not any(s.startswith(_STREAM) for s in streams):
                raise UnsupportedType("an OLE2 file that holds no Outlook message (no MAPI property streams)")
            headers = _headers(reader)
            body = reader.text("1000") or ""
            bodies = [Body("1", body)] if body.strip() else []
            if not bodies and (markup := reader.binary("1013")):
                bodies = [Body("1", decode_text(markup, None), html=True)]
            attachments = _attachments(ole, reader, streams)
        except (OSError, ValueError, IndexError, KeyError, TypeError) as exc:
            raise Corrupt(f"damaged Outlook message: {type(exc).__name__}: {exc}") from None
    title = reader.subject or PurePath(name).stem
    return build(headers, bodies, attachments, title, (NAME, VERSION), len(data), options)


class _Reader:
    """MAPI property streams of one storage, by property id (hex, 4 digits)."""

    def __init__(self, ole, limit: int, prefix: str = "") -> None:
        self.ole = ole
        self.limit = limit
        self.prefix = prefix
        self.subject = ""

    def binary(self, prop: str, kind: str = "0102") -> bytes | None:
        path = f"{self.prefix}{_STREAM}{prop}{kind}"
        if not self.ole.exists(path):
            return None
        size = self.ole.get_size(path)
        if size > self.limit:
            raise TooLarge(f"a property stream of {size:,} bytes (limit {self.limit:,}, max_unpacked_bytes)")
        return self.ole.openstream(path).read()

    def text(self, prop: str) -> str | None:
        wide = self.binary(prop, "001F")
        if wide is not None:
            return wide.decode("utf-16-le", errors="replace").rstrip("\x00")
        narrow = self.binary(prop, "001E")
        return None if narrow is None else decode_text(narrow.rstrip(b"\x00"), None)


def _headers(reader: _Reader) -> list[tuple[str, str]]:
    reader.subject = reader.text("0037") or ""
    name, address = reader.text("0C1A") or reader.text("0042") or "", reader.text("0C1F") or reader.text("0065") or ""
    sender = f"{name} <{address}>" if name and address and name != address else name or address
    transport = email.parser.HeaderParser(policy=email.policy.compat32).parsestr(reader.text("007D") or "")
    date = str(transport.get("Date") or "").strip() or _submit_time(reader)
    return [("From", sender), ("To", reader.text("0E04") or ""), ("Cc", reader.text("0E03") or ""),
            ("Date", date), ("Subject", reader.subject)]


def _submit_time(reader: _Reader) -> str:
    """PR_CLIENT_SUBMIT_TIME (0x0039, a FILETIME) from the fixed-size property stream: 32 bytes
    of header, then 16-byte entries (tag, flags, value)."""
    path = f"{reader.prefix}__properties_version1.0"
    if not reader.ole.exists(path) or reader.ole.get_size(path) > 1 << 20:
        return ""
    table = reader.ole.openstream(path).read()
    for at in range(32, len(table) - 15, 16):
        if int.from_bytes(table[at:at + 4], "little") == 0x00390040:
            ticks = int.from_bytes(table[at + 8:at + 16], "little")
            try:
                when = datetime.datetime(1601, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=ticks // 10)
            except OverflowError:
                return ""
            return when.strftime("%a, %d %b %Y %H:%M:%S +0000")
    return ""


def _attachments(ole, reader: _Reader, streams: set[str]) -> list[Attachment]:
    folders = sorted({s.split("/", 1)[0] for s in streams if s.startswith("__attach_version1.0_#")})
    out = []
    for number, folder in enumerate(folders[:_MAX_ATTACHMENTS], start=1):
        part = _Reader(ole, reader.limit, f"{folder}/")
        name = part.text("3707") or part.text("3704") or part.text("3001") or f"attachment {number}"
        data = part.binary("3701")
        if data is None:
            # An attached Outlook message is a storage (3701000D), not bytes: nothing to hand on.
            data = b""
        out.append(Attachment(str(number + 1), name, data))  # after the body, part 1, as MIME numbers them
    return out
