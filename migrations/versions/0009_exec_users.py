"""Environments list the users commands may run as; a sandbox used by one is never reused.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("environments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("exec_users", sa.JSON(), nullable=False, server_default="[]"))
    with op.batch_alter_table("sandboxes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("reusable", sa.Boolean(), nullable=False, server_default=sa.true()))


def downgrade() -> None:
    with op.batch_alter_table("sandboxes", schema=None) as batch_op:
        batch_op.drop_column("reusable")
    with op.batch_alter_table("environments", schema=None) as batch_op:
        batch_op.drop_column("exec_users")
