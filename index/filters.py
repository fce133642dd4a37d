"""Row filters for LanceDB reads, deletes and merges, built as ``lancedb.expr`` expressions.

A value never becomes SQL text: LanceDB receives the expression tree, so a quote, a
backslash, ``%``, ``_`` or a newline in a value is only a character of that value
(tests/unit/test_store.py). Two limits of LanceDB 0.40 shape the callers:
``count_rows`` takes only SQL text, so a filtered count is a scan (``Store``), and
``Expr.to_sql()`` is for reading, not for filtering: it renders ``'`` and ``''`` alike.
"""
from __future__ import annotations

from typing import Iterable

from lancedb.expr import Expr, col, lit


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
