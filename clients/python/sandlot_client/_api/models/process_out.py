from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="ProcessOut")



@_attrs_define
class ProcessOut:
    """ 
        Attributes:
            command (str):
            cpu_seconds (float | None):
            ended_at (datetime.datetime | None):
            exit_code (int | None):
            id (str):
            output_bytes (int):
            peak_memory_kb (int | None):
            pid (int | None):
            sandbox_id (str):
            session_id (str):
            started_at (datetime.datetime):
            status (str):
            duration_seconds (float | None | Unset):
     """

    command: str
    cpu_seconds: float | None
    ended_at: datetime.datetime | None
    exit_code: int | None
    id: str
    output_bytes: int
    peak_memory_kb: int | None
    pid: int | None
    sandbox_id: str
    session_id: str
    started_at: datetime.datetime
    status: str
    duration_seconds: float | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        command = self.command

        cpu_seconds: float | None
        cpu_seconds = self.cpu_seconds

        ended_at: None | str
        if isinstance(self.ended_at, datetime.datetime):
            ended_at = self.ended_at.isoformat()
        else:
            ended_at = self.ended_at

        exit_code: int | None
        exit_code = self.exit_code

        id = self.id

        output_bytes = self.output_bytes

        peak_memory_kb: int | None
        peak_memory_kb = self.peak_memory_kb

        pid: int | None
        pid = self.pid

        sandbox_id = self.sandbox_id

        session_id = self.session_id

        started_at = self.started_at.isoformat()

        status = self.status

        duration_seconds: float | None | Unset
        if isinstance(self.duration_seconds, Unset):
            duration_seconds = UNSET
        else:
            duration_seconds = self.duration_seconds


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "command": command,
            "cpu_seconds": cpu_seconds,
            "ended_at": ended_at,
            "exit_code": exit_code,
            "id": id,
            "output_bytes": output_bytes,
            "peak_memory_kb": peak_memory_kb,
            "pid": pid,
            "sandbox_id": sandbox_id,
            "session_id": session_id,
            "started_at": started_at,
            "status": status,
        })
        if duration_seconds is not UNSET:
            field_dict["duration_seconds"] = duration_seconds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        command = d.pop("command")

        def _parse_cpu_seconds(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        cpu_seconds = _parse_cpu_seconds(d.pop("cpu_seconds"))


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


        def _parse_exit_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        exit_code = _parse_exit_code(d.pop("exit_code"))


        id = d.pop("id")

        output_bytes = d.pop("output_bytes")

        def _parse_peak_memory_kb(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        peak_memory_kb = _parse_peak_memory_kb(d.pop("peak_memory_kb"))


        def _parse_pid(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        pid = _parse_pid(d.pop("pid"))


        sandbox_id = d.pop("sandbox_id")

        session_id = d.pop("session_id")

        started_at = datetime.datetime.fromisoformat(d.pop("started_at"))




        status = d.pop("status")

        def _parse_duration_seconds(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        duration_seconds = _parse_duration_seconds(d.pop("duration_seconds", UNSET))


        process_out = cls(
            command=command,
            cpu_seconds=cpu_seconds,
            ended_at=ended_at,
            exit_code=exit_code,
            id=id,
            output_bytes=output_bytes,
            peak_memory_kb=peak_memory_kb,
            pid=pid,
            sandbox_id=sandbox_id,
            session_id=session_id,
            started_at=started_at,
            status=status,
            duration_seconds=duration_seconds,
        )


        process_out.additional_properties = d
        return process_out

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
