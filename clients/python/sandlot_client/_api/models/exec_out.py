from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.exec_out_encoding import ExecOutEncoding
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ExecOut")



@_attrs_define
class ExecOut:
    """ 
        Attributes:
            duration_ms (float):
            encoding (ExecOutEncoding):
            exit_code (int | None):
            oom_killed (bool): The command failed and the sandbox's memory limit killed a process since the last look.
            stderr (str):
            stdout (str):
            timed_out (bool): Killed (with everything it started) at its timeout.
            truncated (bool):
            pids_limited (bool | Unset): The command failed and a fork in the sandbox was refused at its process limit
                (`pids`) since the last look: a fork bomb or too many processes. Default: False.
     """

    duration_ms: float
    encoding: ExecOutEncoding
    exit_code: int | None
    oom_killed: bool
    stderr: str
    stdout: str
    timed_out: bool
    truncated: bool
    pids_limited: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        duration_ms = self.duration_ms

        encoding = self.encoding.value

        exit_code: int | None
        exit_code = self.exit_code

        oom_killed = self.oom_killed

        stderr = self.stderr

        stdout = self.stdout

        timed_out = self.timed_out

        truncated = self.truncated

        pids_limited = self.pids_limited


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "duration_ms": duration_ms,
            "encoding": encoding,
            "exit_code": exit_code,
            "oom_killed": oom_killed,
            "stderr": stderr,
            "stdout": stdout,
            "timed_out": timed_out,
            "truncated": truncated,
        })
        if pids_limited is not UNSET:
            field_dict["pids_limited"] = pids_limited

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        duration_ms = d.pop("duration_ms")

        encoding = ExecOutEncoding(d.pop("encoding"))




        def _parse_exit_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        exit_code = _parse_exit_code(d.pop("exit_code"))


        oom_killed = d.pop("oom_killed")

        stderr = d.pop("stderr")

        stdout = d.pop("stdout")

        timed_out = d.pop("timed_out")

        truncated = d.pop("truncated")

        pids_limited = d.pop("pids_limited", UNSET)

        exec_out = cls(
            duration_ms=duration_ms,
            encoding=encoding,
            exit_code=exit_code,
            oom_killed=oom_killed,
            stderr=stderr,
            stdout=stdout,
            timed_out=timed_out,
            truncated=truncated,
            pids_limited=pids_limited,
        )


        exec_out.additional_properties = d
        return exec_out

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
