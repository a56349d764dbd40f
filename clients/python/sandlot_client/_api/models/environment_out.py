from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.environment_out_idle_action import EnvironmentOutIdleAction
from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.environment_out_env import EnvironmentOutEnv
  from ..models.environment_out_features import EnvironmentOutFeatures
  from ..models.environment_out_pool_size_type_2 import EnvironmentOutPoolSizeType2





T = TypeVar("T", bound="EnvironmentOut")



@_attrs_define
class EnvironmentOut:
    """ 
        Attributes:
            created_at (datetime.datetime):
            id (str):
            images (list[str]):
            name (str):
            tenant_id (str):
            updated_at (datetime.datetime):
            cpus (float | Unset):  Default: 1.0.
            disk_mb (int | None | Unset):
            env (EnvironmentOutEnv | Unset):
            exec_users (list[str] | Unset): Users commands may run as besides the image's (`user` of an exec), among those
                the service allows (`exec_users_allowed`). Empty: the image's user only.
            features (EnvironmentOutFeatures | Unset):
            housekeeping_interval_seconds (float | Unset):  Default: 10.0.
            idle_action (EnvironmentOutIdleAction | Unset):  Default: EnvironmentOutIdleAction.END.
            idle_timeout_seconds (int | None | Unset):  Default: 600.
            memory_mb (int | Unset):  Default: 512.
            network (bool | Unset):  Default: False.
            outage_grace_period_seconds (float | Unset):  Default: 60.0.
            pids (int | Unset):  Default: 256.
            pool_idle_seconds (int | Unset): How long a ready pool sandbox beyond the pool's minimum may wait idle before it
                is shut down, so an idle pool gives back what its busiest moment took (idle members count against the tenant's
                quotas). 0: never (the pool stays up to max). Default: 600.
            pool_size (EnvironmentOutPoolSizeType2 | int | list[int] | Unset):  Default: 0.
            session_ttl_seconds (int | None | Unset):  Default: 3600.
     """

    created_at: datetime.datetime
    id: str
    images: list[str]
    name: str
    tenant_id: str
    updated_at: datetime.datetime
    cpus: float | Unset = 1.0
    disk_mb: int | None | Unset = UNSET
    env: EnvironmentOutEnv | Unset = UNSET
    exec_users: list[str] | Unset = UNSET
    features: EnvironmentOutFeatures | Unset = UNSET
    housekeeping_interval_seconds: float | Unset = 10.0
    idle_action: EnvironmentOutIdleAction | Unset = EnvironmentOutIdleAction.END
    idle_timeout_seconds: int | None | Unset = 600
    memory_mb: int | Unset = 512
    network: bool | Unset = False
    outage_grace_period_seconds: float | Unset = 60.0
    pids: int | Unset = 256
    pool_idle_seconds: int | Unset = 600
    pool_size: EnvironmentOutPoolSizeType2 | int | list[int] | Unset = 0
    session_ttl_seconds: int | None | Unset = 3600
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.environment_out_env import EnvironmentOutEnv # noqa: PLC0415
        from ..models.environment_out_features import EnvironmentOutFeatures # noqa: PLC0415
        from ..models.environment_out_pool_size_type_2 import EnvironmentOutPoolSizeType2 # noqa: PLC0415
        created_at = self.created_at.isoformat()

        id = self.id

        images = self.images



        name = self.name

        tenant_id = self.tenant_id

        updated_at = self.updated_at.isoformat()

        cpus = self.cpus

        disk_mb: int | None | Unset
        if isinstance(self.disk_mb, Unset):
            disk_mb = UNSET
        else:
            disk_mb = self.disk_mb

        env: dict[str, Any] | Unset = UNSET
        if not isinstance(self.env, Unset):
            env = self.env.to_dict()

        exec_users: list[str] | Unset = UNSET
        if not isinstance(self.exec_users, Unset):
            exec_users = self.exec_users



        features: dict[str, Any] | Unset = UNSET
        if not isinstance(self.features, Unset):
            features = self.features.to_dict()

        housekeeping_interval_seconds = self.housekeeping_interval_seconds

        idle_action: str | Unset = UNSET
        if not isinstance(self.idle_action, Unset):
            idle_action = self.idle_action.value


        idle_timeout_seconds: int | None | Unset
        if isinstance(self.idle_timeout_seconds, Unset):
            idle_timeout_seconds = UNSET
        else:
            idle_timeout_seconds = self.idle_timeout_seconds

        memory_mb = self.memory_mb

        network = self.network

        outage_grace_period_seconds = self.outage_grace_period_seconds

        pids = self.pids

        pool_idle_seconds = self.pool_idle_seconds

        pool_size: dict[str, Any] | int | list[int] | Unset
        if isinstance(self.pool_size, Unset):
            pool_size = UNSET
        elif isinstance(self.pool_size, list):
            pool_size = self.pool_size


        elif isinstance(self.pool_size, EnvironmentOutPoolSizeType2):
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
            "created_at": created_at,
            "id": id,
            "images": images,
            "name": name,
            "tenant_id": tenant_id,
            "updated_at": updated_at,
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
        from ..models.environment_out_env import EnvironmentOutEnv # noqa: PLC0415
        from ..models.environment_out_features import EnvironmentOutFeatures # noqa: PLC0415
        from ..models.environment_out_pool_size_type_2 import EnvironmentOutPoolSizeType2 # noqa: PLC0415
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        id = d.pop("id")

        images = cast(list[str], d.pop("images"))


        name = d.pop("name")

        tenant_id = d.pop("tenant_id")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))




        cpus = d.pop("cpus", UNSET)

        def _parse_disk_mb(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        disk_mb = _parse_disk_mb(d.pop("disk_mb", UNSET))


        _env = d.pop("env", UNSET)
        env: EnvironmentOutEnv | Unset
        if isinstance(_env,  Unset):
            env = UNSET
        else:
            env = EnvironmentOutEnv.from_dict(_env)




        exec_users = cast(list[str], d.pop("exec_users", UNSET))


        _features = d.pop("features", UNSET)
        features: EnvironmentOutFeatures | Unset
        if isinstance(_features,  Unset):
            features = UNSET
        else:
            features = EnvironmentOutFeatures.from_dict(_features)




        housekeeping_interval_seconds = d.pop("housekeeping_interval_seconds", UNSET)

        _idle_action = d.pop("idle_action", UNSET)
        idle_action: EnvironmentOutIdleAction | Unset
        if isinstance(_idle_action,  Unset):
            idle_action = UNSET
        else:
            idle_action = EnvironmentOutIdleAction(_idle_action)




        def _parse_idle_timeout_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        idle_timeout_seconds = _parse_idle_timeout_seconds(d.pop("idle_timeout_seconds", UNSET))


        memory_mb = d.pop("memory_mb", UNSET)

        network = d.pop("network", UNSET)

        outage_grace_period_seconds = d.pop("outage_grace_period_seconds", UNSET)

        pids = d.pop("pids", UNSET)

        pool_idle_seconds = d.pop("pool_idle_seconds", UNSET)

        def _parse_pool_size(data: object) -> EnvironmentOutPoolSizeType2 | int | list[int] | Unset:
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
                pool_size_type_2 = EnvironmentOutPoolSizeType2.from_dict(data)



                return pool_size_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EnvironmentOutPoolSizeType2 | int | list[int] | Unset, data)

        pool_size = _parse_pool_size(d.pop("pool_size", UNSET))


        def _parse_session_ttl_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        session_ttl_seconds = _parse_session_ttl_seconds(d.pop("session_ttl_seconds", UNSET))


        environment_out = cls(
            created_at=created_at,
            id=id,
            images=images,
            name=name,
            tenant_id=tenant_id,
            updated_at=updated_at,
            cpus=cpus,
            disk_mb=disk_mb,
            env=env,
            exec_users=exec_users,
            features=features,
            housekeeping_interval_seconds=housekeeping_interval_seconds,
            idle_action=idle_action,
            idle_timeout_seconds=idle_timeout_seconds,
            memory_mb=memory_mb,
            network=network,
            outage_grace_period_seconds=outage_grace_period_seconds,
            pids=pids,
            pool_idle_seconds=pool_idle_seconds,
            pool_size=pool_size,
            session_ttl_seconds=session_ttl_seconds,
        )


        environment_out.additional_properties = d
        return environment_out

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
