"""A writer run as its own process by the crash tests: it inserts rows, then (maybe) dies at a fault point."""
import sys

from dbt.adapters.branchspark.lakehouse import Lakehouse
from dbt.adapters.branchspark.storage.session import local_session

warehouse, branch, table, first_id = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
spark = local_session("local[1]")
lakehouse = Lakehouse(spark, warehouse)
rows = spark.range(first_id, first_id + 100).selectExpr("id", "cast(id * 10 as double) as amount")
lakehouse.branch(branch).insert(table, rows, message=f"insert from {first_id}")
print("committed")
