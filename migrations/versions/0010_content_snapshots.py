"""Content-addressed snapshots: file contents stored once per tenant (``content_blobs``), the
blobs each snapshot needs (``snapshot_blobs``), and how a snapshot is stored
(``snapshots.storage``: ``tar`` for every snapshot made before, ``content`` from now on).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("snapshots", schema=None) as batch_op:
        batch_op.add_column(sa.Column("storage", sa.String(length=10), nullable=False, server_default="tar"))
    with op.batch_alter_table("snapshots", schema=None) as batch_op:
        batch_op.alter_column("storage", server_default=None)
    op.create_table(
        "content_blobs",
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("blob_key", sa.String(length=300), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"]),
        sa.PrimaryKeyConstraint("tenant_id", "digest"),
    )
    op.create_table(
        "snapshot_blobs",
        sa.Column("snapshot_id", sa.String(length=32), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(["snapshot_id"], ["snapshots.id"]),
        sa.ForeignKeyConstraint(
            ["tenant_id", "digest"],
            ["content_blobs.tenant_id", "content_blobs.digest"],
            name="fk_snapshot_blobs_content",
        ),
        sa.PrimaryKeyConstraint("snapshot_id", "digest"),
    )
    op.create_index("ix_snapshot_blobs_tenant_digest", "snapshot_blobs", ["tenant_id", "digest"])


def downgrade() -> None:
    # older versions read only tar snapshots: refuse rather than leave rows they cannot restore
    found = op.get_bind().execute(sa.text("SELECT count(*) FROM snapshots WHERE storage <> 'tar'")).scalar()
    if found:
        raise RuntimeError(
            f"{found} content-addressed snapshots exist; older versions cannot restore them "
            "(delete them first if they may go)"
        )
    op.drop_index("ix_snapshot_blobs_tenant_digest", table_name="snapshot_blobs")
    op.drop_table("snapshot_blobs")
    op.drop_table("content_blobs")
    with op.batch_alter_table("snapshots", schema=None) as batch_op:
        batch_op.drop_column("storage")
