"""processes

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 10:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "processes",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("sandbox_id", sa.String(length=32), nullable=False),
        sa.Column("command", sa.String(length=8000), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("output_bytes", sa.Integer(), nullable=False),
        sa.Column("cpu_seconds", sa.Float(), nullable=True),
        sa.Column("peak_memory_kb", sa.Integer(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("processes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_processes_session_id"), ["session_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_processes_tenant_id"), ["tenant_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("processes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_processes_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_processes_session_id"))
    op.drop_table("processes")
