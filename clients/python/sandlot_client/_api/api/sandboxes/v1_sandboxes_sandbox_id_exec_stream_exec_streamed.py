from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.exec_out import ExecOut
from ...models.problem import Problem
from typing import cast



def _get_kwargs(
    sandbox_id: str,
    *,
    args_bytes: int,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["args_bytes"] = args_bytes


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sandboxes/{sandbox_id}/exec/stream".format(sandbox_id=quote(str(sandbox_id), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ExecOut | Problem | None:
    if response.status_code == 200:
        response_200 = ExecOut.from_dict(response.json())



        return response_200

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

    if response.status_code == 507:
        response_507 = Problem.from_dict(response.json())



        return response_507

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ExecOut | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    args_bytes: int,

) -> Response[ExecOut | Problem]:
    """ Run a command with its stdin streamed: the body is ExecIn as JSON (?args_bytes= long, without
    stdin), then the raw stdin

    Args:
        sandbox_id (str):
        args_bytes (int): How many bytes at the start of the body are the JSON arguments; the rest
            is the streamed argument (stdin, a file's content).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ExecOut | Problem]
     """


    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
args_bytes=args_bytes,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    args_bytes: int,

) -> ExecOut | Problem | None:
    """ Run a command with its stdin streamed: the body is ExecIn as JSON (?args_bytes= long, without
    stdin), then the raw stdin

    Args:
        sandbox_id (str):
        args_bytes (int): How many bytes at the start of the body are the JSON arguments; the rest
            is the streamed argument (stdin, a file's content).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ExecOut | Problem
     """


    return sync_detailed(
        sandbox_id=sandbox_id,
client=client,
args_bytes=args_bytes,

    ).parsed

async def asyncio_detailed(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    args_bytes: int,

) -> Response[ExecOut | Problem]:
    """ Run a command with its stdin streamed: the body is ExecIn as JSON (?args_bytes= long, without
    stdin), then the raw stdin

    Args:
        sandbox_id (str):
        args_bytes (int): How many bytes at the start of the body are the JSON arguments; the rest
            is the streamed argument (stdin, a file's content).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ExecOut | Problem]
     """


    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
args_bytes=args_bytes,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    args_bytes: int,

) -> ExecOut | Problem | None:
    """ Run a command with its stdin streamed: the body is ExecIn as JSON (?args_bytes= long, without
    stdin), then the raw stdin

    Args:
        sandbox_id (str):
        args_bytes (int): How many bytes at the start of the body are the JSON arguments; the rest
            is the streamed argument (stdin, a file's content).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ExecOut | Problem
     """


    return (await asyncio_detailed(
        sandbox_id=sandbox_id,
client=client,
args_bytes=args_bytes,

    )).parsed
