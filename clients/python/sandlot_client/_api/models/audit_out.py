from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="AuditOut")



@_attrs_define
class AuditOut:
    """ 
        Attributes:
            action (str):
            at (datetime.datetime):
            client (str):
            id (int):
            key_id (str):
            operator (bool):
            outcome (str):
            status (int):
            target (str):
            tenant_id (str):
     """

    action: str
    at: datetime.datetime
    client: str
    id: int
    key_id: str
    operator: bool
    outcome: str
    status: int
    target: str
    tenant_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        action = self.action

        at = self.at.isoformat()

        client = self.client

        id = self.id

        key_id = self.key_id

        operator = self.operator

        outcome = self.outcome

        status = self.status

        target = self.target

        tenant_id = self.tenant_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "action": action,
            "at": at,
            "client": client,
            "id": id,
            "key_id": key_id,
            "operator": operator,
            "outcome": outcome,
            "status": status,
            "target": target,
            "tenant_id": tenant_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        action = d.pop("action")

        at = datetime.datetime.fromisoformat(d.pop("at"))




        client = d.pop("client")

        id = d.pop("id")

        key_id = d.pop("key_id")

        operator = d.pop("operator")

        outcome = d.pop("outcome")

        status = d.pop("status")

        target = d.pop("target")

        tenant_id = d.pop("tenant_id")

        audit_out = cls(
            action=action,
            at=at,
            client=client,
            id=id,
            key_id=key_id,
            operator=operator,
            outcome=outcome,
            status=status,
            target=target,
            tenant_id=tenant_id,
        )


        audit_out.additional_properties = d
        return audit_out

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
