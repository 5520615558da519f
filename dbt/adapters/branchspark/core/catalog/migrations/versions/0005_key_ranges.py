"""Each data file's range of the first primary-key column, recorded at the write: {"column": its id, "files":
[[low, high] or null per file]}.

An insert's check that no new key is already held then reads only the files whose range can hold one of its
keys (on object storage, no request at all for the others): keys that grow, such as ids and event times, touch
only the newest files. Segments of older catalogs, and of writes that record none, are read as before.

Revision ID: 0005
Revises: 0004
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("bs_segments") as batch:
        batch.add_column(sa.Column("key_ranges", sa.JSON, nullable=True))


def downgrade():
    with op.batch_alter_table("bs_segments") as batch:
        batch.drop_column("key_ranges")
