"""`dbt run-operation import_table` (issue 70): a Parquet directory becomes a branch table in one commit, with
no data file written; a bad source is one line and commits nothing."""
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from dbt.adapters.branchspark.core.lakehouse import Lakehouse
from dbt.tests.util import run_dbt_and_capture


@pytest.fixture(scope="class")
def events_dir(tmp_path_factory) -> str:
    """A Hive-partitioned Parquet directory written by pyarrow: 60 rows in two partitions."""
    root = tmp_path_factory.mktemp("import_dbt") / "events"
    for day in ("2026-01-01", "2026-01-02"):
        folder = root / f"day={day}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"id": list(range(30)), "kind": [f"k{i % 4}" for i in range(30)]}),
                       folder / "part-0.parquet")
    return str(root)


class TestImportOperation:
    def test_import_table_operation(self, project, warehouse_dir, events_dir):
        def data_files():
            return {os.path.join(d, n) for d, _, names in os.walk(warehouse_dir) for n in names if n.endswith(".parquet")}

        before = data_files()
        args = {"source": events_dir, "as": "raw.events"}
        _, output = run_dbt_and_capture(["run-operation", "import_table", "--args", json.dumps(args)])
        assert "imported" in output and "raw.events" in output
        lakehouse = Lakehouse(SparkSession.getActiveSession(), warehouse_dir)
        rows = lakehouse.read("raw.events")
        assert rows.count() == 60 and sorted(rows.columns) == ["day", "id", "kind"]
        assert rows.where("day = DATE'2026-01-02'").count() == 30
        assert data_files() == before  # no data file written
        head = lakehouse.get_branch("main").head
        bad = {"source": events_dir + "/nowhere", "as": "raw.other"}
        _, output = run_dbt_and_capture(["run-operation", "import_table", "--args", json.dumps(bad)],
                                        expect_pass=False)
        assert "no such file or directory" in output
        assert Lakehouse(SparkSession.getActiveSession(), warehouse_dir).get_branch("main").head == head
