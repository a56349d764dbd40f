from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.manifest_entry_encoding import ManifestEntryEncoding
from ..types import UNSET, Unset






T = TypeVar("T", bound="ManifestEntry")



@_attrs_define
class ManifestEntry:
    """ 
        Attributes:
            content (str):
            path (str):
            encoding (ManifestEntryEncoding | Unset):  Default: ManifestEntryEncoding.UTF_8.
     """

    content: str
    path: str
    encoding: ManifestEntryEncoding | Unset = ManifestEntryEncoding.UTF_8
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        content = self.content

        path = self.path

        encoding: str | Unset = UNSET
        if not isinstance(self.encoding, Unset):
            encoding = self.encoding.value



        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "content": content,
            "path": path,
        })
        if encoding is not UNSET:
            field_dict["encoding"] = encoding

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        content = d.pop("content")

        path = d.pop("path")

        _encoding = d.pop("encoding", UNSET)
        encoding: ManifestEntryEncoding | Unset
        if isinstance(_encoding,  Unset):
            encoding = UNSET
        else:
            encoding = ManifestEntryEncoding(_encoding)




        manifest_entry = cls(
            content=content,
            path=path,
            encoding=encoding,
        )


        manifest_entry.additional_properties = d
        return manifest_entry

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
