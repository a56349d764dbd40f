"""environments, sessions, activities

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 08:36:48.117984
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "activities",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=True),
        sa.Column("sandbox_id", sa.String(length=32), nullable=True),
        sa.Column("feature", sa.String(length=100), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("args_summary", sa.String(length=1000), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("error", sa.String(length=1000), nullable=True),
        sa.Column("error_code", sa.String(length=100), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("activities", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_activities_session_id"), ["session_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_activities_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "environments",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("images", sa.JSON(), nullable=False),
        sa.Column("features", sa.JSON(), nullable=False),
        sa.Column("pool_size", sa.JSON(), nullable=False),
        sa.Column("memory_mb", sa.Integer(), nullable=False),
        sa.Column("cpus", sa.Float(), nullable=False),
        sa.Column("pids", sa.Integer(), nullable=False),
        sa.Column("disk_mb", sa.Integer(), nullable=True),
        sa.Column("network", sa.Boolean(), nullable=False),
        sa.Column("env", sa.JSON(), nullable=False),
        sa.Column("session_ttl_seconds", sa.Integer(), nullable=True),
        sa.Column("idle_timeout_seconds", sa.Integer(), nullable=True),
        sa.Column("outage_grace_period_seconds", sa.Float(), nullable=False),
        sa.Column("housekeeping_interval_seconds", sa.Float(), nullable=False),
        sa.Column("unhealthy_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant_id", "name"),
    )
    with op.batch_alter_table("environments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_environments_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("environment_id", sa.String(length=32), nullable=False),
        sa.Column("sandbox_id", sa.String(length=32), nullable=True),
        sa.Column("image", sa.String(length=300), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("end_reason", sa.String(length=500), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_activity_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sessions_environment_id"), ["environment_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_tenant_id"), ["tenant_id"], unique=False)

    with op.batch_alter_table("sandboxes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("environment_id", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("session_id", sa.String(length=64), nullable=True))
        batch_op.create_index(batch_op.f("ix_sandboxes_environment_id"), ["environment_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("sandboxes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sandboxes_environment_id"))
        batch_op.drop_column("session_id")
        batch_op.drop_column("environment_id")

    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sessions_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_sessions_status"))
        batch_op.drop_index(batch_op.f("ix_sessions_environment_id"))

    op.drop_table("sessions")
    with op.batch_alter_table("environments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_environments_tenant_id"))

    op.drop_table("environments")
    with op.batch_alter_table("activities", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_activities_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_activities_session_id"))

    op.drop_table("activities")
