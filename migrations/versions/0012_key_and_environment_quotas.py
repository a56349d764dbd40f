"""Tenants get quotas on their API keys and environments (#27: a key minted keys without end,
each with a rate-limit bucket of its own, and 200 environments' pools filled the log).

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_keys", sa.Integer(), nullable=False, server_default="50"))
        batch_op.add_column(sa.Column("max_environments", sa.Integer(), nullable=False, server_default="50"))


def downgrade() -> None:
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.drop_column("max_environments")
        batch_op.drop_column("max_keys")
