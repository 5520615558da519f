"""Borrowed segments: files of another system that an import references where they lie (issue 70).

A borrowed segment's `path` is an absolute URI outside the warehouse; gc never deletes its files. Segments of
older catalogs are the catalog's own (false).

Revision ID: 0006
Revises: 0005
"""
import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("bs_segments") as batch:
        batch.add_column(sa.Column("borrowed", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade():
    with op.batch_alter_table("bs_segments") as batch:
        batch.drop_column("borrowed")
