"""Which document a name means, and the name each document is shown by.

A document's stored ``path`` is relative to the folder that was synced, so two synced folders
that both hold ``notes.md`` give two documents with the same path. They are
shown by the shortest ending of their source path that no other document shares
(``proj1/notes.md``, ``proj2/notes.md``), and found by any ending of it that names one document;
an ending that names several lists them. Pure functions over ``(doc_id, source)`` rows: the
callers (``citeline chunks``/``rm``/``status``, ``Index.document``, the HTTP API) read the rows.
"""
from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Mapping


class Ambiguous(KeyError):
    """A name that more than one document ends with; ``candidates`` are their shown names."""

    def __init__(self, ref: str, candidates: Iterable[str], what: str = "documents"):
        self.ref = ref
        self.candidates = tuple(sorted(candidates))
        shown = ", ".join(self.candidates[:10]) + (f" (+{len(self.candidates) - 10} more)"
                                                   if len(self.candidates) > 10 else "")
        super().__init__(f"{ref!r} names {len(self.candidates)} {what}: {shown}; "
                         f"give more of the path, the absolute path or the id")

    def __str__(self) -> str:
        return self.args[0]


def parts(source: str) -> list[str]:
    """The components of a stored source: a local path's, or an object URL's after its scheme.

    >>> parts("/a/b/notes.md"), parts("s3://bucket/docs/notes.md")
    (['a', 'b', 'notes.md'], ['s3://bucket', 'docs', 'notes.md'])
    """
    scheme, sep, rest = source.partition("://")
    if not sep:
        return [p for p in source.split("/") if p]
    first, *others = rest.split("/")
    return [f"{scheme}://{first}", *[p for p in others if p]]


def _tail(components: list[str], k: int) -> str:
    if k >= len(components):
        return "/".join(components) if "://" in components[0] else "/" + "/".join(components)
    return "/".join(components[-k:])


def shown_names(docs: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """The name to show each document by: its path under its synced folder, lengthened by the
    folders above it until no other document has the same name.

    Args:
        docs: doc_id -> (source, path); source absolute (or a URL), path relative to the root.

    >>> names = shown_names({"1": ("/x/proj1/notes.md", "notes.md"), "2": ("/y/proj2/notes.md", "notes.md"),
    ...                      "3": ("/x/proj1/a/b.md", "a/b.md")})
    >>> names["1"], names["2"], names["3"]
    ('proj1/notes.md', 'proj2/notes.md', 'a/b.md')
    >>> shown_names({"1": ("/a/docs/n.md", "n.md"), "2": ("/b/docs/n.md", "n.md")})["2"]
    '/b/docs/n.md'
    """
    split = {d: parts(source) for d, (source, _) in docs.items()}
    length = {d: max(1, min(len(split[d]), len(parts(path or "")) or 1)) for d, (_, path) in docs.items()}
    while True:
        groups: dict[str, list[str]] = defaultdict(list)
        for d in docs:
            groups[_tail(split[d], length[d])].append(d)
        grown = False
        for same in groups.values():
            if len(same) < 2:
                continue
            for d in same:
                if length[d] < len(split[d]):
                    length[d] += 1
                    grown = True
        if not grown:
            return {d: _tail(split[d], length[d]) for d in docs}


def _normal(ref: str) -> str:
    ref = ref.strip()
    while ref.startswith("./"):
        ref = ref[2:]
    return ref.rstrip("/") if ref not in ("/", "") else ref


def ends_with(source: str, ref: str) -> bool:
    """Whether ``source`` ends with the path ``ref``, whole components only.

    >>> ends_with("/a/proj1/notes.md", "proj1/notes.md"), ends_with("/a/mynotes.md", "notes.md")
    (True, False)
    """
    ref = _normal(ref)
    return bool(ref) and (source == ref or source.endswith("/" + ref.lstrip("/")) and not ref.startswith("/"))


def find(ref: str, docs: Mapping[str, tuple[str, str]]) -> str:
    """The id of the one document ``ref`` names: its id, its source, or an ending of its source.

    Args:
        ref: what a person typed.
        docs: doc_id -> (source, path), every document of the index.

    Raises:
        Ambiguous: several documents end with ``ref`` (they are listed).
        KeyError: none does.

    >>> docs = {"1": ("/x/proj1/notes.md", "notes.md"), "2": ("/y/proj2/notes.md", "notes.md")}
    >>> find("proj2/notes.md", docs), find("/x/proj1/notes.md", docs)
    ('2', '1')
    >>> find("notes.md", docs)
    Traceback (most recent call last):
    ...
    citeline.index.lookup.Ambiguous: 'notes.md' names 2 documents: proj1/notes.md, proj2/notes.md; give more of the path, the absolute path or the id
    """
    if ref in docs:
        return ref
    exact = [d for d, (source, _) in docs.items() if source == ref]
    if len(exact) == 1:
        return exact[0]
    matches = [d for d, (source, _) in docs.items() if ends_with(source, ref)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = shown_names(docs)
        raise Ambiguous(ref, [names[d] for d in matches])
    raise KeyError(f"no document {ref!r} in the index")


def by_ending(path: str) -> bool:
    """Whether ``path`` may be read as an ending of a stored path: relative, and no URL.

    >>> by_ending("proj1/notes.md"), by_ending("/data/proj1/notes.md"), by_ending("s3://b/notes.md")
    (True, False, False)
    """
    return "://" not in path and not os.path.isabs(os.path.expanduser(path))


def removal_target(ref: str, sources: Iterable[str]) -> str:
    """The one stored file or folder that ``ref`` is an ending of (what ``rm REF`` removes).

    A file matches when its source ends with ``ref``; a folder when a source lies under a folder
    ending with it.

    Raises:
        Ambiguous: several files or folders end with ``ref`` (the candidates are listed).
        KeyError: none does.

    >>> removal_target("proj1", ["/x/proj1/a.md", "/x/proj1/b/c.md", "/y/proj2/a.md"])
    '/x/proj1'
    >>> removal_target("a.md", ["/x/proj1/a.md", "/y/proj2/a.md"])
    Traceback (most recent call last):
    ...
    citeline.index.lookup.Ambiguous: 'a.md' names 2 files or folders: /x/proj1/a.md, /y/proj2/a.md; give more of the path, the absolute path or the id
    """
    ref = _normal(ref)
    if not ref or ref.startswith("/"):
        raise KeyError(f"no document {ref!r} in the index")
    targets: set[str] = set()
    for source in sources:
        if ends_with(source, ref):
            targets.add(source)
        needle = "/" + ref + "/"
        at = source.find(needle)
        while at >= 0:
            targets.add(source[: at + len(needle) - 1])
            at = source.find(needle, at + 1)
    if len(targets) == 1:
        return targets.pop()
    if targets:
        raise Ambiguous(ref, targets, "files or folders")
    raise KeyError(f"no document {ref!r} in the index")
