"""The values of one column that a Spark SQL predicate confines its rows to: what lets an update or delete by a
predicate on a table's first key column read only the files whose recorded range of that column
(SegmentInfo.key_ranges) can hold a matching row, as Iceberg's and Delta's scans skip files by their statistics.

Read conservatively: only conjuncts and disjuncts of comparisons of the bare column with a literal of the column's
own kind (`=`, `<`, `<=`, `>`, `>=`, `BETWEEN`, `IN (...)`) bound it; anything else (a function of the column, a
cast, NOT, a subquery, a literal of another type, text sqlglot cannot read) bounds nothing, so the bounds always
hold every row the predicate can match.
"""
from __future__ import annotations

import sqlglot
from pyspark.sql import types as T
from sqlglot import exp
from sqlglot.errors import SqlglotError

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_LOWER = {exp.GT, exp.GTE}  # column > literal: a lower bound (flipped when the literal is on the left)
_UPPER = {exp.LT, exp.LTE}
_UNKNOWN = object()


def key_bounds(predicate: str, column: str, data_type: T.DataType) -> tuple | None:
    """(low, high) that every row matching `predicate` has `column` between (inclusive; either may be None:
    unbounded), or None when the predicate bounds the column on neither side. Only integral and (binary collated)
    string columns are bounded: their order is Python's."""
    if isinstance(data_type, _INTEGRAL):
        kind = "number"
    elif isinstance(data_type, T.StringType) and getattr(data_type, "collation", "UTF8_BINARY") == "UTF8_BINARY":
        kind = "string"
    else:
        return None
    if kind == "string" and any(mark in predicate for mark in ("\\", "''", '"')):
        # escapes, adjacent literals and double quotes (names under spark.sql.ansi.doubleQuotedIdentifiers): where
        # sqlglot's reading of a string could differ from Spark's
        return None
    try:
        tree = sqlglot.parse_one(predicate, read="spark")
        bounds = _bounds(tree, column.lower(), kind)
    except (SqlglotError, ValueError, RecursionError):  # text sqlglot cannot read (Spark may): no bounds
        return None
    return None if bounds is None or bounds == (None, None) else bounds


def _bounds(node: exp.Expression, column: str, kind: str) -> tuple | None:
    """(low, high) of `column` over the rows `node` matches; None: unbounded on both sides."""
    if isinstance(node, exp.Paren):
        return _bounds(node.this, column, kind)
    if isinstance(node, exp.And):
        left, right = _bounds(node.left, column, kind), _bounds(node.right, column, kind)
        if left is None or right is None:
            return left or right
        return _max(left[0], right[0]), _min(left[1], right[1])
    if isinstance(node, exp.Or):
        left, right = _bounds(node.left, column, kind), _bounds(node.right, column, kind)
        if left is None or right is None:
            return None
        return (None if None in (left[0], right[0]) else min(left[0], right[0]),
                None if None in (left[1], right[1]) else max(left[1], right[1]))
    if isinstance(node, exp.Between) and _is_column(node.this, column):
        low, high = _literal(node.args.get("low"), kind), _literal(node.args.get("high"), kind)
        return None if _UNKNOWN in (low, high) else (low, high)
    if isinstance(node, exp.In) and _is_column(node.this, column) and not node.args.get("query") \
            and node.expressions:
        values = [_literal(v, kind) for v in node.expressions]
        return None if _UNKNOWN in values else (min(values), max(values))
    if isinstance(node, (exp.EQ, *_LOWER, *_UPPER)):
        if _is_column(node.left, column):
            value, lower = _literal(node.right, kind), type(node) in _LOWER
        elif _is_column(node.right, column):
            value, lower = _literal(node.left, kind), type(node) in _UPPER
        else:
            return None
        if value is _UNKNOWN:
            return None
        if isinstance(node, exp.EQ):
            return value, value
        return (value, None) if lower else (None, value)
    return None


def _is_column(node, column: str) -> bool:
    return isinstance(node, exp.Column) and not node.table and node.name.lower() == column


def _literal(node, kind: str):
    """The value of a literal of `kind` ('number': int or float; 'string'), else _UNKNOWN."""
    negative = isinstance(node, exp.Neg)
    if negative:
        node = node.this
    if not isinstance(node, exp.Literal) or node.is_string != (kind == "string"):
        return _UNKNOWN
    if kind == "string":
        return _UNKNOWN if negative else node.this
    try:
        value = int(node.this)
    except ValueError:
        try:
            value = float(node.this)
        except ValueError:
            return _UNKNOWN
    return -value if negative else value


def _max(a, b):
    return b if a is None else a if b is None else max(a, b)


def _min(a, b):
    return b if a is None else a if b is None else min(a, b)
