from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="TenantUpdate")



@_attrs_define
class TenantUpdate:
    """ 
        Attributes:
            allow_network (bool | None | Unset):
            max_cpus (float | None | Unset):
            max_disk_mb (int | None | Unset):
            max_environments (int | None | Unset):
            max_keys (int | None | Unset): API keys not revoked
            max_memory_mb (int | None | Unset):
            max_sandboxes (int | None | Unset):
            max_sessions (int | None | Unset):
            max_snapshot_mb (int | None | Unset):
            max_ttl_seconds (int | None | Unset): 0: no longest of its own (the service's)
     """

    allow_network: bool | None | Unset = UNSET
    max_cpus: float | None | Unset = UNSET
    max_disk_mb: int | None | Unset = UNSET
    max_environments: int | None | Unset = UNSET
    max_keys: int | None | Unset = UNSET
    max_memory_mb: int | None | Unset = UNSET
    max_sandboxes: int | None | Unset = UNSET
    max_sessions: int | None | Unset = UNSET
    max_snapshot_mb: int | None | Unset = UNSET
    max_ttl_seconds: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        allow_network: bool | None | Unset
        if isinstance(self.allow_network, Unset):
            allow_network = UNSET
        else:
            allow_network = self.allow_network

        max_cpus: float | None | Unset
        if isinstance(self.max_cpus, Unset):
            max_cpus = UNSET
        else:
            max_cpus = self.max_cpus

        max_disk_mb: int | None | Unset
        if isinstance(self.max_disk_mb, Unset):
            max_disk_mb = UNSET
        else:
            max_disk_mb = self.max_disk_mb

        max_environments: int | None | Unset
        if isinstance(self.max_environments, Unset):
            max_environments = UNSET
        else:
            max_environments = self.max_environments

        max_keys: int | None | Unset
        if isinstance(self.max_keys, Unset):
            max_keys = UNSET
        else:
            max_keys = self.max_keys

        max_memory_mb: int | None | Unset
        if isinstance(self.max_memory_mb, Unset):
            max_memory_mb = UNSET
        else:
            max_memory_mb = self.max_memory_mb

        max_sandboxes: int | None | Unset
        if isinstance(self.max_sandboxes, Unset):
            max_sandboxes = UNSET
        else:
            max_sandboxes = self.max_sandboxes

        max_sessions: int | None | Unset
        if isinstance(self.max_sessions, Unset):
            max_sessions = UNSET
        else:
            max_sessions = self.max_sessions

        max_snapshot_mb: int | None | Unset
        if isinstance(self.max_snapshot_mb, Unset):
            max_snapshot_mb = UNSET
        else:
            max_snapshot_mb = self.max_snapshot_mb

        max_ttl_seconds: int | None | Unset
        if isinstance(self.max_ttl_seconds, Unset):
            max_ttl_seconds = UNSET
        else:
            max_ttl_seconds = self.max_ttl_seconds


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if allow_network is not UNSET:
            field_dict["allow_network"] = allow_network
        if max_cpus is not UNSET:
            field_dict["max_cpus"] = max_cpus
        if max_disk_mb is not UNSET:
            field_dict["max_disk_mb"] = max_disk_mb
        if max_environments is not UNSET:
            field_dict["max_environments"] = max_environments
        if max_keys is not UNSET:
            field_dict["max_keys"] = max_keys
        if max_memory_mb is not UNSET:
            field_dict["max_memory_mb"] = max_memory_mb
        if max_sandboxes is not UNSET:
            field_dict["max_sandboxes"] = max_sandboxes
        if max_sessions is not UNSET:
            field_dict["max_sessions"] = max_sessions
        if max_snapshot_mb is not UNSET:
            field_dict["max_snapshot_mb"] = max_snapshot_mb
        if max_ttl_seconds is not UNSET:
            field_dict["max_ttl_seconds"] = max_ttl_seconds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_allow_network(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        allow_network = _parse_allow_network(d.pop("allow_network", UNSET))


        def _parse_max_cpus(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_cpus = _parse_max_cpus(d.pop("max_cpus", UNSET))


        def _parse_max_disk_mb(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_disk_mb = _parse_max_disk_mb(d.pop("max_disk_mb", UNSET))


        def _parse_max_environments(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_environments = _parse_max_environments(d.pop("max_environments", UNSET))


        def _parse_max_keys(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_keys = _parse_max_keys(d.pop("max_keys", UNSET))


        def _parse_max_memory_mb(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_memory_mb = _parse_max_memory_mb(d.pop("max_memory_mb", UNSET))


        def _parse_max_sandboxes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_sandboxes = _parse_max_sandboxes(d.pop("max_sandboxes", UNSET))


        def _parse_max_sessions(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_sessions = _parse_max_sessions(d.pop("max_sessions", UNSET))


        def _parse_max_snapshot_mb(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_snapshot_mb = _parse_max_snapshot_mb(d.pop("max_snapshot_mb", UNSET))


        def _parse_max_ttl_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_ttl_seconds = _parse_max_ttl_seconds(d.pop("max_ttl_seconds", UNSET))


        tenant_update = cls(
            allow_network=allow_network,
            max_cpus=max_cpus,
            max_disk_mb=max_disk_mb,
            max_environments=max_environments,
            max_keys=max_keys,
            max_memory_mb=max_memory_mb,
            max_sandboxes=max_sandboxes,
            max_sessions=max_sessions,
            max_snapshot_mb=max_snapshot_mb,
            max_ttl_seconds=max_ttl_seconds,
        )


        tenant_update.additional_properties = d
        return tenant_update

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
