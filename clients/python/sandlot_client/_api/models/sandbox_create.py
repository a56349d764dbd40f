from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.sandbox_create_env import SandboxCreateEnv





T = TypeVar("T", bound="SandboxCreate")



@_attrs_define
class SandboxCreate:
    """ 
        Attributes:
            cpus (float | None | Unset):
            disk_mb (int | None | Unset):
            env (SandboxCreateEnv | Unset):
            image (None | str | Unset):
            memory_mb (int | None | Unset):
            network (bool | Unset):  Default: False.
            pids (int | None | Unset):
            read_only_root (bool | Unset):  Default: False.
            ttl_seconds (int | None | Unset):
     """

    cpus: float | None | Unset = UNSET
    disk_mb: int | None | Unset = UNSET
    env: SandboxCreateEnv | Unset = UNSET
    image: None | str | Unset = UNSET
    memory_mb: int | None | Unset = UNSET
    network: bool | Unset = False
    pids: int | None | Unset = UNSET
    read_only_root: bool | Unset = False
    ttl_seconds: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.sandbox_create_env import SandboxCreateEnv # noqa: PLC0415
        cpus: float | None | Unset
        if isinstance(self.cpus, Unset):
            cpus = UNSET
        else:
            cpus = self.cpus

        disk_mb: int | None | Unset
        if isinstance(self.disk_mb, Unset):
            disk_mb = UNSET
        else:
            disk_mb = self.disk_mb

        env: dict[str, Any] | Unset = UNSET
        if not isinstance(self.env, Unset):
            env = self.env.to_dict()

        image: None | str | Unset
        if isinstance(self.image, Unset):
            image = UNSET
        else:
            image = self.image

        memory_mb: int | None | Unset
        if isinstance(self.memory_mb, Unset):
            memory_mb = UNSET
        else:
            memory_mb = self.memory_mb

        network = self.network

        pids: int | None | Unset
        if isinstance(self.pids, Unset):
            pids = UNSET
        else:
            pids = self.pids

        read_only_root = self.read_only_root

        ttl_seconds: int | None | Unset
        if isinstance(self.ttl_seconds, Unset):
            ttl_seconds = UNSET
        else:
            ttl_seconds = self.ttl_seconds


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if cpus is not UNSET:
            field_dict["cpus"] = cpus
        if disk_mb is not UNSET:
            field_dict["disk_mb"] = disk_mb
        if env is not UNSET:
            field_dict["env"] = env
        if image is not UNSET:
            field_dict["image"] = image
        if memory_mb is not UNSET:
            field_dict["memory_mb"] = memory_mb
        if network is not UNSET:
            field_dict["network"] = network
        if pids is not UNSET:
            field_dict["pids"] = pids
        if read_only_root is not UNSET:
            field_dict["read_only_root"] = read_only_root
        if ttl_seconds is not UNSET:
            field_dict["ttl_seconds"] = ttl_seconds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.sandbox_create_env import SandboxCreateEnv # noqa: PLC0415
        d = dict(src_dict)
        def _parse_cpus(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cpus = _parse_cpus(d.pop("cpus", UNSET))


        def _parse_disk_mb(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        disk_mb = _parse_disk_mb(d.pop("disk_mb", UNSET))


        _env = d.pop("env", UNSET)
        env: SandboxCreateEnv | Unset
        if isinstance(_env,  Unset):
            env = UNSET
        else:
            env = SandboxCreateEnv.from_dict(_env)




        def _parse_image(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        image = _parse_image(d.pop("image", UNSET))


        def _parse_memory_mb(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        memory_mb = _parse_memory_mb(d.pop("memory_mb", UNSET))


        network = d.pop("network", UNSET)

        def _parse_pids(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pids = _parse_pids(d.pop("pids", UNSET))


        read_only_root = d.pop("read_only_root", UNSET)

        def _parse_ttl_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ttl_seconds = _parse_ttl_seconds(d.pop("ttl_seconds", UNSET))


        sandbox_create = cls(
            cpus=cpus,
            disk_mb=disk_mb,
            env=env,
            image=image,
            memory_mb=memory_mb,
            network=network,
            pids=pids,
            read_only_root=read_only_root,
            ttl_seconds=ttl_seconds,
        )


        sandbox_create.additional_properties = d
        return sandbox_create

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
