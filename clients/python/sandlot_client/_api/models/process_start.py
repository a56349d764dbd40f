from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.process_start_env import ProcessStartEnv





T = TypeVar("T", bound="ProcessStart")



@_attrs_define
class ProcessStart:
    """ 
        Attributes:
            command (str):
            cwd (None | str | Unset):
            env (ProcessStartEnv | Unset):
            stdin (bool | Unset): Give the command a stdin that `POST .../stdin` writes to (otherwise it reads /dev/null).
                Default: False.
            tty (bool | Unset): Run the command on a terminal (80x24, TERM=xterm) fed by that stdin: echo, ^C and `isatty`
                as in a shell. Needs util-linux `script` in the image (422 otherwise). Default: False.
     """

    command: str
    cwd: None | str | Unset = UNSET
    env: ProcessStartEnv | Unset = UNSET
    stdin: bool | Unset = False
    tty: bool | Unset = False
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.process_start_env import ProcessStartEnv # noqa: PLC0415
        command = self.command

        cwd: None | str | Unset
        if isinstance(self.cwd, Unset):
            cwd = UNSET
        else:
            cwd = self.cwd

        env: dict[str, Any] | Unset = UNSET
        if not isinstance(self.env, Unset):
            env = self.env.to_dict()

        stdin = self.stdin

        tty = self.tty


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "command": command,
        })
        if cwd is not UNSET:
            field_dict["cwd"] = cwd
        if env is not UNSET:
            field_dict["env"] = env
        if stdin is not UNSET:
            field_dict["stdin"] = stdin
        if tty is not UNSET:
            field_dict["tty"] = tty

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.process_start_env import ProcessStartEnv # noqa: PLC0415
        d = dict(src_dict)
        command = d.pop("command")

        def _parse_cwd(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        cwd = _parse_cwd(d.pop("cwd", UNSET))


        _env = d.pop("env", UNSET)
        env: ProcessStartEnv | Unset
        if isinstance(_env,  Unset):
            env = UNSET
        else:
            env = ProcessStartEnv.from_dict(_env)




        stdin = d.pop("stdin", UNSET)

        tty = d.pop("tty", UNSET)

        process_start = cls(
            command=command,
            cwd=cwd,
            env=env,
            stdin=stdin,
            tty=tty,
        )


        process_start.additional_properties = d
        return process_start

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
