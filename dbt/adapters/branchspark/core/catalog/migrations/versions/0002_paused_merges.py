"""Paused merges: one merge or rebase stopped before its commit per destination branch.

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "bs_paused_merges",
        sa.Column("dest", sa.String(200), primary_key=True),
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("src", sa.String(200), nullable=False),
        sa.Column("src_head", sa.String(32), nullable=False),
        sa.Column("dest_head", sa.String(32), nullable=False),
        sa.Column("base", sa.String(32), nullable=False),
        sa.Column("phase", sa.String(32), nullable=False),
        sa.Column("state", sa.JSON, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
    )


def downgrade():
    op.drop_table("bs_paused_merges")
