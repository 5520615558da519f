"""The peers' side of bench/peers.py: Delta Lake and Apache Iceberg on Spark 4.1, in the peers' environment.

Run by .venv-peers' Python (`make peers`), never imported by the project: it takes one JSON command per line
on stdin and answers one JSON line on stdout ({"seconds": wall seconds of the timed part, ...}). Spark's
own output goes to stderr. The table and the changes are generated exactly as bench/peers.py generates
branchspark's (`rows`, `changes`), with the same Spark settings (given by the driver).

Tables: Delta with deletion vectors and the change data feed on (`delta`), Iceberg format 2 copy-on-write
(`iceberg_cow`) and merge-on-read (`iceberg_mor`) in a Hadoop catalog `ice`.
"""
from __future__ import annotations

import json
import os
import sys
import time
from urllib.parse import unquote

KINDS = ("delta", "iceberg_cow", "iceberg_mor")
# every column of every row, order-independent, no overflow under ANSI mode (Spark 4's default)
ROW_HASH_SUM = ("count(*) AS n", "bit_xor(xxhash64(id, amount, customer)) AS h")


def rows(spark, start: int, end: int, partitions: int | None = None):
    from pyspark.sql import functions as F
    return spark.range(start, end, 1, partitions).select(
        F.col("id"), (F.col("id") % 1000).cast("double").alias("amount"),
        F.concat(F.lit("customer-"), (F.col("id") % 5000).cast("string")).alias("customer"))


