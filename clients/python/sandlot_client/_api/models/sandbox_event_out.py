from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="SandboxEventOut")



@_attrs_define
class SandboxEventOut:
    """ 
        Attributes:
            at (datetime.datetime):
            from_status (None | str):
            reason (str):
            to_status (str):
     """

    at: datetime.datetime
    from_status: None | str
    reason: str
    to_status: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        from_status: None | str
        from_status = self.from_status

        reason = self.reason

        to_status = self.to_status


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "at": at,
            "from_status": from_status,
            "reason": reason,
            "to_status": to_status,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))




        def _parse_from_status(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        from_status = _parse_from_status(d.pop("from_status"))


        reason = d.pop("reason")

        to_status = d.pop("to_status")

        sandbox_event_out = cls(
            at=at,
            from_status=from_status,
            reason=reason,
            to_status=to_status,
        )


        sandbox_event_out.additional_properties = d
        return sandbox_event_out

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
