"""The feature registry: built-ins plus third-party features from entry points.

A package adds features by declaring, in its ``pyproject.toml``::

    [project.entry-points."sandlot.features"]
    browser = "my_package.features:BrowserFeature"
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from sandlot.domain.errors import InvalidInput
from sandlot.features.base import Feature
from sandlot.features.files import FilesFeature
from sandlot.features.python import PythonFeature
from sandlot.features.shell import ShellFeature

__all__ = ["ENTRY_POINT_GROUP", "FeatureRegistry"]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "sandlot.features"
BUILTINS: tuple[type[Feature], ...] = (ShellFeature, FilesFeature, PythonFeature)


class FeatureRegistry:
    """Feature classes by name."""

    def __init__(self, classes: Mapping[str, type[Feature]]) -> None:
        self._classes = dict(classes)

    @classmethod
    def discover(cls) -> FeatureRegistry:
        classes: dict[str, type[Feature]] = {f.name: f for f in BUILTINS}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                loaded = ep.load()
            except Exception:
                log.exception("could not load feature entry point %s", ep.name)
                continue
            if isinstance(loaded, type) and issubclass(loaded, Feature):
                classes[ep.name] = loaded
            else:
                log.error("entry point %s is not a Feature subclass", ep.name)
        return cls(classes)

    def names(self) -> list[str]:
        return sorted(self._classes)

    def describe(self) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "sandbox_based": c.sandbox_based,
                "description": c.description,
                "activities": {a.name: a.summary for a in c.activities().values()},
                # the argument each activity takes streamed (.../{activity}/stream), if any
                "streamed": {a.name: a.upload for a in c.activities().values() if a.upload},
            }
            for name, c in sorted(self._classes.items())
        ]

    def build(self, config: Mapping[str, Any]) -> dict[str, Feature]:
        """Instantiate an environment's features. An empty config means every built-in with
        its default applicability."""
        if not config:
            return {f.name: f() for f in BUILTINS}
        built: dict[str, Feature] = {}
        for name, options in config.items():
            cls = self._classes.get(name)
            if cls is None:
                raise InvalidInput(
                    f"unknown feature {name!r}; known: {', '.join(self.names())}", field="features"
                )
            if options is not None and not isinstance(options, dict):
                raise InvalidInput(f"feature {name!r} options must be an object", field="features")
            try:
                built[name] = cls(**(options or {}))
            except TypeError as exc:
                raise InvalidInput(f"feature {name!r}: {exc}", field="features") from exc
        return built
