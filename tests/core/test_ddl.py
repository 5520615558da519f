"""Database, table and column operations, each one commit recording its operation kind."""
import pytest
from pyspark.sql import types as T

from dbt.adapters.branchspark.core import errors
from sorted_rows import rows


def last_ops(lh, branch="main"):
    return [(o.object_kind, o.op) for o in lh.log(branch, 1)[0].operations]


@pytest.mark.catalog_only
def test_database_operations(lh):
    b = lh.branch("main")
    b.create_database("sales", {"owner": "ana"})
    assert last_ops(lh) == [("database", "create")]
    b.set_database_properties("sales", {"tier": "gold"})
    assert last_ops(lh) == [("database", "set properties")]
    assert lh.snapshot().databases()[0].properties == {"owner": "ana", "tier": "gold"}
    b.unset_database_properties("sales", ["owner"])
    assert last_ops(lh) == [("database", "unset properties")]
    b.rename_database("sales", "revenue")
    assert last_ops(lh) == [("database", "modify name")]
    snap = lh.snapshot()
    assert [(d.name, d.properties) for d in snap.databases()] == [("revenue", {"tier": "gold"})]
    b.drop_database("revenue")
    assert last_ops(lh) == [("database", "drop")]
    assert lh.snapshot().databases() == []


def test_database_rename_keeps_id_and_moves_tables(lh, orders):
    before = lh.snapshot()
    lh.branch("main").rename_database("shop", "store")
    after = lh.snapshot()
    assert after.databases()[0].id == before.databases()[0].id
    assert after.table("store.orders").id == before.table("shop.orders").id
    assert rows(lh.read("store.orders")) == rows(before.read("shop.orders"))


def test_drop_database_needs_cascade_when_not_empty(lh, orders):
    with pytest.raises(errors.InvalidArgument, match="still has 1 tables"):
        lh.branch("main").drop_database("shop")
    lh.branch("main").drop_database("shop", cascade=True)
    assert not lh.snapshot().has_database("shop")


def test_table_create_rename_properties_drop(lh, spark):
    b = lh.branch("main")
    b.create_database("d")
    schema = T.StructType([T.StructField("k", T.LongType()), T.StructField("v", T.StringType())])
    b.create_table("d.t", schema, primary_key=["k"], properties={"a": "1"})
    info = lh.snapshot().table("d.t")
    assert [(c.name, c.type, c.nullable) for c in info.columns] == [("k", "bigint", False), ("v", "string", True)]
    assert info.primary_key == ("k",) and info.properties == {"a": "1"}
    b.set_table_properties("d.t", {"b": "2"})
    b.unset_table_properties("d.t", ["a"])
    assert lh.snapshot().table("d.t").properties == {"b": "2"}
    assert last_ops(lh) == [("table", "alter properties")]
    b.rename_table("d.t", "d.t2")
    assert last_ops(lh) == [("table", "alter name")]
    assert lh.snapshot().table("d.t2").id == info.id and not lh.snapshot().has_table("d.t")
    b.drop_table("d.t2")
    assert last_ops(lh) == [("table", "drop")]
    assert lh.snapshot().tables() == []


def test_add_drop_rename_columns_keep_data(lh, spark, orders):
    b = lh.branch("main")
    b.add_column(orders, "note", "string", default="'none'")
    b.insert(orders, spark.createDataFrame([(6, 60.0, "rush")], "id bigint, amount double, note string"))
    assert rows(lh.read(orders), "id", "note")[-2:] == [(5, "none"), (6, "rush")]
    b.rename_column(orders, "amount", "total")
    got = lh.read(orders)
    assert got.columns == ["id", "total", "note"]
    assert rows(got, "id", "total")[:2] == [(1, 10.0), (2, 20.0)]
    b.drop_column(orders, "note")
    assert lh.read(orders).columns == ["id", "total"]
    # Re-adding a dropped name makes a new column: the old values stay gone.
    b.add_column(orders, "note", "string")
    assert rows(lh.read(orders), "note") == [(None,)] * 6
    assert all(op == ("table", "alter column") for op in last_ops(lh))


def test_widen_type_and_refuse_narrowing(lh, spark):
    b = lh.branch("main")
    b.create_database("d")
    b.create_table_as("d.n", spark.createDataFrame([(1, 1.5, "1.25")], "i int, f float, s string")
                      .selectExpr("i", "f", "cast(s as decimal(5,2)) as dec"))
    b.alter_column_type("d.n", "i", "bigint")
    b.alter_column_type("d.n", "f", "double")
    b.alter_column_type("d.n", "dec", "decimal(10,2)")
    cols = {c.name: c.type for c in lh.snapshot().table("d.n").columns}
    assert cols == {"i": "bigint", "f": "double", "dec": "decimal(10,2)"}
    df = lh.read("d.n")
    assert dict(df.dtypes) == {"i": "bigint", "f": "double", "dec": "decimal(10,2)"}
    assert rows(df)[0][0] == 1 and rows(df)[0][1] == 1.5
    head = lh.get_branch("main").head
    for column, narrower in (("i", "int"), ("f", "float"), ("dec", "decimal(6,2)"), ("i", "string")):
        with pytest.raises(errors.InvalidSchemaChange, match="types may only widen"):
            b.alter_column_type("d.n", column, narrower)
    assert lh.get_branch("main").head == head


def test_nullability_and_default(lh, spark, orders):
    b = lh.branch("main")
    b.set_nullable(orders, "amount", False)
    assert not lh.snapshot().table(orders).columns[1].nullable
    with pytest.raises(errors.InvalidArgument, match="NULL in NOT NULL"):
        b.insert(orders, spark.createDataFrame([(9, None)], "id bigint, amount double"))
    b.set_nullable(orders, "amount", True)
    b.insert(orders, spark.createDataFrame([(9, None)], "id bigint, amount double"))
    with pytest.raises(errors.InvalidSchemaChange, match="holds NULLs"):
        b.set_nullable(orders, "amount", False)
    b.set_default(orders, "amount", "-1")
    b.insert(orders, spark.createDataFrame([(10,)], "id bigint"))
    assert rows(lh.read(orders).filter("id = 10")) == [(10, -1.0)]
    with pytest.raises(errors.InvalidSchemaChange, match="without a default"):
        b.add_column(orders, "must", "int", nullable=False)


def test_partitioning(lh, spark):
    b = lh.branch("main")
    b.create_database("d")
    data = spark.createDataFrame([(i, f"r{i % 3}") for i in range(9)], "id bigint, region string")
    b.create_table_as("d.p", data, partition_by=["region"])
    state = lh.snapshot().state("d.p")
    segments = lh.snapshot().ns.segment_infos(state.segments)
    assert sorted(s.partition_values["region"] for s in segments) == ["r0", "r1", "r2"]
    assert rows(lh.read("d.p")) == rows(data)
    assert rows(lh.read("d.p").filter("region = 'r1'"), "id") == [(1,), (4,), (7,)]
    b.set_partitioning("d.p", [])
    assert last_ops(lh) == [("table", "alter partition")]
    b.insert("d.p", spark.createDataFrame([(9, "r0")], "id bigint, region string"))
    assert lh.read("d.p").count() == 10


def test_views_are_stored_per_branch(lh, spark, orders):
    lh.create_branch("dev")
    lh.branch("dev").create_view("shop.big", "select * from `shop.orders` where amount > 20")
    assert lh.snapshot("dev").table("shop.big").kind == "view"
    assert not lh.snapshot("main").has_table("shop.big")
