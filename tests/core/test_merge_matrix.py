"""One test per cell of the SPEC 3.2 and 3.3 matrices, generated from the tables below.

Each test performs the row's operation on a src branch and the column's
operation on a dest branch (both from one base), merges src into dest, and
asserts a conflict, or the exact merged rows and schema. The expected rows
come from a small model that replays src's operation on dest's result, row
by row, which is what SPEC section 3 says a merge is equivalent to.

The base table has rows 1-3 in one segment and 4-6 in another; src's
operations touch rows 1-3 and dest's rows 4-6, so the segment rules (A1, A3)
are "ok" here; the rule tests in test_merge_rules.py make them collide.
"""
from __future__ import annotations

import itertools
import uuid
from contextlib import contextmanager

import pytest

from dbt.adapters.branchspark.core import errors
from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from tests.pg_catalog import CATALOG_KINDS, catalog_of_kind
from tests.s3_store import s3_client

TABLE_OPS = ["drop", "alter name", "alter props", "alter column", "alter partition", "insert", "delete", "update",
             "overwrite", "compaction"]
# Keyless tables (SPEC 3.3): src operation (row) against dest operation (column).
TABLE_EXPECTED = """
drop            | ok       | ok | ok | ok | ok | ok       | ok | ok | ok | ok
alter name      | CONFLICT | ok | ok | ok | ok | ok       | ok | ok | ok | ok
alter props     | CONFLICT | ok | ok | ok | ok | ok       | ok | ok | ok | ok
alter column    | CONFLICT | ok | ok | ok | ok | ok       | ok | ok | ok | ok
alter partition | CONFLICT | ok | ok | ok | ok | ok       | ok | ok | ok | ok
insert          | CONFLICT | ok | ok | ok | ok | ok       | ok | ok | ok | ok
delete          | CONFLICT | ok | ok | ok | ok | CONFLICT | ok | ok | ok | ok
update          | CONFLICT | ok | ok | ok | ok | CONFLICT | ok | ok | ok | ok
overwrite       | CONFLICT | ok | ok | ok | ok | ok       | ok | ok | ok | ok
compaction      | CONFLICT | ok | ok | ok | ok | ok       | ok | ok | ok | ok
"""
DATABASE_OPS = ["drop", "modify name", "set properties", "unset properties"]
# Databases (SPEC 3.2); unset x unset of different properties is ok.
DATABASE_EXPECTED = """
drop             | ok       | ok | ok | ok
modify name      | CONFLICT | ok | ok | ok
set properties   | CONFLICT | ok | ok | ok
unset properties | CONFLICT | ok | ok | ok
"""


def _parse(text: str, ops: list[str]) -> dict[tuple[str, str], str]:
    cells = {}
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split("|")]
        for dest_op, outcome in zip(ops, parts[1:]):
            cells[(parts[0], dest_op)] = outcome
    return cells


TABLE_CELLS = _parse(TABLE_EXPECTED, TABLE_OPS)
DATABASE_CELLS = _parse(DATABASE_EXPECTED, DATABASE_OPS)
COLUMNS = ["id", "a", "g"]
BASE_ROWS = {i: (i, i * 10, "x" if i <= 3 else "y") for i in range(1, 7)}


# ---------------------------------------------------------------- a model
class Model:
    """The table as a merge should leave it: rows by id, columns, name, properties, partitioning."""

    def __init__(self):
        self.rows = {i: dict(zip(COLUMNS, r)) for i, r in BASE_ROWS.items()}
        self.columns = list(COLUMNS)
        self.name = "shop.t"
        self.exists = True
        self.properties = {"owner": "base"}
        self.partition_by: list[str] = []

    def apply(self, op: str, side: str) -> None:
        mine = 1 if side == "src" else 4  # src works on rows 1-3, dest on rows 4-6
        if op == "drop":
            self.exists = False
        elif op == "alter name":
            self.name = f"shop.t_{side}"
        elif op == "alter props":
            self.properties[f"set_by_{side}"] = "yes"
        elif op == "alter column":
            self.columns.append(f"{side}_col")
            for row in self.rows.values():
                row.setdefault(f"{side}_col", None)
        elif op == "alter partition":
            self.partition_by = ["g"]
        elif op == "insert":
            new_id = 10 + mine
            self.rows[new_id] = {"id": new_id, "a": new_id * 10, "g": "n"}
        elif op == "delete":
            self.rows.pop(mine, None)
        elif op == "update":
            if mine + 1 in self.rows:
                self.rows[mine + 1]["a"] += 1000
        elif op == "overwrite":
            # An overwrite merges by its rows (SPEC 3.3): it removes the base rows, not those the other
            # side (applied first) changed or added.
            base = {i: dict(zip(COLUMNS, r)) for i, r in BASE_ROWS.items()}
            self.rows = {i: r for i, r in self.rows.items() if {c: r.get(c) for c in COLUMNS} != base.get(i)}
            new_id = 30 + mine
            self.rows[new_id] = {"id": new_id, "a": new_id * 10, "g": "o"}

    def expected_rows(self) -> list[tuple]:
        return sorted(tuple(row.get(c) for c in self.columns) for row in self.rows.values())


