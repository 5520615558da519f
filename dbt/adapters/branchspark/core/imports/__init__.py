"""Zero-copy import (SPEC 11, issue 70): a Parquet directory, a Delta table or an Iceberg table becomes a branch
table in one commit that writes no data file. Each source kind is read as a `SourceTable` (source.py: its columns
and its live files, with the rows deletes hide); landing.py turns that into borrowed segments and tombstones."""
