"""tenants, api keys, sandboxes, sandbox events

Revision ID: 0001
Revises:
Create Date: 2026-11-21 08:26:45.452626
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tenants",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("max_sandboxes", sa.Integer(), nullable=False),
        sa.Column("max_memory_mb", sa.Integer(), nullable=False),
        sa.Column("max_cpus", sa.Float(), nullable=False),
        sa.Column("allow_network", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("prefix"),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "sandboxes",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("image", sa.String(length=300), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("status_reason", sa.String(length=500), nullable=False),
        sa.Column("runtime", sa.String(length=20), nullable=False),
        sa.Column("runtime_ref", sa.String(length=100), nullable=True),
        sa.Column("workspace", sa.String(length=300), nullable=False),
        sa.Column("memory_mb", sa.Integer(), nullable=False),
        sa.Column("cpus", sa.Float(), nullable=False),
        sa.Column("pids", sa.Integer(), nullable=False),
        sa.Column("network", sa.Boolean(), nullable=False),
        sa.Column("env", sa.JSON(), nullable=False),
        sa.Column("ttl_seconds", sa.Integer(), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("sandboxes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sandboxes_expires_at"), ["expires_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_sandboxes_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_sandboxes_tenant_id"), ["tenant_id"], unique=False)

    op.create_table(
        "sandbox_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sandbox_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("from_status", sa.String(length=20), nullable=True),
        sa.Column("to_status", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["sandbox_id"],
            ["sandboxes.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("sandbox_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sandbox_events_sandbox_id"), ["sandbox_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("sandbox_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sandbox_events_sandbox_id"))

    op.drop_table("sandbox_events")
    with op.batch_alter_table("sandboxes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sandboxes_tenant_id"))
        batch_op.drop_index(batch_op.f("ix_sandboxes_status"))
        batch_op.drop_index(batch_op.f("ix_sandboxes_expires_at"))

    op.drop_table("sandboxes")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_tenant_id"))

    op.drop_table("api_keys")
    op.drop_table("tenants")
