"""Tokens the service issued (terminal tokens, console sign-ins) are recorded, so a terminal
token opens one terminal once and a console sign-out ends its session in every process (#27).

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "issued_tokens",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("key_id", sa.String(length=32), nullable=False),
        sa.Column("audience", sa.String(length=200), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("used_at", sa.Float(), nullable=True),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_issued_tokens_expires_at", "issued_tokens", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_issued_tokens_expires_at", table_name="issued_tokens")
    op.drop_table("issued_tokens")
