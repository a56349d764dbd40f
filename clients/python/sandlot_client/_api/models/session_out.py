from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.session_out_state import SessionOutState





T = TypeVar("T", bound="SessionOut")



@_attrs_define
class SessionOut:
    """ 
        Attributes:
            created_at (datetime.datetime):
            end_reason (str):
            ended_at (datetime.datetime | None):
            environment_id (str):
            expires_at (datetime.datetime | None):
            id (str):
            image (str):
            last_activity_at (datetime.datetime):
            sandbox_id (None | str):
            state (SessionOutState):
            status (str):
            tenant_id (str):
            client_ref (None | str | Unset): The id the client chose at start (`session_id`); usable in place of `id`.
            warm (bool | None | Unset):
     """

    created_at: datetime.datetime
    end_reason: str
    ended_at: datetime.datetime | None
    environment_id: str
    expires_at: datetime.datetime | None
    id: str
    image: str
    last_activity_at: datetime.datetime
    sandbox_id: None | str
    state: SessionOutState
    status: str
    tenant_id: str
    client_ref: None | str | Unset = UNSET
    warm: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.session_out_state import SessionOutState # noqa: PLC0415
        created_at = self.created_at.isoformat()

        end_reason = self.end_reason

        ended_at: None | str
        if isinstance(self.ended_at, datetime.datetime):
            ended_at = self.ended_at.isoformat()
        else:
            ended_at = self.ended_at

        environment_id = self.environment_id

        expires_at: None | str
        if isinstance(self.expires_at, datetime.datetime):
            expires_at = self.expires_at.isoformat()
        else:
            expires_at = self.expires_at

        id = self.id

        image = self.image

        last_activity_at = self.last_activity_at.isoformat()

        sandbox_id: None | str
        sandbox_id = self.sandbox_id

        state = self.state.to_dict()

        status = self.status

        tenant_id = self.tenant_id

        client_ref: None | str | Unset
        if isinstance(self.client_ref, Unset):
            client_ref = UNSET
        else:
            client_ref = self.client_ref

        warm: bool | None | Unset
        if isinstance(self.warm, Unset):
            warm = UNSET
        else:
            warm = self.warm


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "created_at": created_at,
            "end_reason": end_reason,
            "ended_at": ended_at,
            "environment_id": environment_id,
            "expires_at": expires_at,
            "id": id,
            "image": image,
            "last_activity_at": last_activity_at,
            "sandbox_id": sandbox_id,
            "state": state,
            "status": status,
            "tenant_id": tenant_id,
        })
        if client_ref is not UNSET:
            field_dict["client_ref"] = client_ref
        if warm is not UNSET:
            field_dict["warm"] = warm

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.session_out_state import SessionOutState # noqa: PLC0415
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))




        end_reason = d.pop("end_reason")

        def _parse_ended_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ended_at_type_0 = datetime.datetime.fromisoformat(data)



                return ended_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        ended_at = _parse_ended_at(d.pop("ended_at"))


        environment_id = d.pop("environment_id")

        def _parse_expires_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                expires_at_type_0 = datetime.datetime.fromisoformat(data)



                return expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        expires_at = _parse_expires_at(d.pop("expires_at"))


        id = d.pop("id")

        image = d.pop("image")

        last_activity_at = datetime.datetime.fromisoformat(d.pop("last_activity_at"))




        def _parse_sandbox_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        sandbox_id = _parse_sandbox_id(d.pop("sandbox_id"))


        state = SessionOutState.from_dict(d.pop("state"))




        status = d.pop("status")

        tenant_id = d.pop("tenant_id")

        def _parse_client_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_ref = _parse_client_ref(d.pop("client_ref", UNSET))


        def _parse_warm(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        warm = _parse_warm(d.pop("warm", UNSET))


        session_out = cls(
            created_at=created_at,
            end_reason=end_reason,
            ended_at=ended_at,
            environment_id=environment_id,
            expires_at=expires_at,
            id=id,
            image=image,
            last_activity_at=last_activity_at,
            sandbox_id=sandbox_id,
            state=state,
            status=status,
            tenant_id=tenant_id,
            client_ref=client_ref,
            warm=warm,
        )


        session_out.additional_properties = d
        return session_out

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
