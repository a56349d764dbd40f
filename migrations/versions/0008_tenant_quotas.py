"""Tenants get quotas on sessions, workspace disk, snapshot storage and sandbox lifetime.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.add_column(sa.Column("max_sessions", sa.Integer(), nullable=False, server_default="20"))
        batch_op.add_column(sa.Column("max_disk_mb", sa.Integer(), nullable=False, server_default="65536"))
        batch_op.add_column(
            sa.Column("max_snapshot_mb", sa.Integer(), nullable=False, server_default="10240")
        )
        batch_op.add_column(sa.Column("max_ttl_seconds", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tenants", schema=None) as batch_op:
        batch_op.drop_column("max_ttl_seconds")
        batch_op.drop_column("max_snapshot_mb")
        batch_op.drop_column("max_disk_mb")
        batch_op.drop_column("max_sessions")
