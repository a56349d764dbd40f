from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="TenantUsageOut")



@_attrs_define
class TenantUsageOut:
    """ 
        Attributes:
            cpus (float):
            disk_mb (int):
            environments (int):
            keys (int): API keys not revoked
            memory_mb (int):
            sandboxes (int):
            sessions (int):
            snapshot_blobs (int): Distinct file contents (and older tar snapshots) kept
            snapshot_bytes (int): What its snapshots keep: each file content once
     """

    cpus: float
    disk_mb: int
    environments: int
    keys: int
    memory_mb: int
    sandboxes: int
    sessions: int
    snapshot_blobs: int
    snapshot_bytes: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        cpus = self.cpus

        disk_mb = self.disk_mb

        environments = self.environments

        keys = self.keys

        memory_mb = self.memory_mb

        sandboxes = self.sandboxes

        sessions = self.sessions

        snapshot_blobs = self.snapshot_blobs

        snapshot_bytes = self.snapshot_bytes


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "cpus": cpus,
            "disk_mb": disk_mb,
            "environments": environments,
            "keys": keys,
            "memory_mb": memory_mb,
            "sandboxes": sandboxes,
            "sessions": sessions,
            "snapshot_blobs": snapshot_blobs,
            "snapshot_bytes": snapshot_bytes,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cpus = d.pop("cpus")

        disk_mb = d.pop("disk_mb")

        environments = d.pop("environments")

        keys = d.pop("keys")

        memory_mb = d.pop("memory_mb")

        sandboxes = d.pop("sandboxes")

        sessions = d.pop("sessions")

        snapshot_blobs = d.pop("snapshot_blobs")

        snapshot_bytes = d.pop("snapshot_bytes")

        tenant_usage_out = cls(
            cpus=cpus,
            disk_mb=disk_mb,
            environments=environments,
            keys=keys,
            memory_mb=memory_mb,
            sandboxes=sandboxes,
            sessions=sessions,
            snapshot_blobs=snapshot_blobs,
            snapshot_bytes=snapshot_bytes,
        )


        tenant_usage_out.additional_properties = d
        return tenant_usage_out

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
