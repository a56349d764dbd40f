from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="TenantOut")



@_attrs_define
class TenantOut:
    """ 
        Attributes:
            allow_network (bool):
            created_at (datetime.datetime):
            id (str):
            max_cpus (float):
            max_disk_mb (int):
            max_environments (int):
            max_keys (int):
            max_memory_mb (int):
            max_sandboxes (int):
            max_sessions (int):
            max_snapshot_mb (int):
            max_ttl_seconds (int | None):
            name (str):
     """

    allow_network: bool
    created_at: datetime.datetime
    id: str
    max_cpus: float
    max_disk_mb: int
    max_environments: int
    max_keys: int
    max_memory_mb: int
    max_sandboxes: int
    max_sessions: int
    max_snapshot_mb: int
    max_ttl_seconds: int | None
    name: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        allow_network = self.allow_network

        created_at = self.created_at.isoformat()

        id = self.id

        max_cpus = self.max_cpus

        max_disk_mb = self.max_disk_mb

        max_environments = self.max_environments

        max_keys = self.max_keys

        max_memory_mb = self.max_memory_mb

        max_sandboxes = self.max_sandboxes

        max_sessions = self.max_sessions

        max_snapshot_mb = self.max_snapshot_mb

        max_ttl_seconds: int | None
        max_ttl_seconds = self.max_ttl_seconds

        name = self.name


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "allow_network": allow_network,
            "created_at": created_at,
            "id": id,
            "max_cpus": max_cpus,
            "max_disk_mb": max_disk_mb,
            "max_environments": max_environments,
            "max_keys": max_keys,
            "max_memory_mb": max_memory_mb,
            "max_sandboxes": max_sandboxes,
            "max_sessions": max_sessions,
            "max_snapshot_mb": max_snapshot_mb,
            "max_ttl_seconds": max_ttl_seconds,
            "name": name,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        allow_network = d.pop("allow_network")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        id = d.pop("id")

        max_cpus = d.pop("max_cpus")

        max_disk_mb = d.pop("max_disk_mb")

        max_environments = d.pop("max_environments")

        max_keys = d.pop("max_keys")

        max_memory_mb = d.pop("max_memory_mb")

        max_sandboxes = d.pop("max_sandboxes")

        max_sessions = d.pop("max_sessions")

        max_snapshot_mb = d.pop("max_snapshot_mb")

        def _parse_max_ttl_seconds(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        max_ttl_seconds = _parse_max_ttl_seconds(d.pop("max_ttl_seconds"))


        name = d.pop("name")

        tenant_out = cls(
            allow_network=allow_network,
            created_at=created_at,
            id=id,
            max_cpus=max_cpus,
            max_disk_mb=max_disk_mb,
            max_environments=max_environments,
            max_keys=max_keys,
            max_memory_mb=max_memory_mb,
            max_sandboxes=max_sandboxes,
            max_sessions=max_sessions,
            max_snapshot_mb=max_snapshot_mb,
            max_ttl_seconds=max_ttl_seconds,
            name=name,
        )


        tenant_out.additional_properties = d
        return tenant_out

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
