"""What a keyed tombstone was written over: the segments and tombstones of the table version whose live rows of
its keys it holds, every one of them.

With it, a read drops those rows by their position in the segments the tombstone covers (deletion vectors, as a
keyless table's), where it used to probe every row's key. Tombstones of older catalogs have none and are applied
by key, as before.

Revision ID: 0008
Revises: 0007
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("bs_tombstones") as batch:
        batch.add_column(sa.Column("written_over", sa.JSON, nullable=True))


def downgrade():
    with op.batch_alter_table("bs_tombstones") as batch:
        batch.drop_column("written_over")
