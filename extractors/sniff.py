"""What a file is, from its first bytes: for extractors that have no magic of their own
(text) and for the one-line reason an unsupported file fails with."""
from __future__ import annotations

import codecs
from pathlib import PurePath

# Prefixes of formats people keep beside their documents; the name is what an operator reads.
_KNOWN = (
    (b"PK\x03\x04", "a zip archive"),
    (b"PK\x05\x06", "an empty zip archive"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"BZh", "a bzip2 archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"\x28\xb5\x2f\xfd", "a zstd archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"MZ", "a Windows executable"),
    (b"\xca\xfe\xba\xbe", "a Java class or Mach-O binary"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"BM", "a BMP image"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"%!PS", "a PostScript file"),
    (b"{\\rtf", "an RTF document"),
    (b"\x00asm", "a WebAssembly module"),
    (b"wOFF", "a web font"),
    (b"wOF2", "a web font"),
)
# Zip-based formats name themselves in a first, stored entry called ``mimetype`` (OpenDocument,
# EPUB): read from the zip's first local header, so a reason says "an EPUB e-book", not "a zip".
_ZIP_MIMETYPES = {
    b"application/epub+zip": "an EPUB e-book",
    b"application/vnd.oasis.opendocument.text": "an OpenDocument text",
    b"application/vnd.oasis.opendocument.spreadsheet": "an OpenDocument spreadsheet",
    b"application/vnd.oasis.opendocument.presentation": "an OpenDocument presentation",
    b"application/vnd.oasis.opendocument.graphics": "an OpenDocument drawing",
    b"application/vnd.oasis.opendocument.formula": "an OpenDocument formula",
}
# Suffixes of files kept beside documents that are not documents themselves: what each is, as
# "not a document: ..." says it. The bytes decide first where they can (``what_it_is``).
_NOT_DOCUMENTS = {
    **dict.fromkeys((".py", ".pyw", ".pyi"), "Python source"),
    **dict.fromkeys((".go",), "Go source"),
    **dict.fromkeys((".js", ".mjs", ".cjs", ".jsx"), "JavaScript source"),
    **dict.fromkeys((".ts", ".tsx"), "TypeScript source"),
    **dict.fromkeys((".c", ".h"), "C source"),
    **dict.fromkeys((".cc", ".cpp", ".cxx", ".hpp", ".hh"), "C++ source"),
    **dict.fromkeys((".rs",), "Rust source"),
    **dict.fromkeys((".java",), "Java source"),
    **dict.fromkeys((".kt", ".kts"), "Kotlin source"),
    **dict.fromkeys((".rb",), "Ruby source"),
    **dict.fromkeys((".php",), "PHP source"),
    **dict.fromkeys((".cs",), "C# source"),
    **dict.fromkeys((".swift",), "Swift source"),
    **dict.fromkeys((".sh", ".bash", ".zsh", ".ps1", ".bat", ".cmd"), "a shell script"),
    **dict.fromkeys((".sql",), "SQL source"),
    **dict.fromkeys((".css", ".scss", ".sass", ".less"), "a stylesheet"),
    **dict.fromkeys((".sig", ".asc", ".p7s", ".gpg", ".pgp"), "a signature"),
    **dict.fromkeys((".pem", ".crt", ".cer", ".key", ".der"), "a key or certificate"),
    **dict.fromkeys((".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".zst", ".7z", ".rar"), "an archive"),
    **dict.fromkeys((".exe", ".dll", ".so", ".dylib", ".o", ".a", ".class", ".pyc", ".wasm"), "a program"),
    **dict.fromkeys((".ttf", ".otf", ".woff", ".woff2"), "a font"),
    **dict.fromkeys((".db", ".sqlite", ".sqlite3"), "a database"),
    **dict.fromkeys((".lock",), "a lock file"),
}
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# Control characters other than tab, newline, carriage return and form feed.
_BINARY_CONTROLS = bytes(c for c in range(32) if c not in (9, 10, 12, 13)) + b"\x7f"


def looks_like_text(head: bytes) -> bool:
    """Whether the first bytes of a file read as text: a Unicode BOM, or UTF-8 (a
    character cut off at the end of ``head`` allowed) with no NUL and almost no other
    control characters.

    >>> looks_like_text(b"Apache License\\n  Version 2.0"), looks_like_text(b"\\x7fELF\\x02\\x01")
    (True, False)
    """
    if not head.strip():
        return False
    if head.startswith(_BOMS):
        return True
    if b"\x00" in head:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    controls = sum(head.count(bytes([c])) for c in _BINARY_CONTROLS)
    return controls <= len(head) // 100


def has_no_real_suffix(name: str) -> bool:
    """No suffix, or one made of digits that no format uses (``Apache-2.0``, ``notes.1``).

    >>> has_no_real_suffix("LICENSE"), has_no_real_suffix("Apache-2.0"), has_no_real_suffix("a.py")
    (True, True, False)
    """
    suffix = PurePath(name).suffix
    return not suffix or suffix[1:].isdigit()


def zip_mimetype(head: bytes) -> str:
    """What a zip says it is in its first entry, ``mimetype`` (stored, uncompressed), or "".

    >>> zip_mimetype(b"PK\x03\x04" + bytes(14) + (20).to_bytes(4, "little") * 2 + (8).to_bytes(2, "little")
    ...              + bytes(2) + b"mimetypeapplication/epub+zip")
    'an EPUB e-book'
    """
    if not head.startswith(b"PK\x03\x04") or len(head) < 30:
        return ""
    size = int.from_bytes(head[18:22], "little")
    name_len, extra_len = int.from_bytes(head[26:28], "little"), int.from_bytes(head[28:30], "little")
    if head[30:30 + name_len] != b"mimetype" or size > 200:
        return ""
    start = 30 + name_len + extra_len
    return _ZIP_MIMETYPES.get(head[start:start + size].strip(), "")


def describe(head: bytes, name: str) -> str:
    """One short line naming what the file looks like, for an unsupported file's reason.

    >>> describe(b"7z\\xbc\\xaf\\x27\\x1c\\x00\\x04", "backup.7z")
    'a 7-Zip archive (.7z)'
    >>> describe(b"print('hi')\\n", "tool.py")
    'a text file with suffix .py'
    """
    suffix = PurePath(name).suffix.lower()
    shown = f" ({suffix})" if suffix else ""
    zipped = zip_mimetype(head)
    if zipped:
        return zipped + shown
    for magic, kind in _KNOWN:
        if head.startswith(magic):
            return kind + shown
    if not head:
        return "an empty file" + shown
    if looks_like_text(head):
        return f"a text file with suffix {suffix}" if suffix else "a text file"
    return f"binary data of an unknown type{shown}, starting {head[:8]!r}"


def what_it_is(head: bytes, name: str) -> str:
    """What a file that no extractor reads is, in a few words (``not a document: ...``): a
    known kind of program, archive or signature by its suffix, else what its bytes look like.

    >>> what_it_is(b"print('hi')\\n", "tool.py"), what_it_is(b"PK\\x03\\x04", "x.zip")
    ('Python source', 'a zip archive (.zip)')
    >>> what_it_is(b"\\x00\\x01", "blob.xyz")
    "binary data of an unknown type (.xyz), starting b'\\\\x00\\\\x01'"
    """
    suffix = PurePath(name).suffix.lower()
    known = describe(head, name)
    by_bytes = not (known.startswith(("binary data", "a text file")))  # a magic the bytes open with
    return known if by_bytes or suffix not in _NOT_DOCUMENTS else _NOT_DOCUMENTS[suffix]
