from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.environment_create_features_additional_property_type_0 import EnvironmentCreateFeaturesAdditionalPropertyType0





T = TypeVar("T", bound="EnvironmentCreateFeatures")



@_attrs_define
class EnvironmentCreateFeatures:
    

    additional_properties: dict[str, EnvironmentCreateFeaturesAdditionalPropertyType0 | None] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.environment_create_features_additional_property_type_0 import EnvironmentCreateFeaturesAdditionalPropertyType0 # noqa: PLC0415
        
        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            
            if isinstance(prop, EnvironmentCreateFeaturesAdditionalPropertyType0):
                field_dict[prop_name] = prop.to_dict()
            else:
                field_dict[prop_name] = prop


        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.environment_create_features_additional_property_type_0 import EnvironmentCreateFeaturesAdditionalPropertyType0 # noqa: PLC0415
        d = dict(src_dict)
        environment_create_features = cls(
        )


        additional_properties = {}
        for prop_name, prop_dict in d.items():
            def _parse_additional_property(data: object) -> EnvironmentCreateFeaturesAdditionalPropertyType0 | None:
                if data is None:
                    return data
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    additional_property_type_0 = EnvironmentCreateFeaturesAdditionalPropertyType0.from_dict(data)



                    return additional_property_type_0
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                return cast(EnvironmentCreateFeaturesAdditionalPropertyType0 | None, data)

            additional_property = _parse_additional_property(prop_dict)

            additional_properties[prop_name] = additional_property

        environment_create_features.additional_properties = additional_properties
        return environment_create_features

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> EnvironmentCreateFeaturesAdditionalPropertyType0 | None:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: EnvironmentCreateFeaturesAdditionalPropertyType0 | None) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
