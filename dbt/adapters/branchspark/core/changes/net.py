"""Net changes: each primary key's (or, without a key, each row image's) changes over the range
folded into their combined effect.

For one key, take its changes in feed order (commit, then deletes before inserts). The first
change says whether the key existed at `from` (a delete: it did, with that delete's image)
and the last whether it exists at `to` (an insert: it does, with that insert's image):

| existed at from | exists at to | net changes                                             |
|-----------------|--------------|---------------------------------------------------------|
| no              | no           | none (inserted, then deleted inside the range)          |
| no              | yes          | insert of the final image                               |
| yes             | no           | delete of the original image                            |
| yes             | yes          | none if both images are equal, else delete + insert     |

A net delete carries the commit of the key's first change, a net insert the commit of its
last change, so deletes still come first. Replaying the net changes on the table at `from`
gives the table at `to`, like the full feed does, with at most one delete and one insert per
key. Keys compare by the primary key at `to`.

A keyless table has no key to follow a row by, so identical rows net out (`net_rows`): for
each row image (all columns), with d deletes and i inserts over the range, the net changes
are the first d - i deletes (d > i) or the last i - d inserts (i > d), so an image deleted
and inserted again as it was is no change. Replaying them on `from` gives `to` as a multiset.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..storage.reader import quote
from .feed import CHANGE_TYPE, COMMIT_SEQ, DELETE, INSERT

_FIRST_TYPE, _LAST_TYPE, _FIRST_IMAGE, _LAST_IMAGE, _RANK, _COUNT = (
    "_bs_first_type", "_bs_last_type", "_bs_first_image", "_bs_last_image", "_bs_rank", "_bs_count")
_IMAGE, _DELETES, _INSERTS = "_bs_image", "_bs_deletes", "_bs_inserts"


def net_changes(changes: DataFrame, primary_key: tuple[str, ...], columns: list[str]) -> DataFrame:
    keys = [F.col(quote(k)) for k in primary_key]
    order = [F.col(COMMIT_SEQ), F.when(F.col(CHANGE_TYPE) == DELETE, 0).otherwise(1)]
    ordered = Window.partitionBy(*keys).orderBy(*order)
    whole = ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    image = F.struct(*[_comparable(changes, name) for name in columns])
    folded = changes.select(
        "*",
        F.first(CHANGE_TYPE).over(whole).alias(_FIRST_TYPE), F.last(CHANGE_TYPE).over(whole).alias(_LAST_TYPE),
        F.first(image).over(whole).alias(_FIRST_IMAGE), F.last(image).over(whole).alias(_LAST_IMAGE),
        F.row_number().over(ordered).alias(_RANK), F.count(F.lit(1)).over(whole).alias(_COUNT))
    unchanged = ((F.col(_FIRST_TYPE) == DELETE) & (F.col(_LAST_TYPE) == INSERT)
                 & F.col(_FIRST_IMAGE).eqNullSafe(F.col(_LAST_IMAGE)))
    net_delete = (F.col(_RANK) == 1) & (F.col(_FIRST_TYPE) == DELETE)
    net_insert = (F.col(_RANK) == F.col(_COUNT)) & (F.col(_LAST_TYPE) == INSERT)
    return (folded.filter((net_delete | net_insert) & ~unchanged)
            .drop(_FIRST_TYPE, _LAST_TYPE, _FIRST_IMAGE, _LAST_IMAGE, _RANK, _COUNT))


def net_rows(changes: DataFrame, columns: list[str]) -> DataFrame:
    """A keyless table's changes netted per row image (see the module doc)."""
    image = changes.select("*", F.struct(*[_comparable(changes, name) for name in columns]).alias(_IMAGE))
    whole = Window.partitionBy(_IMAGE)
    in_type = Window.partitionBy(_IMAGE, CHANGE_TYPE).orderBy(F.col(COMMIT_SEQ))
    counted = image.select(
        "*", F.sum(F.when(F.col(CHANGE_TYPE) == DELETE, 1).otherwise(0)).over(whole).alias(_DELETES),
        F.sum(F.when(F.col(CHANGE_TYPE) == INSERT, 1).otherwise(0)).over(whole).alias(_INSERTS),
        F.row_number().over(in_type).alias(_RANK))
    first_deletes = (F.col(CHANGE_TYPE) == DELETE) & (F.col(_RANK) <= F.col(_DELETES) - F.col(_INSERTS))
    last_inserts = (F.col(CHANGE_TYPE) == INSERT) & (F.col(_RANK) > F.col(_DELETES))
    return counted.filter(first_deletes | last_inserts).drop(_IMAGE, _DELETES, _INSERTS, _RANK)


def _comparable(frame: DataFrame, name: str):
    """A column in a form Spark can compare: maps (not comparable) as sorted entry arrays."""
    column = F.col(quote(name))
    if isinstance(frame.schema[name].dataType, T.MapType):
        return F.array_sort(F.map_entries(column)).alias(name)
    return column.alias(name)
