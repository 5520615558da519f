"""Projections as SQL text, each handed to Spark in one call.

Every read builds a few projections (a file's columns onto the table's, row ids, the change feed's labels).
Through py4j, pyspark turns a list of expressions into one JVM call per item (ListConverter adds them one by
one), plus one per `F.expr`: a ten-column projection cost 5 ms where Spark's analysis of it takes about 2.5
(2026-12-05, issue 72). Here the expressions travel as one string, split in the JVM, so a projection is two
calls. Through Spark Connect a plan is built locally anyway: there it is plain `selectExpr`.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from ..sql_text import quote_identifier as quote

# Cannot occur in SQL text branchspark builds (identifiers and literals of it are quoted or escaped); an
# expression that holds it anyway takes the plain path.
_SEPARATOR = "\u0001"
# id(JVM view) -> (the view, commons-lang3's StringUtils.splitByWholeSeparatorPreserveAllTokens): looking a
# static member up is itself a call; the view is kept so that its id is not reused
_SPLITTERS: dict[int, tuple] = {}


def select_sql(frame: DataFrame, expressions: list[str], loaded: list[str] | None = None) -> DataFrame:
    """`frame.selectExpr(*expressions)`, in two JVM calls on a classic session whatever the count. `loaded`: the
    frame's columns in order, where the caller knows them: a projection that keeps each as it is returns `frame`
    itself (Spark's analysis of a projection costs 5-9 ms on 2 cores, and a file read is often such a one)."""
    if loaded is not None and _keeps(expressions, loaded):
        return frame
    jdf = getattr(frame, "_jdf", None)
    if jdf is None or len(expressions) < 3 or any(_SEPARATOR in e for e in expressions):
        return frame.selectExpr(*expressions)
    session = frame.sparkSession
    jvm = session._jvm
    known = _SPLITTERS.get(id(jvm))
    if known is None or known[0] is not jvm:
        splitter = jvm.org.apache.commons.lang3.StringUtils.splitByWholeSeparatorPreserveAllTokens
        known = _SPLITTERS[id(jvm)] = (jvm, splitter)
    splitter = known[1]
    expressions_array = splitter(_SEPARATOR.join(expressions), _SEPARATOR)
    return type(frame)(jdf.selectExpr(expressions_array), session)


@dataclass(frozen=True)
class Constant:
    """A column of one value on every row of a read (the change feed's labels of a commit). The known-files
    source takes it as a partition value of every file (`text`, cast from text as `data_type` says): no projection
    to analyze, and no literal in the code Spark generates, so a value new with each commit compiles nothing.
    Elsewhere it is a projection's literal (`sql`, the same value)."""

    name: str
    data_type: T.DataType
    text: str
    sql: str

    def __post_init__(self):
        if "\t" in self.text or "\n" in self.text:  # the source's option lists constants a line each
            raise ValueError(f"a constant column's value holds a tab or a line break: {self.name}")

    def projected(self) -> str:
        return f"{self.sql} AS {quote(self.name)}"


def _keeps(expressions: list[str], columns: list[str]) -> bool:
    """Whether `expressions` select `columns` as they are, in their order, and nothing else."""
    return len(expressions) == len(columns) and all(
        e in (c, quote(c), f"{quote(c)} AS {quote(c)}") for e, c in zip(expressions, columns))


def type_sql(data_type: T.DataType) -> str:
    """`data_type` as Spark SQL writes it in a CAST (struct field names quoted)."""
    if isinstance(data_type, T.StructType):
        return "STRUCT<" + ", ".join(f"{quote(f.name)}: {type_sql(f.dataType)}" for f in data_type.fields) + ">"
    if isinstance(data_type, T.ArrayType):
        return f"ARRAY<{type_sql(data_type.elementType)}>"
    if isinstance(data_type, T.MapType):
        return f"MAP<{type_sql(data_type.keyType)}, {type_sql(data_type.valueType)}>"
    return data_type.simpleString()


def referenced_bigint(value: int) -> str:
    """SQL for the constant BIGINT `value` that Spark's generated code reads from the query's objects instead of
    holding it as a literal. Spark writes a BIGINT literal into the Java it generates (then compiles and warms
    it up), so a tombstone's sequence, new with every commit, made each write compile classes of its own: 2 of
    the 4 compilations of an upsert in the peers' bench (issue 72). An array is referenced, not written in; the
    partition id keeps the optimizer from folding the element back into a literal; coalesce keeps the column
    NOT NULL. Not for a value a reader may filter on: a literal lets Spark prune by it at planning (the change
    feed's commit labels stay literals for that)."""
    return f"coalesce(element_at(array(CAST({int(value)} AS BIGINT)), spark_partition_id() * 0 + 1), 0)"
