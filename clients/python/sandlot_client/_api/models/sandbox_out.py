from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="SandboxOut")



@_attrs_define
class SandboxOut:
    """ 
        Attributes:
            cpus (float):
            created_at (datetime.datetime):
            disk_mb (int | None):
            environment_id (None | str):
            expires_at (datetime.datetime | None):
            id (str):
            image (str):
            memory_mb (int):
            network (bool):
            pids (int):
            runtime (str):
            session_id (None | str):
            status (str):
            status_reason (str):
            tenant_id (str):
            ttl_seconds (int | None):
            updated_at (datetime.datetime):
            workspace (str):
            reusable (bool | Unset): False once a command ran in it as another user than the image's: no other session will
                get it. Default: True.
     """

    cpus: float
    created_at: datetime.datetime
    disk_mb: int | None
    environment_id: None | str
    expires_at: datetime.datetime | None
    id: str
    image: str
    memory_mb: int
    network: bool
    pids: int
    runtime: str
    session_id: None | str
    status: str
    status_reason: str
    tenant_id: str
    ttl_seconds: int | None
    updated_at: datetime.datetime
    workspace: str
    reusable: bool | Unset = True
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        cpus = self.cpus

        created_at = self.created_at.isoformat()

        disk_mb: int | None
        disk_mb = self.disk_mb

        environment_id: None | str
        environment_id = self.environment_id

        expires_at: None | str
        if isinstance(self.expires_at, datetime.datetime):
            expires_at = self.expires_at.isoformat()
        else:
            expires_at = self.expires_at

        id = self.id

        image = self.image

        memory_mb = self.memory_mb

        network = self.network

        pids = self.pids

        runtime = self.runtime

        session_id: None | str
        session_id = self.session_id

        status = self.status

        status_reason = self.status_reason

        tenant_id = self.tenant_id

        ttl_seconds: int | None
        ttl_seconds = self.ttl_seconds

        updated_at = self.updated_at.isoformat()

        workspace = self.workspace

        reusable = self.reusable


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "cpus": cpus,
            "created_at": created_at,
            "disk_mb": disk_mb,
            "environment_id": environment_id,
            "expires_at": expires_at,
            "id": id,
            "image": image,
            "memory_mb": memory_mb,
            "network": network,
            "pids": pids,
            "runtime": runtime,
            "session_id": session_id,
            "status": status,
            "status_reason": status_reason,
            "tenant_id": tenant_id,
            "ttl_seconds": ttl_seconds,
            "updated_at": updated_at,
            "workspace": workspace,
        })
        if reusable is not UNSET:
            field_dict["reusable"] = reusable

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        cpus = d.pop("cpus")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        def _parse_disk_mb(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        disk_mb = _parse_disk_mb(d.pop("disk_mb"))


        def _parse_environment_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        environment_id = _parse_environment_id(d.pop("environment_id"))


        def _parse_expires_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                expires_at_type_0 = datetime.datetime.fromisoformat(data)



                return expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        expires_at = _parse_expires_at(d.pop("expires_at"))


        id = d.pop("id")

        image = d.pop("image")

        memory_mb = d.pop("memory_mb")

        network = d.pop("network")

        pids = d.pop("pids")

        runtime = d.pop("runtime")

        def _parse_session_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        session_id = _parse_session_id(d.pop("session_id"))


        status = d.pop("status")

        status_reason = d.pop("status_reason")

        tenant_id = d.pop("tenant_id")

        def _parse_ttl_seconds(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        ttl_seconds = _parse_ttl_seconds(d.pop("ttl_seconds"))


        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))




        workspace = d.pop("workspace")

        reusable = d.pop("reusable", UNSET)

        sandbox_out = cls(
            cpus=cpus,
            created_at=created_at,
            disk_mb=disk_mb,
            environment_id=environment_id,
            expires_at=expires_at,
            id=id,
            image=image,
            memory_mb=memory_mb,
            network=network,
            pids=pids,
            runtime=runtime,
            session_id=session_id,
            status=status,
            status_reason=status_reason,
            tenant_id=tenant_id,
            ttl_seconds=ttl_seconds,
            updated_at=updated_at,
            workspace=workspace,
            reusable=reusable,
        )


        sandbox_out.additional_properties = d
        return sandbox_out

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
