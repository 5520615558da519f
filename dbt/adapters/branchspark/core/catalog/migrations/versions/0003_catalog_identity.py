"""Catalog identity and run branches.

`bs_catalog` holds the catalog's id, which the warehouse's marker file repeats
(catalog/binding.py), so a command finds out before it reads, writes or deletes
anything whether the catalog and the warehouse belong together. A catalog being
upgraded gets a new id here; `branchspark upgrade` writes it into the warehouse.

`bs_branches.run_branch` marks the branches a dbt invocation created for itself:
only those does `gc --drop-run-branches-after` expire. Branches of older catalogs
are not marked (a user's branch is never taken for a run branch).

Revision ID: 0003
Revises: 0002
"""
import uuid
from datetime import datetime, timezone

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade():
    catalog = op.create_table(
        "bs_catalog",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("warehouse", sa.Text),
    )
    op.bulk_insert(catalog, [{"id": uuid.uuid4().hex,
                              "created_at": datetime.now(timezone.utc).replace(tzinfo=None), "warehouse": None}])
    with op.batch_alter_table("bs_branches") as batch:
        batch.add_column(sa.Column("run_branch", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade():
    with op.batch_alter_table("bs_branches") as batch:
        batch.drop_column("run_branch")
    op.drop_table("bs_catalog")
