"""Where each background process keeps its output and bookkeeping in its sandbox
(``processes.dir``): the sandbox's disk from now on, where it was the state tmpfs. A row
without one (started before) is still found at the old place, ``<state dir>/proc/<id>``.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("processes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("dir", sa.String(length=300), nullable=True))


def downgrade() -> None:
    # older versions look for every process at the old place: one started since is lost to them
    with op.batch_alter_table("processes", schema=None) as batch_op:
        batch_op.drop_column("dir")