def perform(lh: Lakehouse, spark, branch: str, op: str, side: str) -> None:
    mine = 1 if side == "src" else 4
    ops = lh.branch(branch)
    table = "shop.t"
    if op == "drop":
        ops.drop_table(table)
    elif op == "alter name":
        ops.rename_table(table, f"shop.t_{side}")
    elif op == "alter props":
        ops.set_table_properties(table, {f"set_by_{side}": "yes"})
    elif op == "alter column":
        ops.add_column(table, f"{side}_col", "int")
    elif op == "alter partition":
        ops.set_partitioning(table, ["g"])
    elif op == "insert":
        new_id = 10 + mine
        ops.insert(table, spark.createDataFrame([(new_id, new_id * 10, "n")], "id bigint, a bigint, g string"))
    elif op == "delete":
        assert ops.delete(table, f"id = {mine}") == 1
    elif op == "update":
        assert ops.update(table, f"id = {mine + 1}", {"a": "a + 1000"}) == 1
    elif op == "overwrite":
        new_id = 30 + mine
        ops.overwrite(table, spark.createDataFrame([(new_id, new_id * 10, "o")], "id bigint, a bigint, g string"))
    elif op == "compaction":
        ops.compact(table)


# The whole matrix on object storage too (issue 51; `make test-long`: `make test` runs a keyed and a keyless cell
# on S3 in tests/s3/): a warehouse in a bucket of the S3 server tests/run.sh starts, a SQLite catalog.
ON_S3 = pytest.param("s3_warehouse", marks=pytest.mark.long_only, id="s3_warehouse")


@contextmanager
def _warehouse_and_catalog(kind: str, tmp_path_factory):
    if kind != "s3_warehouse":
        with catalog_of_kind(kind) as url:
            yield str(tmp_path_factory.mktemp("matrix") / "warehouse"), url
        return
    bucket = f"bs-matrix-{uuid.uuid4().hex[:12]}"
    s3_client().create_bucket(Bucket=bucket)
    yield f"s3a://{bucket}/warehouse", f"sqlite:///{tmp_path_factory.mktemp('matrix')}/catalog.db"


@pytest.fixture(scope="module", params=CATALOG_KINDS + [ON_S3])
def base_lh(request, spark, tmp_path_factory):
    """One catalog per kind (SQLite, PostgreSQL; and a warehouse on S3 with SQLite) for the whole matrix: main
    holds the base; every cell branches from it (no copies)."""
    first = {i: r for i, r in BASE_ROWS.items() if i <= 3}
    second = {i: r for i, r in BASE_ROWS.items() if i > 3}
    with _warehouse_and_catalog(request.param, tmp_path_factory) as (warehouse, url):
        lh = Lakehouse(spark, warehouse, url)
        with lh.transaction("main") as tx:
            tx.create_database("shop", properties={"owner": "base", "tier": "1"})
            tx.create_table_as("shop.t", spark.createDataFrame(list(first.values()), "id bigint, a bigint, g string"))
            tx.set_table_properties("shop.t", {"owner": "base"})
        lh.branch("main").insert("shop.t", spark.createDataFrame(list(second.values()), "id bigint, a bigint, g string"))
        yield lh
        lh.store.dispose()


def _slug(*parts: str) -> str:
    return "-".join(p.replace(" ", "_") for p in parts)


@pytest.mark.parametrize("src_op,dest_op", list(itertools.product(TABLE_OPS, TABLE_OPS)),
                         ids=[_slug(s, d) for s, d in itertools.product(TABLE_OPS, TABLE_OPS)])
