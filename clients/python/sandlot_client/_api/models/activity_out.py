from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="ActivityOut")



@_attrs_define
class ActivityOut:
    """ 
        Attributes:
            args_summary (str):
            duration_ms (float):
            error (None | str):
            error_code (None | str):
            feature (str):
            id (int | None):
            name (str):
            sandbox_id (None | str):
            session_id (None | str):
            started_at (datetime.datetime):
     """

    args_summary: str
    duration_ms: float
    error: None | str
    error_code: None | str
    feature: str
    id: int | None
    name: str
    sandbox_id: None | str
    session_id: None | str
    started_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        args_summary = self.args_summary

        duration_ms = self.duration_ms

        error: None | str
        error = self.error

        error_code: None | str
        error_code = self.error_code

        feature = self.feature

        id: int | None
        id = self.id

        name = self.name

        sandbox_id: None | str
        sandbox_id = self.sandbox_id

        session_id: None | str
        session_id = self.session_id

        started_at = self.started_at.isoformat()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "args_summary": args_summary,
            "duration_ms": duration_ms,
            "error": error,
            "error_code": error_code,
            "feature": feature,
            "id": id,
            "name": name,
            "sandbox_id": sandbox_id,
            "session_id": session_id,
            "started_at": started_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        args_summary = d.pop("args_summary")

        duration_ms = d.pop("duration_ms")

        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))


        def _parse_error_code(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error_code = _parse_error_code(d.pop("error_code"))


        feature = d.pop("feature")

        def _parse_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        id = _parse_id(d.pop("id"))


        name = d.pop("name")

        def _parse_sandbox_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        sandbox_id = _parse_sandbox_id(d.pop("sandbox_id"))


        def _parse_session_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        session_id = _parse_session_id(d.pop("session_id"))


        started_at = datetime.datetime.fromisoformat(d.pop("started_at"))




        activity_out = cls(
            args_summary=args_summary,
            duration_ms=duration_ms,
            error=error,
            error_code=error_code,
            feature=feature,
            id=id,
            name=name,
            sandbox_id=sandbox_id,
            session_id=session_id,
            started_at=started_at,
        )


        activity_out.additional_properties = d
        return activity_out

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