def changes(spark, total: int, changed: int, round_index: int):
    """`changed` rows spread over the table, new amounts; a different set each round."""
    from pyspark.sql import functions as F
    step = max(total // changed, 1)
    return spark.range(round_index + 1, total, step).limit(changed).select(
        F.col("id"), ((F.col("id") % 1000) + 0.5 + round_index).cast("double").alias("amount"),
        F.concat(F.lit("customer-"), (F.col("id") % 5000).cast("string")).alias("customer"))


def project_rows(tables: int, rows_each: int) -> list[tuple[str, int, int]]:
    """The small tables of the preview's project beside the big one: (name, first id, end id), ids past the
    big table's so no two tables hold the same rows; the same on every side."""
    base = 10 ** 12
    return [(f"model_{k:02d}", base + k * rows_each, base + (k + 1) * rows_each) for k in range(1, tables)]


def dir_bytes(path: str) -> int:
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def iceberg_catalog(root: str) -> dict:
    """Settings of the Iceberg catalog `ice` (Hadoop tables under `root`/iceberg) the peers' tables live in."""
    return {"spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog", "spark.sql.catalog.ice.type": "hadoop",
            "spark.sql.catalog.ice.warehouse": f"{root}/iceberg"}


class Peers:
    def __init__(self, root: str, jars: list[str], config: dict, spark=None):
        """`spark`: a session already built with Iceberg's runtime and `iceberg_catalog(root)` (and Delta's extension
        and catalog where its Delta table is used), shared with another side (bench/peers_one_process.py); else one
        of its own with Delta and Iceberg."""
        from pyspark.sql import SparkSession

        if spark is None:
            builder = SparkSession.builder.config("spark.jars", ",".join(jars)).config(
                "spark.sql.extensions",
                "io.delta.sql.DeltaSparkSessionExtension,org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
            ).config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            for key, value in {**iceberg_catalog(root), **config}.items():
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
            spark.sparkContext.setLogLevel("ERROR")
        self.spark = spark
        self.root = root
        self.delta = f"{root}/delta/events"
        self.project = {"delta": [self.delta], "iceberg_mor": [self.table("iceberg_mor")]}  # setup_project's

    def table(self, kind: str) -> str:
        return f"delta.`{self.delta}`" if kind == "delta" else f"ice.bench.events_{kind.split('_')[1]}"

    def scan(self, sql: str) -> None:
        self.spark.sql(sql).write.format("noop").mode("overwrite").save()

    # ---------------------------------------------------------------- commands
    def setup(self, total: int, kinds: tuple = KINDS, files: int = 0) -> dict:
        """The tables of `total` rows: ids spread over 4 files, or (`files`) in id order over that many files, as
        ingestion that appends recent rows leaves a table."""
        data = rows(self.spark, 0, total, files) if files else rows(self.spark, 0, total).repartition(4)
        start = time.perf_counter()
        if "delta" in kinds:
            (data.write.format("delta").option("delta.enableDeletionVectors", "true")
             .option("delta.enableChangeDataFeed", "true").save(self.delta))
        self.spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.bench")
        for mode in [kind.split("_")[1] for kind in kinds if kind.startswith("iceberg_")]:
            write_mode = "copy-on-write" if mode == "cow" else "merge-on-read"
            data.writeTo(f"ice.bench.events_{mode}").tableProperty("format-version", "2").tableProperty(
                "write.merge.mode", write_mode).tableProperty("write.update.mode", write_mode).tableProperty(
                "write.delete.mode", write_mode).create()
        return {"seconds": time.perf_counter() - start}

    def upsert(self, kind: str, total: int, changed: int, round_index: int) -> dict:
        changes(self.spark, total, changed, round_index).createOrReplaceTempView("changes")
        before = self._version(kind)
        start = time.perf_counter()
        self.spark.sql(f"MERGE INTO {self.table(kind)} t USING changes s ON t.id = s.id "
                       f"WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "before": before, "after": self._version(kind)}

    def _version(self, kind: str):
        if kind == "delta":
            return self.spark.sql(f"DESCRIBE HISTORY {self.table(kind)} LIMIT 1").collect()[0]["version"]
        snapshots = self.spark.sql(f"SELECT snapshot_id FROM {self.table(kind)}.snapshots "
                                   f"ORDER BY committed_at DESC LIMIT 1").collect()
        return snapshots[0]["snapshot_id"]

    def change_feed(self, kind: str, before, after) -> dict:
        """The change rows of one commit (after), read in full."""
        start = time.perf_counter()
        if kind == "delta":
            self.scan(f"SELECT * FROM table_changes_by_path('{self.delta}', {after}, {after})")
        else:
            self.spark.sql(f"CALL ice.system.create_changelog_view(table => 'bench.events_{kind.split('_')[1]}', "
                           f"options => map('start-snapshot-id', '{before}', 'end-snapshot-id', '{after}'), "
                           f"changelog_view => 'changelog')")
            self.scan("SELECT * FROM changelog")
        return {"seconds": time.perf_counter() - start}

    def cdc_scan(self, version) -> dict:
        """The floor of Delta's feed: the change data files its log lists for `version`, read plain by Spark's
        Parquet source in full (no log replay, no plan of Delta's)."""
        with open(os.path.join(self.delta, "_delta_log", f"{int(version):020d}.json")) as log:
            actions = [json.loads(line) for line in log if line.strip()]
        paths = [os.path.join(self.delta, unquote(a["cdc"]["path"])) for a in actions if "cdc" in a]
        start = time.perf_counter()
        self.spark.read.parquet(*paths).write.format("noop").mode("overwrite").save()
        return {"seconds": time.perf_counter() - start}

    def delete_percent(self, kind: str) -> dict:
        start = time.perf_counter()
        self.spark.sql(f"DELETE FROM {self.table(kind)} WHERE id % 100 = 42")
        return {"seconds": time.perf_counter() - start}

    def full_scan(self, kind: str) -> dict:
        """Every column of every row, hashed and summed: Delta 4.4 refuses a noop write of a table with deletion
        vectors ("Cannot work with a non-pinned table snapshot"), so every side scans this way; the sums
        must agree across the sides."""
        start = time.perf_counter()
        total = list(self.spark.sql(f"SELECT {', '.join(ROW_HASH_SUM)} FROM {self.table(kind)}").collect()[0])
        return {"seconds": time.perf_counter() - start, "sum": total}

    def parquet_scan(self, path: str) -> dict:
        """The same hash over plain Parquet files (the scan's floor on this side's Spark)."""
        start = time.perf_counter()
        total = list(self.spark.read.parquet(path).selectExpr(*ROW_HASH_SUM).collect()[0])
        return {"seconds": time.perf_counter() - start, "sum": total}

    def files_scan(self, kind: str) -> dict:
        """The layout's floor (no target): the same hash over the data files an Iceberg table's current snapshot
        names (not its delete files), read plain by Spark's Parquet source: every row they hold, the deleted
        ones too; what its merge-on-read scan must read at least."""
        paths = [r[0] for r in self.spark.sql(
            f"SELECT file_path FROM {self.table(kind)}.data_files").collect()]
        start = time.perf_counter()
        total = list(self.spark.read.parquet(*paths).selectExpr(*ROW_HASH_SUM).collect()[0])
        return {"seconds": time.perf_counter() - start, "sum": total, "files": len(paths)}

    def change_rows(self, kind: str, total: int, changed: int, round_index: int, recent: bool = False) -> dict:
        """The source moves on (bench/import.py): a third of `changed` rows updated, a third deleted (both spread
        over the table, or `recent`: two blocks of the highest ids, lower each round) and a third inserted past its
        ids, as three commits; returns the version after."""
        third = max(changed // 3, 1)
        step = max(total // third, 1)
        table = self.table(kind)
        updated, deleted = (f"id % {step} = {2 * round_index}", f"id % {step} = {2 * round_index + 1}")
        if recent:
            low = total - 2 * third - round_index * 2 * changed  # below the blocks of earlier rounds
            updated, deleted = (f"id >= {low} AND id < {low + third}", f"id >= {low + third} AND id < {low + 2 * third}")
        counts = {"updated": self.spark.sql(f"SELECT count(*) FROM {table} WHERE {updated}").collect()[0][0],
                  "deleted": self.spark.sql(f"SELECT count(*) FROM {table} WHERE {deleted}").collect()[0][0],
                  "inserted": third}
        start = time.perf_counter()
        self.spark.sql(f"UPDATE {table} SET amount = amount + 0.25 WHERE {updated}")
        self.spark.sql(f"DELETE FROM {table} WHERE {deleted}")
        first = total + round_index * changed
        new = rows(self.spark, first, first + third)
        if kind == "delta":
            new.write.format("delta").mode("append").save(self.delta)
        else:
            new.writeTo(table).append()
        return {"seconds": time.perf_counter() - start, "after": self._version(kind), **counts}

    def location(self, kind: str) -> dict:
        """Where a table lies, for an import by path."""
        if kind == "delta":
            return {"seconds": 0.0, "path": self.delta}
        return {"seconds": 0.0, "path": f"{self.root}/iceberg/bench/events_{kind.split('_')[1]}"}

    def count(self, kind: str) -> dict:
        return {"seconds": 0.0, "count": self.spark.sql(f"SELECT count(*) FROM {self.table(kind)}").collect()[0][0]}

    def setup_project(self, tables: int, rows_each: int) -> dict:
        """The preview's project: the big table (`setup`) and `tables` - 1 small ones on each format, the
        rows `project_rows` gives; Iceberg's are merge-on-read, as the big one the preview branches."""
        start = time.perf_counter()
        self.project = {"delta": [self.delta], "iceberg_mor": [self.table("iceberg_mor")]}
        for name, first, last in project_rows(tables, rows_each):
            data = rows(self.spark, first, last).coalesce(1)
            path = f"{self.root}/delta/project/{name}"
            (data.write.format("delta").option("delta.enableDeletionVectors", "true")
             .option("delta.enableChangeDataFeed", "true").save(path))
            writer = data.writeTo(f"ice.bench.{name}").tableProperty("format-version", "2")
            for mode in ("merge", "update", "delete"):
                writer = writer.tableProperty(f"write.{mode}.mode", "merge-on-read")
            writer.create()
            self.project["delta"].append(path)
            self.project["iceberg_mor"].append(f"ice.bench.{name}")
        return {"seconds": time.perf_counter() - start}

    def preview(self, kind: str, name: str) -> dict:
        """A CI preview of the project, every table of it: Delta shallow clones into a preview folder (path
        tables, as the big one), Delta rebuilds (CTAS) there, or an Iceberg branch per table."""
        written_before = dir_bytes(self.root)
        each = []  # seconds per table, the big one first
        start = time.perf_counter()
        for table in self.project["iceberg_mor" if kind == "iceberg_mor" else "delta"]:
            table_start = time.perf_counter()
            if kind == "iceberg_mor":
                self.spark.sql(f"ALTER TABLE {table} CREATE BRANCH {name}")
            else:
                target = f"delta.`{self.root}/delta/{kind}_{name}/{os.path.basename(table)}`"
                if kind == "delta_clone":
                    self.spark.sql(f"CREATE TABLE {target} SHALLOW CLONE delta.`{table}`")
                else:
                    self.spark.sql(f"CREATE TABLE {target} USING delta AS SELECT * FROM delta.`{table}`")
            each.append(time.perf_counter() - table_start)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "bytes": dir_bytes(self.root) - written_before, "tables": len(each),
                "each": each}


def serve(side_class) -> None:
    """A side process's loop: {"op": "start", ...} builds `side_class(...)`, then each line calls one of its
    methods; one JSON answer per line on stdout (bench/peers.py's SideProcess)."""
    side = None
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        if op == "start":
            side = side_class(**command)
            answer = {"seconds": 0.0, "spark": side.spark.version,
                      "java": side.spark._jvm.java.lang.System.getProperty("java.version")}
        else:
            answer = getattr(side, op)(**command)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    if side is not None:
        side.spark.stop()


def main() -> None:
    serve(Peers)


if __name__ == "__main__":
    main()
