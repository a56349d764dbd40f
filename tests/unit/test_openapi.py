"""The OpenAPI document says what the service takes: maps are objects (the generated client
builds its models from it), and the bounds on them still hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from sandlot.api.process_schemas import ProcessStart
from sandlot.api.schemas import EnvironmentCreate, ExecIn, SandboxCreate
from sandlot.app import create_app
from sandlot.settings import Settings


@pytest.fixture(scope="module")
def schemas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data_dir: Path = tmp_path_factory.mktemp("openapi")
    app = create_app(Settings(data_dir=data_dir, database_url=f"sqlite:///{data_dir}/x.db"))
    document = app.openapi_schema.to_schema()
    return dict(document["components"]["schemas"])


@pytest.mark.parametrize(
    ("schema", "field"),
    [
        ("SandboxCreate", "env"),
        ("ExecIn", "env"),
        ("ProcessStart", "env"),
        ("EnvironmentCreate", "env"),
        ("EnvironmentCreate", "features"),
        ("EnvironmentOut", "env"),
        ("EnvironmentOut", "features"),
    ],
)
def test_maps_are_documented_as_objects(schemas: dict[str, Any], schema: str, field: str) -> None:
    documented = schemas[schema]["properties"][field]
    assert documented["type"] == "object", documented
    assert "additionalProperties" in documented


def test_maps_keep_their_bounds() -> None:
    many = {f"V{i}": "x" for i in range(257)}
    for model, extra in (
        (SandboxCreate, {}),
        (ExecIn, {"command": "true"}),
        (ProcessStart, {"command": "true"}),
        (EnvironmentCreate, {"name": "e", "images": ["i"]}),
    ):
        with pytest.raises(ValidationError, match="at most 256 entries"):
            model.model_validate({**extra, "env": many})
        model.model_validate({**extra, "env": dict(list(many.items())[:256])})
    with pytest.raises(ValidationError, match="at most 64 entries"):
        EnvironmentCreate.model_validate(
            {"name": "e", "images": ["i"], "features": {str(i): None for i in range(65)}}
        )
    with pytest.raises(ValidationError):
        SandboxCreate.model_validate({"env": {"K" * 129: "v"}})
