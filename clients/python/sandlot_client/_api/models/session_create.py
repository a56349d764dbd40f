from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.asset_ref import AssetRef
  from ..models.manifest_entry import ManifestEntry





T = TypeVar("T", bound="SessionCreate")



@_attrs_define
class SessionCreate:
    """ 
        Attributes:
            environment (str):
            assets (list[AssetRef] | Unset):
            feature (None | str | Unset):
            image (None | str | Unset):
            manifest (list[ManifestEntry] | Unset):
            session_id (None | str | Unset): Your own id for the session, unique within your tenant; every /v1/sessions/{id}
                route accepts it in place of the service's id.
            snapshot_id (None | str | Unset): Start with the workspace (and shell state) of this snapshot.
     """

    environment: str
    assets: list[AssetRef] | Unset = UNSET
    feature: None | str | Unset = UNSET
    image: None | str | Unset = UNSET
    manifest: list[ManifestEntry] | Unset = UNSET
    session_id: None | str | Unset = UNSET
    snapshot_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.asset_ref import AssetRef # noqa: PLC0415
        from ..models.manifest_entry import ManifestEntry # noqa: PLC0415
        environment = self.environment

        assets: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.assets, Unset):
            assets = []
            for assets_item_data in self.assets:
                assets_item = assets_item_data.to_dict()
                assets.append(assets_item)



        feature: None | str | Unset
        if isinstance(self.feature, Unset):
            feature = UNSET
        else:
            feature = self.feature

        image: None | str | Unset
        if isinstance(self.image, Unset):
            image = UNSET
        else:
            image = self.image

        manifest: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.manifest, Unset):
            manifest = []
            for manifest_item_data in self.manifest:
                manifest_item = manifest_item_data.to_dict()
                manifest.append(manifest_item)



        session_id: None | str | Unset
        if isinstance(self.session_id, Unset):
            session_id = UNSET
        else:
            session_id = self.session_id

        snapshot_id: None | str | Unset
        if isinstance(self.snapshot_id, Unset):
            snapshot_id = UNSET
        else:
            snapshot_id = self.snapshot_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "environment": environment,
        })
        if assets is not UNSET:
            field_dict["assets"] = assets
        if feature is not UNSET:
            field_dict["feature"] = feature
        if image is not UNSET:
            field_dict["image"] = image
        if manifest is not UNSET:
            field_dict["manifest"] = manifest
        if session_id is not UNSET:
            field_dict["session_id"] = session_id
        if snapshot_id is not UNSET:
            field_dict["snapshot_id"] = snapshot_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.asset_ref import AssetRef # noqa: PLC0415
        from ..models.manifest_entry import ManifestEntry # noqa: PLC0415
        d = dict(src_dict)
        environment = d.pop("environment")

        _assets = d.pop("assets", UNSET)
        assets: list[AssetRef] | Unset = UNSET
        if _assets is not UNSET:
            assets = []
            for assets_item_data in _assets:
                assets_item = AssetRef.from_dict(assets_item_data)



                assets.append(assets_item)


        def _parse_feature(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        feature = _parse_feature(d.pop("feature", UNSET))


        def _parse_image(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        image = _parse_image(d.pop("image", UNSET))


        _manifest = d.pop("manifest", UNSET)
        manifest: list[ManifestEntry] | Unset = UNSET
        if _manifest is not UNSET:
            manifest = []
            for manifest_item_data in _manifest:
                manifest_item = ManifestEntry.from_dict(manifest_item_data)



                manifest.append(manifest_item)


        def _parse_session_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        session_id = _parse_session_id(d.pop("session_id", UNSET))


        def _parse_snapshot_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        snapshot_id = _parse_snapshot_id(d.pop("snapshot_id", UNSET))


        session_create = cls(
            environment=environment,
            assets=assets,
            feature=feature,
            image=image,
            manifest=manifest,
            session_id=session_id,
            snapshot_id=snapshot_id,
        )


        session_create.additional_properties = d
        return session_create

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
