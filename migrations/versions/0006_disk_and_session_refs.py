"""Sandboxes record their disk limit and the deployment (instance) that created them; a
session's client-chosen id is a per-tenant reference.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sandboxes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("disk_mb", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("instance", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_sandboxes_instance", ["instance"], unique=False)
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("client_ref", sa.String(length=64), nullable=True))
        batch_op.create_unique_constraint("uq_sessions_tenant_client_ref", ["tenant_id", "client_ref"])


def downgrade() -> None:
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_constraint("uq_sessions_tenant_client_ref", type_="unique")
        batch_op.drop_column("client_ref")
    with op.batch_alter_table("sandboxes", schema=None) as batch_op:
        batch_op.drop_index("ix_sandboxes_instance")
        batch_op.drop_column("instance")
        batch_op.drop_column("disk_mb")
