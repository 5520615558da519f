"""The first catalog schema: branches, commits, object versions, segments, tombstones.

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "bs_counters",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "bs_commits",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("seq", sa.BigInteger, nullable=False, unique=True),
        sa.Column("ts", sa.DateTime, nullable=False),
        sa.Column("parent_id", sa.String(32)),
        sa.Column("merge_parent_id", sa.String(32)),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("author", sa.String(200)),
        sa.Column("root", sa.JSON, nullable=False),
    )
    op.create_index("ix_bs_commits_parent", "bs_commits", ["parent_id"])
    op.create_table(
        "bs_branches",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("head", sa.String(32), sa.ForeignKey("bs_commits.id"), nullable=False),
        sa.Column("protected", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("created_from", sa.String(64)),
    )
    op.create_table(
        "bs_commit_ops",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("commit_id", sa.String(32), sa.ForeignKey("bs_commits.id"), nullable=False),
        sa.Column("object_kind", sa.String(16), nullable=False),
        sa.Column("object_id", sa.String(32), nullable=False),
        sa.Column("object_name", sa.String(400), nullable=False),
        sa.Column("op", sa.String(32), nullable=False),
        sa.Column("detail", sa.JSON, nullable=False),
    )
    op.create_index("ix_bs_commit_ops_commit_id", "bs_commit_ops", ["commit_id"])
    op.create_table(
        "bs_database_versions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("database_id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("properties", sa.JSON, nullable=False),
    )
    op.create_index("ix_bs_database_versions_database_id", "bs_database_versions", ["database_id"])
    op.create_table(
        "bs_table_versions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("table_id", sa.String(32), nullable=False),
        sa.Column("database_id", sa.String(32), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("properties", sa.JSON, nullable=False),
        sa.Column("partition_by", sa.JSON, nullable=False),
        sa.Column("primary_key", sa.JSON, nullable=False),
        sa.Column("schema_id", sa.String(32)),
        sa.Column("schema_history", sa.JSON, nullable=False),
        sa.Column("segments", sa.JSON, nullable=False),
        sa.Column("tombstones", sa.JSON, nullable=False),
        sa.Column("view_sql", sa.Text),
    )
    op.create_index("ix_bs_table_versions_table_id", "bs_table_versions", ["table_id"])
    op.create_table(
        "bs_schemas",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("table_id", sa.String(32), nullable=False),
        sa.Column("columns", sa.JSON, nullable=False),
    )
    op.create_index("ix_bs_schemas_table_id", "bs_schemas", ["table_id"])
    op.create_table(
        "bs_segments",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("table_id", sa.String(32), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("schema_id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("partition_by", sa.JSON, nullable=False),
        sa.Column("partition_values", sa.JSON, nullable=False),
        sa.Column("files", sa.JSON, nullable=False),
    )
    op.create_index("ix_bs_segments_table_id", "bs_segments", ["table_id"])
    op.create_table(
        "bs_tombstones",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("table_id", sa.String(32), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("schema_id", sa.String(32), nullable=False),
        sa.Column("row_count", sa.BigInteger, nullable=False),
        sa.Column("target_segments", sa.JSON, nullable=False),
        sa.Column("target_files", sa.JSON, nullable=False),
    )
    op.create_index("ix_bs_tombstones_table_id", "bs_tombstones", ["table_id"])


def downgrade():
    for table in ("bs_tombstones", "bs_segments", "bs_schemas", "bs_table_versions", "bs_database_versions",
                  "bs_commit_ops", "bs_branches", "bs_commits", "bs_counters"):
        op.drop_table(table)
