"""The sizes of the files a segment or tombstone holds, and a tombstone's file names.

Readers then open the files the catalog names with no request before it (on object storage, no HEAD and no
LIST of a file or a folder: storage/known_files.py). Segments and tombstones of older catalogs have none and are
read as before (their folders listed).

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("bs_segments") as batch:
        batch.add_column(sa.Column("file_sizes", sa.JSON, nullable=True))
    with op.batch_alter_table("bs_tombstones") as batch:
        batch.add_column(sa.Column("files", sa.JSON, nullable=True))
        batch.add_column(sa.Column("file_sizes", sa.JSON, nullable=True))


def downgrade():
    with op.batch_alter_table("bs_tombstones") as batch:
        batch.drop_column("file_sizes")
        batch.drop_column("files")
    with op.batch_alter_table("bs_segments") as batch:
        batch.drop_column("file_sizes")
