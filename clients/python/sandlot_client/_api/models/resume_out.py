from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.resume_out_how import ResumeOutHow
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.session_out import SessionOut





T = TypeVar("T", bound="ResumeOut")



@_attrs_define
class ResumeOut:
    """ 
        Attributes:
            how (ResumeOutHow):
            session (SessionOut):
            snapshot_id (None | str | Unset):
     """

    how: ResumeOutHow
    session: SessionOut
    snapshot_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.session_out import SessionOut # noqa: PLC0415
        how = self.how.value

        session = self.session.to_dict()

        snapshot_id: None | str | Unset
        if isinstance(self.snapshot_id, Unset):
            snapshot_id = UNSET
        else:
            snapshot_id = self.snapshot_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "how": how,
            "session": session,
        })
        if snapshot_id is not UNSET:
            field_dict["snapshot_id"] = snapshot_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.session_out import SessionOut # noqa: PLC0415
        d = dict(src_dict)
        how = ResumeOutHow(d.pop("how"))




        session = SessionOut.from_dict(d.pop("session"))




        def _parse_snapshot_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        snapshot_id = _parse_snapshot_id(d.pop("snapshot_id", UNSET))


        resume_out = cls(
            how=how,
            session=session,
            snapshot_id=snapshot_id,
        )


        resume_out.additional_properties = d
        return resume_out

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
