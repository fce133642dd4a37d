"""SQL literals for LanceDB filters (``where`` strings are the only way to pass values)."""
from __future__ import annotations

from typing import Iterable


def sql_str(value: str) -> str:
    """A SQL string literal.

    >>> sql_str("it's")
    "'it''s'"
    """
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    """``column IN ('a', 'b')`` for string values.

    >>> sql_in("doc_id", ["a", "b"])
    "doc_id IN ('a', 'b')"
    """
    return f"{column} IN (" + ", ".join(sql_str(v) for v in values) + ")"
