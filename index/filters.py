"""Row filters for LanceDB reads, deletes and merges, built as ``lancedb.expr`` expressions.

A value never becomes SQL text: LanceDB receives the expression tree, so a quote, a
backslash, ``%``, ``_`` or a newline in a value is only a character of that value
(tests/unit/test_store.py). Two limits of LanceDB 0.40 shape the callers:
``count_rows`` takes only SQL text, so a filtered count is a scan (``Store``), and
``Expr.to_sql()`` is for reading, not for filtering: it renders ``'`` and ``''`` alike.

Query-time filters (``Filters``) are the exception: an expression has no LIKE (0.40's
``func`` knows only lower, upper, contains and concat), and a path prefix or glob needs
one, so :func:`chunk_predicate` renders SQL text, every value through :func:`sql_string`
and every pattern through :func:`like_pattern` (tests/unit/test_query_filters.py runs
hostile values against a real table).
"""
from __future__ import annotations

from typing import Collection, Iterable

from lancedb.expr import Expr, col, lit

from citeline.schemas.retrieval import Filters

LIKE_ESCAPE = "\\"
GLOB_CHARS = frozenset("*?")


def equals(column: str, value: str) -> Expr:
    """Rows whose ``column`` is exactly ``value``.

    >>> equals("doc_id", "it's")
    Expr((doc_id = 'it''s'))
    """
    return col(column) == lit(value)


def one_of(column: str, values: Iterable[str]) -> Expr:
    """Rows whose ``column`` is any of ``values`` (no row for none).

    >>> one_of("chunk_id", ["a", "b"])
    Expr(chunk_id IN ('a', 'b'))
    """
    return col(column).isin(list(values))


def sql_string(value: str) -> str:
    """``value`` as a SQL string literal: quotes doubled; a backslash is an ordinary character
    in LanceDB's string literals.

    >>> print(sql_string("it's"))
    'it''s'
    """
    return "'" + value.replace("'", "''") + "'"


def like_pattern(value: str, glob: bool = False) -> str:
    """A LIKE pattern (escape character ``\\``) matching ``value`` literally, or, with
    ``glob``, with ``*`` as any run of characters and ``?`` as one.

    >>> print(like_pattern("50%_off\\\\"), like_pattern("a/*.m?", glob=True))
    50\\%\\_off\\\\ a/%.m_
    """
    out = []
    for ch in value:
        if glob and ch in GLOB_CHARS:
            out.append("%" if ch == "*" else "_")
        elif ch in "%_\\":
            out.append(LIKE_ESCAPE + ch)
        else:
            out.append(ch)
    return "".join(out)


def _like(column: str, pattern: str) -> str:
    return f"{column} LIKE {sql_string(pattern)} ESCAPE {sql_string(LIKE_ESCAPE)}"


def path_clause(value: str) -> str:
    """A path prefix, or a glob when ``value`` holds ``*`` or ``?`` (``Filters.paths``)."""
    if GLOB_CHARS & set(value):
        return _like("path", like_pattern(value, glob=True))
    return _like("path", like_pattern(value) + "%")


def type_clause(kind: str) -> str:
    """A file extension (any case) or an extractor name (``Filters.types``)."""
    return f"({_like('lower(path)', '%.' + like_pattern(kind))} OR extractor = {sql_string(kind)})"


def chunk_predicate(filters: Filters, modified: Collection[str] | None = None) -> str | None:
    """The chunks-table predicate of ``filters`` (None: no filter), for ``.where(..., prefilter=True)``.

    Args:
        filters: the query's filters.
        modified: the ids of the documents modified since ``filters.modified_since``
            (the documents table knows the stat; ``Store.modified_since`` reads it).

    >>> print(chunk_predicate(Filters(paths=("it's/",), types=("pdf",))))
    (path LIKE 'it''s/%' ESCAPE '\\') AND ((lower(path) LIKE '%.pdf' ESCAPE '\\' OR extractor = 'pdf'))
    >>> from citeline.schemas.retrieval import parse_since
    >>> chunk_predicate(Filters(modified_since=parse_since("2024-01-01")), modified=[])
    'FALSE'
    """
    if filters.modified_since is not None and modified is None:
        raise ValueError("a modified-since filter needs the ids of the documents modified since")
    parts = [" OR ".join(path_clause(p) for p in filters.paths), " OR ".join(type_clause(t) for t in filters.types)]
    if filters.modified_since is not None:
        parts.append(f"doc_id IN ({', '.join(sql_string(d) for d in sorted(modified))})" if modified else "FALSE")
    parts = [p for p in parts if p]
    if "FALSE" in parts:
        return "FALSE"
    return " AND ".join(f"({p})" for p in parts) or None
