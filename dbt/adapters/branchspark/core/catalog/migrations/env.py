"""Alembic environment: migrations run on the connection the catalog hands over."""
from alembic import context

from dbt.adapters.branchspark.core.catalog.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
