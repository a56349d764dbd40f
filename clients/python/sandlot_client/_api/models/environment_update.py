from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.environment_update_idle_action_type_1 import EnvironmentUpdateIdleActionType1
from ..models.environment_update_idle_action_type_2_type_1 import EnvironmentUpdateIdleActionType2Type1
from ..models.environment_update_idle_action_type_3_type_1 import EnvironmentUpdateIdleActionType3Type1
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.environment_update_env_type_0 import EnvironmentUpdateEnvType0
  from ..models.environment_update_features_type_0 import EnvironmentUpdateFeaturesType0
  from ..models.environment_update_pool_size_type_2 import EnvironmentUpdatePoolSizeType2





T = TypeVar("T", bound="EnvironmentUpdate")



@_attrs_define
class EnvironmentUpdate:
    """ 
        Attributes:
            cpus (float | None | Unset):
            disk_mb (int | None | Unset):
            env (EnvironmentUpdateEnvType0 | None | Unset):
            exec_users (list[str] | None | Unset):
            features (EnvironmentUpdateFeaturesType0 | None | Unset):
            housekeeping_interval_seconds (float | None | Unset):
            idle_action (EnvironmentUpdateIdleActionType1 | EnvironmentUpdateIdleActionType2Type1 |
                EnvironmentUpdateIdleActionType3Type1 | None | Unset):
            idle_timeout_seconds (int | None | Unset):
            images (list[str] | None | Unset):
            memory_mb (int | None | Unset):
            network (bool | None | Unset):
            outage_grace_period_seconds (float | None | Unset):
            pids (int | None | Unset):
            pool_idle_seconds (int | None | Unset):
            pool_size (EnvironmentUpdatePoolSizeType2 | int | list[int] | None | Unset):
            session_ttl_seconds (int | None | Unset):
     """

    cpus: float | None | Unset = UNSET
    disk_mb: int | None | Unset = UNSET
    env: EnvironmentUpdateEnvType0 | None | Unset = UNSET
    exec_users: list[str] | None | Unset = UNSET
    features: EnvironmentUpdateFeaturesType0 | None | Unset = UNSET
    housekeeping_interval_seconds: float | None | Unset = UNSET
    idle_action: EnvironmentUpdateIdleActionType1 | EnvironmentUpdateIdleActionType2Type1 | EnvironmentUpdateIdleActionType3Type1 | None | Unset = UNSET
    idle_timeout_seconds: int | None | Unset = UNSET
    images: list[str] | None | Unset = UNSET
    memory_mb: int | None | Unset = UNSET
    network: bool | None | Unset = UNSET
    outage_grace_period_seconds: float | None | Unset = UNSET
    pids: int | None | Unset = UNSET
    pool_idle_seconds: int | None | Unset = UNSET
    pool_size: EnvironmentUpdatePoolSizeType2 | int | list[int] | None | Unset = UNSET
    session_ttl_seconds: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.environment_update_env_type_0 import EnvironmentUpdateEnvType0 # noqa: PLC0415
        from ..models.environment_update_features_type_0 import EnvironmentUpdateFeaturesType0 # noqa: PLC0415
        from ..models.environment_update_pool_size_type_2 import EnvironmentUpdatePoolSizeType2 # noqa: PLC0415
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

        env: dict[str, Any] | None | Unset
        if isinstance(self.env, Unset):
            env = UNSET
        elif isinstance(self.env, EnvironmentUpdateEnvType0):
            env = self.env.to_dict()
        else:
            env = self.env

        exec_users: list[str] | None | Unset
        if isinstance(self.exec_users, Unset):
            exec_users = UNSET
        elif isinstance(self.exec_users, list):
            exec_users = self.exec_users


        else:
            exec_users = self.exec_users

        features: dict[str, Any] | None | Unset
        if isinstance(self.features, Unset):
            features = UNSET
        elif isinstance(self.features, EnvironmentUpdateFeaturesType0):
            features = self.features.to_dict()
        else:
            features = self.features

        housekeeping_interval_seconds: float | None | Unset
        if isinstance(self.housekeeping_interval_seconds, Unset):
            housekeeping_interval_seconds = UNSET
        else:
            housekeeping_interval_seconds = self.housekeeping_interval_seconds

        idle_action: None | str | Unset
        if isinstance(self.idle_action, Unset):
            idle_action = UNSET
        elif isinstance(self.idle_action, EnvironmentUpdateIdleActionType1):
            idle_action = self.idle_action.value
        elif isinstance(self.idle_action, EnvironmentUpdateIdleActionType2Type1):
            idle_action = self.idle_action.value
        elif isinstance(self.idle_action, EnvironmentUpdateIdleActionType3Type1):
            idle_action = self.idle_action.value
        else:
            idle_action = self.idle_action

        idle_timeout_seconds: int | None | Unset
        if isinstance(self.idle_timeout_seconds, Unset):
            idle_timeout_seconds = UNSET
        else:
            idle_timeout_seconds = self.idle_timeout_seconds

        images: list[str] | None | Unset
        if isinstance(self.images, Unset):
            images = UNSET
        elif isinstance(self.images, list):
            images = self.images


        else:
            images = self.images

        memory_mb: int | None | Unset
        if isinstance(self.memory_mb, Unset):
            memory_mb = UNSET
        else:
            memory_mb = self.memory_mb

        network: bool | None | Unset
        if isinstance(self.network, Unset):
            network = UNSET
        else:
            network = self.network

        outage_grace_period_seconds: float | None | Unset
        if isinstance(self.outage_grace_period_seconds, Unset):
            outage_grace_period_seconds = UNSET
        else:
            outage_grace_period_seconds = self.outage_grace_period_seconds

        pids: int | None | Unset
        if isinstance(self.pids, Unset):
            pids = UNSET
        else:
            pids = self.pids

        pool_idle_seconds: int | None | Unset
        if isinstance(self.pool_idle_seconds, Unset):
            pool_idle_seconds = UNSET
        else:
            pool_idle_seconds = self.pool_idle_seconds

        pool_size: dict[str, Any] | int | list[int] | None | Unset
        if isinstance(self.pool_size, Unset):
            pool_size = UNSET
        elif isinstance(self.pool_size, list):
            pool_size = self.pool_size


        elif isinstance(self.pool_size, EnvironmentUpdatePoolSizeType2):
            pool_size = self.pool_size.to_dict()
        else:
            pool_size = self.pool_size

        session_ttl_seconds: int | None | Unset
        if isinstance(self.session_ttl_seconds, Unset):
            session_ttl_seconds = UNSET
        else:
            session_ttl_seconds = self.session_ttl_seconds


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
        if exec_users is not UNSET:
            field_dict["exec_users"] = exec_users
        if features is not UNSET:
            field_dict["features"] = features
        if housekeeping_interval_seconds is not UNSET:
            field_dict["housekeeping_interval_seconds"] = housekeeping_interval_seconds
        if idle_action is not UNSET:
            field_dict["idle_action"] = idle_action
        if idle_timeout_seconds is not UNSET:
            field_dict["idle_timeout_seconds"] = idle_timeout_seconds
        if images is not UNSET:
            field_dict["images"] = images
        if memory_mb is not UNSET:
            field_dict["memory_mb"] = memory_mb
        if network is not UNSET:
            field_dict["network"] = network
        if outage_grace_period_seconds is not UNSET:
            field_dict["outage_grace_period_seconds"] = outage_grace_period_seconds
        if pids is not UNSET:
            field_dict["pids"] = pids
        if pool_idle_seconds is not UNSET:
            field_dict["pool_idle_seconds"] = pool_idle_seconds
        if pool_size is not UNSET:
            field_dict["pool_size"] = pool_size
        if session_ttl_seconds is not UNSET:
            field_dict["session_ttl_seconds"] = session_ttl_seconds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.environment_update_env_type_0 import EnvironmentUpdateEnvType0 # noqa: PLC0415
        from ..models.environment_update_features_type_0 import EnvironmentUpdateFeaturesType0 # noqa: PLC0415
        from ..models.environment_update_pool_size_type_2 import EnvironmentUpdatePoolSizeType2 # noqa: PLC0415
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


        def _parse_env(data: object) -> EnvironmentUpdateEnvType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                env_type_0 = EnvironmentUpdateEnvType0.from_dict(data)



                return env_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EnvironmentUpdateEnvType0 | None | Unset, data)

        env = _parse_env(d.pop("env", UNSET))


        def _parse_exec_users(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                exec_users_type_0 = cast(list[str], data)

                return exec_users_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        exec_users = _parse_exec_users(d.pop("exec_users", UNSET))


        def _parse_features(data: object) -> EnvironmentUpdateFeaturesType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                features_type_0 = EnvironmentUpdateFeaturesType0.from_dict(data)



                return features_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EnvironmentUpdateFeaturesType0 | None | Unset, data)

        features = _parse_features(d.pop("features", UNSET))


        def _parse_housekeeping_interval_seconds(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        housekeeping_interval_seconds = _parse_housekeeping_interval_seconds(d.pop("housekeeping_interval_seconds", UNSET))


        def _parse_idle_action(data: object) -> EnvironmentUpdateIdleActionType1 | EnvironmentUpdateIdleActionType2Type1 | EnvironmentUpdateIdleActionType3Type1 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                idle_action_type_1 = EnvironmentUpdateIdleActionType1(data)



                return idle_action_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                idle_action_type_2_type_1 = EnvironmentUpdateIdleActionType2Type1(data)



                return idle_action_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                idle_action_type_3_type_1 = EnvironmentUpdateIdleActionType3Type1(data)



                return idle_action_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EnvironmentUpdateIdleActionType1 | EnvironmentUpdateIdleActionType2Type1 | EnvironmentUpdateIdleActionType3Type1 | None | Unset, data)

        idle_action = _parse_idle_action(d.pop("idle_action", UNSET))


        def _parse_idle_timeout_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        idle_timeout_seconds = _parse_idle_timeout_seconds(d.pop("idle_timeout_seconds", UNSET))


        def _parse_images(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                images_type_0 = cast(list[str], data)

                return images_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        images = _parse_images(d.pop("images", UNSET))


        def _parse_memory_mb(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        memory_mb = _parse_memory_mb(d.pop("memory_mb", UNSET))


        def _parse_network(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        network = _parse_network(d.pop("network", UNSET))


        def _parse_outage_grace_period_seconds(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        outage_grace_period_seconds = _parse_outage_grace_period_seconds(d.pop("outage_grace_period_seconds", UNSET))


        def _parse_pids(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pids = _parse_pids(d.pop("pids", UNSET))


        def _parse_pool_idle_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pool_idle_seconds = _parse_pool_idle_seconds(d.pop("pool_idle_seconds", UNSET))


        def _parse_pool_size(data: object) -> EnvironmentUpdatePoolSizeType2 | int | list[int] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                pool_size_type_1 = cast(list[int], data)

                return pool_size_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                pool_size_type_2 = EnvironmentUpdatePoolSizeType2.from_dict(data)



                return pool_size_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EnvironmentUpdatePoolSizeType2 | int | list[int] | None | Unset, data)

        pool_size = _parse_pool_size(d.pop("pool_size", UNSET))


        def _parse_session_ttl_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        session_ttl_seconds = _parse_session_ttl_seconds(d.pop("session_ttl_seconds", UNSET))


        environment_update = cls(
            cpus=cpus,
            disk_mb=disk_mb,
            env=env,
            exec_users=exec_users,
            features=features,
            housekeeping_interval_seconds=housekeeping_interval_seconds,
            idle_action=idle_action,
            idle_timeout_seconds=idle_timeout_seconds,
            images=images,
            memory_mb=memory_mb,
            network=network,
            outage_grace_period_seconds=outage_grace_period_seconds,
            pids=pids,
            pool_idle_seconds=pool_idle_seconds,
            pool_size=pool_size,
            session_ttl_seconds=session_ttl_seconds,
        )


        environment_update.additional_properties = d
        return environment_update

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
