"""The ETags of the files a segment or tombstone holds, as the object store answered their uploads.

On S3, S3A's analytics stream sends a HEAD the first time a process opens an object, for the object's ETag,
unless the opener already knows it: with the ETags recorded beside the sizes, a read opens the files the
catalog names with no request but their GETs (storage/known_files.py). Files of older catalogs, of a local
warehouse and of imports have none and are read as before.

Revision ID: 0007
Revises: 0006
"""
import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("bs_segments") as batch:
        batch.add_column(sa.Column("file_etags", sa.JSON, nullable=True))
    with op.batch_alter_table("bs_tombstones") as batch:
        batch.add_column(sa.Column("file_etags", sa.JSON, nullable=True))


def downgrade():
    with op.batch_alter_table("bs_tombstones") as batch:
        batch.drop_column("file_etags")
    with op.batch_alter_table("bs_segments") as batch:
        batch.drop_column("file_etags")
