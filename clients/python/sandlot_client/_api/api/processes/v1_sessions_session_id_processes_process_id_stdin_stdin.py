from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.problem import Problem
from ...models.process_input import ProcessInput
from typing import cast



def _get_kwargs(
    session_id: str,
    process_id: str,
    *,
    body: ProcessInput,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sessions/{session_id}/processes/{process_id}/stdin".format(session_id=quote(str(session_id), safe=""),process_id=quote(str(process_id), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | Problem | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())



        return response_404

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())



        return response_409

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())



        return response_413

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())



        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())



        return response_429

    if response.status_code == 502:
        response_502 = Problem.from_dict(response.json())



        return response_502

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())



        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    session_id: str,
    process_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ProcessInput,

) -> Response[Any | Problem]:
    """ Write to the process's stdin

     For a process started with `stdin` or `tty`: `data` (UTF-8, at most 64 KiB encoded) goes to its
    stdin; `eof` then closes it. 409 when the process has no stdin, has ended, its stdin is closed, or
    it left its pipe full for 5 s (part of `data` may have gone in).

    Args:
        session_id (str):
        process_id (str):
        body (ProcessInput):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
     """


    kwargs = _get_kwargs(
        session_id=session_id,
process_id=process_id,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    session_id: str,
    process_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ProcessInput,

) -> Any | Problem | None:
    """ Write to the process's stdin

     For a process started with `stdin` or `tty`: `data` (UTF-8, at most 64 KiB encoded) goes to its
    stdin; `eof` then closes it. 409 when the process has no stdin, has ended, its stdin is closed, or
    it left its pipe full for 5 s (part of `data` may have gone in).

    Args:
        session_id (str):
        process_id (str):
        body (ProcessInput):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
     """


    return sync_detailed(
        session_id=session_id,
process_id=process_id,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    session_id: str,
    process_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ProcessInput,

) -> Response[Any | Problem]:
    """ Write to the process's stdin

     For a process started with `stdin` or `tty`: `data` (UTF-8, at most 64 KiB encoded) goes to its
    stdin; `eof` then closes it. 409 when the process has no stdin, has ended, its stdin is closed, or
    it left its pipe full for 5 s (part of `data` may have gone in).

    Args:
        session_id (str):
        process_id (str):
        body (ProcessInput):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
     """


    kwargs = _get_kwargs(
        session_id=session_id,
process_id=process_id,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    session_id: str,
    process_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ProcessInput,

) -> Any | Problem | None:
    """ Write to the process's stdin

     For a process started with `stdin` or `tty`: `data` (UTF-8, at most 64 KiB encoded) goes to its
    stdin; `eof` then closes it. 409 when the process has no stdin, has ended, its stdin is closed, or
    it left its pipe full for 5 s (part of `data` may have gone in).

    Args:
        session_id (str):
        process_id (str):
        body (ProcessInput):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
     """


    return (await asyncio_detailed(
        session_id=session_id,
process_id=process_id,
client=client,
body=body,

    )).parsed
