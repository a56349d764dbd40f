from __future__ import annotations

from pathlib import Path

import pytest

from sandlot.settings import RuntimeKind, Settings


def test_empty_database_url_means_sqlite_in_the_data_dir(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path, database_url="")
    assert s.database_url == f"sqlite+aiosqlite:///{tmp_path.resolve() / 'sandlot.db'}"


def test_settings_come_from_sandlot_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDLOT_PORT", "9123")
    monkeypatch.setenv("SANDLOT_RUNTIME", "local")
    monkeypatch.setenv("SANDLOT_DATABASE_URL", "postgresql://u@h/db")
    s = Settings()
    assert (s.port, s.runtime, s.database_url) == (9123, RuntimeKind.LOCAL, "postgresql://u@h/db")


def test_bad_instance_name_is_refused() -> None:
    with pytest.raises(ValueError, match="instance"):
        Settings(instance="has space")


def test_instance_defaults_to_one_per_database() -> None:
    a = Settings(database_url="postgresql://h/a")
    assert a.instance == Settings(database_url="postgresql://h/a").instance
    assert a.instance != Settings(database_url="postgresql://h/b").instance
    assert Settings(database_url="postgresql://h/a", instance="mine").instance == "mine"


def test_every_setting_is_in_the_readmes_table() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for name in Settings.model_fields:
        assert f"| `SANDLOT_{name.upper()}` |" in readme, name