def test_table_matrix_cell(base_lh, spark, src_op, dest_op):
    lh = base_lh
    src, dest = _slug("t", src_op, dest_op, "src"), _slug("t", src_op, dest_op, "dest")
    lh.create_branch(src, "main")
    lh.create_branch(dest, "main")
    perform(lh, spark, src, src_op, "src")
    perform(lh, spark, dest, dest_op, "dest")
    dest_head = lh.store.get_branch(dest).head

    if TABLE_CELLS[(src_op, dest_op)] == "CONFLICT":
        with pytest.raises(errors.MergeConflict) as raised:
            lh.merge(src, dest)
        report = raised.value.report
        recorded = {"alter properties": "alter props"}  # the operation kind's name in SPEC section 2
        assert [(recorded.get(c.src_op, c.src_op), c.dest_op) for c in report.conflicts] == [(src_op, dest_op)]
        assert lh.store.get_branch(dest).head == dest_head  # nothing changed on dest
        return

    result = lh.merge(src, dest)
    assert result.status == "merged" and not result.conflicts
    merge_commit = lh.store.get_commit(lh.store.get_branch(dest).head)
    assert merge_commit.parents == (dest_head, lh.store.get_branch(src).head)
    model = Model()
    model.apply(dest_op, "dest")
    model.apply(src_op, "src")
    snapshot = lh.snapshot(dest)
    if not model.exists:
        assert not snapshot.has_table("shop.t") and not snapshot.has_table("shop.t_dest")
        return
    info = snapshot.table(model.name)
    assert [c.name for c in info.columns] == model.columns
    assert info.properties == model.properties
    assert list(info.partition_by) == model.partition_by
    got = sorted(tuple(r) for r in snapshot.read(model.name).collect())
    assert got == model.expected_rows()
    # Table ids are kept by merge.
    assert info.id == lh.snapshot("main").table("shop.t").id


class DatabaseModel:
    def __init__(self):
        self.exists, self.name, self.properties = True, "shop", {"owner": "base", "tier": "1"}

    def apply(self, op: str, side: str) -> None:
        if op == "drop":
            self.exists = False
        elif op == "modify name":
            self.name = f"shop_{side}"
        elif op == "set properties":
            self.properties[f"set_by_{side}"] = "yes"
        elif op == "unset properties":
            self.properties.pop("owner" if side == "src" else "tier", None)


def perform_on_database(lh: Lakehouse, branch: str, op: str, side: str) -> None:
    ops = lh.branch(branch)
    if op == "drop":
        ops.drop_database("shop", cascade=True)
    elif op == "modify name":
        ops.rename_database("shop", f"shop_{side}")
    elif op == "set properties":
        ops.set_database_properties("shop", {f"set_by_{side}": "yes"})
    elif op == "unset properties":
        ops.unset_database_properties("shop", ["owner" if side == "src" else "tier"])


@pytest.mark.parametrize("src_op,dest_op", list(itertools.product(DATABASE_OPS, DATABASE_OPS)),
                         ids=[_slug(s, d) for s, d in itertools.product(DATABASE_OPS, DATABASE_OPS)])
def test_database_matrix_cell(base_lh, src_op, dest_op):
    lh = base_lh
    src, dest = _slug("db", src_op, dest_op, "src"), _slug("db", src_op, dest_op, "dest")
    lh.create_branch(src, "main")
    lh.create_branch(dest, "main")
    perform_on_database(lh, src, src_op, "src")
    perform_on_database(lh, dest, dest_op, "dest")
    dest_head = lh.store.get_branch(dest).head

    if DATABASE_CELLS[(src_op, dest_op)] == "CONFLICT":
        with pytest.raises(errors.MergeConflict) as raised:
            lh.merge(src, dest)
        assert (src_op, dest_op) in [(c.src_op, c.dest_op) for c in raised.value.report.conflicts]
        assert lh.store.get_branch(dest).head == dest_head
        return

    lh.merge(src, dest)
    model = DatabaseModel()
    model.apply(dest_op, "dest")
    model.apply(src_op, "src")
    snapshot = lh.snapshot(dest)
    names = {d.name: d for d in snapshot.databases()}
    if not model.exists:
        assert "shop" not in names and not any(n.startswith("shop_") for n in names)
        return
    assert model.name in names, names
    assert names[model.name].properties == model.properties
    assert names[model.name].id == {d.name: d for d in lh.snapshot("main").databases()}["shop"].id
