from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.snapshot_out_diff import SnapshotOutDiff





T = TypeVar("T", bound="SnapshotOut")



@_attrs_define
class SnapshotOut:
    """ 
        Attributes:
            created_at (datetime.datetime):
            diff (SnapshotOutDiff):
            file_count (int):
            id (str):
            kind (str):
            parent_id (None | str):
            session_id (str):
            size_bytes (int):
     """

    created_at: datetime.datetime
    diff: SnapshotOutDiff
    file_count: int
    id: str
    kind: str
    parent_id: None | str
    session_id: str
    size_bytes: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.snapshot_out_diff import SnapshotOutDiff # noqa: PLC0415
        created_at = self.created_at.isoformat()

        diff = self.diff.to_dict()

        file_count = self.file_count

        id = self.id

        kind = self.kind

        parent_id: None | str
        parent_id = self.parent_id

        session_id = self.session_id

        size_bytes = self.size_bytes


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "created_at": created_at,
            "diff": diff,
            "file_count": file_count,
            "id": id,
            "kind": kind,
            "parent_id": parent_id,
            "session_id": session_id,
            "size_bytes": size_bytes,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.snapshot_out_diff import SnapshotOutDiff # noqa: PLC0415
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        diff = SnapshotOutDiff.from_dict(d.pop("diff"))




        file_count = d.pop("file_count")

        id = d.pop("id")

        kind = d.pop("kind")

        def _parse_parent_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        parent_id = _parse_parent_id(d.pop("parent_id"))


        session_id = d.pop("session_id")

        size_bytes = d.pop("size_bytes")

        snapshot_out = cls(
            created_at=created_at,
            diff=diff,
            file_count=file_count,
            id=id,
            kind=kind,
            parent_id=parent_id,
            session_id=session_id,
            size_bytes=size_bytes,
        )


        snapshot_out.additional_properties = d
        return snapshot_out

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
