"""The stored name of a file is one-to-one with its name on disk."""
from __future__ import annotations

import os

from hypothesis import example, given
from hypothesis import strategies as st

from citeline.pipeline.prepare import read_source
from citeline.pipeline.walk import list_files
from citeline.schemas.paths import escape, os_path

# Names as Python hands them over: text, with a lone surrogate for each byte that is not
# UTF-8, and the characters the escapes are made of, so that every near-collision is tried.
_PIECES = st.sampled_from(["\\", "x", "5", "c", "e", "9", "8", "0", "f", "a", ".md", "é", "/",
                           "\udce9", "\udc80", "\udcff", "\\x"])
# Only names the OS can hand over: lone surrogates that together spell valid UTF-8 ("\udce9\udc80\udc80"
# is the bytes of "退") never come from os.fsdecode, which would have decoded them.
_NAMES = st.lists(_PIECES, max_size=12).map("".join).filter(lambda n: os.fsdecode(os.fsencode(n)) == n)


def _old_escape(name: str) -> str:
    """The stored name before names were one-to-one, for names it could tell apart."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


@given(_NAMES)
@example("caf\\xe9.md")  # the pair
@example("caf\udce9.md")
def test_every_name_comes_back_from_its_stored_form(name):
    stored = escape(name)
    stored.encode("utf-8")  # storable: no lone surrogate is left
    assert os_path(stored) == name


@given(_NAMES)
@example("caf\udce9.md")
def test_a_name_and_its_escape_spelled_out_are_stored_apart(name):
    spelled = _old_escape(name)  # the same name with each byte written \xNN, as plain text
    assert (escape(name) == escape(spelled)) == (name == spelled)


@given(_NAMES)
def test_a_name_without_a_backslash_is_stored_as_it_always_was(name):
    # What an index already holds must match on the next sync: nothing re-indexed, nothing lost.
    name = name.replace("\\", "")
    assert escape(name) == _old_escape(name)


def test_the_byte_e9_and_a_literal_backslash_x_e9_are_two_files_read_as_themselves(tmp_path):
    # Before: both were stored as caf\xe9.md, and reading that name read the literal one.
    folder = os.fsencode(tmp_path)
    for name, body in ((b"caf\xe9.md", b"byte"), (b"caf\\xe9.md", b"literal"), (b"plain.md", b"plain")):
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(body)
    found = {f.path: read_source(f.source, 1 << 20, f.root) for f in list_files(tmp_path)}
    assert found == {"caf\\xe9.md": b"byte", "caf\\x5cxe9.md": b"literal", "plain.md": b"plain"}
