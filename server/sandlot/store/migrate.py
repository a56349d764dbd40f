"""Run the Alembic migrations from code (``sandlot migrate`` and start-up).

Alembic's env runs its own event loop, so from async code call these through
``asyncio.to_thread``.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

__all__ = ["alembic_config", "downgrade", "heads", "upgrade"]


def _script_location() -> Path:
    packaged = Path(__file__).resolve().parent.parent / "_migrations"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_script_location()))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(url), revision)


def heads(url: str = "sqlite://") -> list[str]:
    return list(ScriptDirectory.from_config(alembic_config(url)).get_heads())
