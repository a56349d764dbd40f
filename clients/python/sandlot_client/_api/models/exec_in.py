from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.exec_in_stdin_encoding import ExecInStdinEncoding
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.exec_in_env import ExecInEnv





T = TypeVar("T", bound="ExecIn")



@_attrs_define
class ExecIn:
    """ 
        Attributes:
            command (list[str] | str):
            cwd (None | str | Unset):
            env (ExecInEnv | Unset):
            stdin (None | str | Unset):
            stdin_encoding (ExecInStdinEncoding | Unset):  Default: ExecInStdinEncoding.UTF_8.
            timeout (float | Unset):  Default: 60.0.
            user (None | str | Unset): Run as this user instead of the image's; the sandbox's environment (`exec_users`) and
                the service (`exec_users_allowed`) must both allow it (403 otherwise). No capability comes with it, and the
                sandbox is never reused by another session afterwards.
     """

    command: list[str] | str
    cwd: None | str | Unset = UNSET
    env: ExecInEnv | Unset = UNSET
    stdin: None | str | Unset = UNSET
    stdin_encoding: ExecInStdinEncoding | Unset = ExecInStdinEncoding.UTF_8
    timeout: float | Unset = 60.0
    user: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.exec_in_env import ExecInEnv # noqa: PLC0415
        command: list[str] | str
        if isinstance(self.command, list):
            command = self.command


        else:
            command = self.command

        cwd: None | str | Unset
        if isinstance(self.cwd, Unset):
            cwd = UNSET
        else:
            cwd = self.cwd

        env: dict[str, Any] | Unset = UNSET
        if not isinstance(self.env, Unset):
            env = self.env.to_dict()

        stdin: None | str | Unset
        if isinstance(self.stdin, Unset):
            stdin = UNSET
        else:
            stdin = self.stdin

        stdin_encoding: str | Unset = UNSET
        if not isinstance(self.stdin_encoding, Unset):
            stdin_encoding = self.stdin_encoding.value


        timeout = self.timeout

        user: None | str | Unset
        if isinstance(self.user, Unset):
            user = UNSET
        else:
            user = self.user


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
        if stdin_encoding is not UNSET:
            field_dict["stdin_encoding"] = stdin_encoding
        if timeout is not UNSET:
            field_dict["timeout"] = timeout
        if user is not UNSET:
            field_dict["user"] = user

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.exec_in_env import ExecInEnv # noqa: PLC0415
        d = dict(src_dict)
        def _parse_command(data: object) -> list[str] | str:
            try:
                if not isinstance(data, list):
                    raise TypeError()
                command_type_1 = cast(list[str], data)

                return command_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | str, data)

        command = _parse_command(d.pop("command"))


        def _parse_cwd(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        cwd = _parse_cwd(d.pop("cwd", UNSET))


        _env = d.pop("env", UNSET)
        env: ExecInEnv | Unset
        if isinstance(_env,  Unset):
            env = UNSET
        else:
            env = ExecInEnv.from_dict(_env)




        def _parse_stdin(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stdin = _parse_stdin(d.pop("stdin", UNSET))


        _stdin_encoding = d.pop("stdin_encoding", UNSET)
        stdin_encoding: ExecInStdinEncoding | Unset
        if isinstance(_stdin_encoding,  Unset):
            stdin_encoding = UNSET
        else:
            stdin_encoding = ExecInStdinEncoding(_stdin_encoding)




        timeout = d.pop("timeout", UNSET)

        def _parse_user(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        user = _parse_user(d.pop("user", UNSET))


        exec_in = cls(
            command=command,
            cwd=cwd,
            env=env,
            stdin=stdin,
            stdin_encoding=stdin_encoding,
            timeout=timeout,
            user=user,
        )


        exec_in.additional_properties = d
        return exec_in

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
