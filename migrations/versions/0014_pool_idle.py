"""Environments say how long an idle pool sandbox beyond the pool's minimum may wait before it
is shut down (#28: an idle pool stayed at the size its busiest moment took it to, holding its
tenant's quota).

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("environments", schema=None) as batch_op:
        column = sa.Column("pool_idle_seconds", sa.Integer(), nullable=False, server_default="600")
        batch_op.add_column(column)


def downgrade() -> None:
    with op.batch_alter_table("environments", schema=None) as batch_op:
        batch_op.drop_column("pool_idle_seconds")
