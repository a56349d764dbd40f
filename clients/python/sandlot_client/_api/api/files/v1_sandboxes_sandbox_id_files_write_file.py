from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.file_written import FileWritten
from ...models.problem import Problem
from typing import cast



def _get_kwargs(
    sandbox_id: str,
    *,
    path: str,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["path"] = path


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/sandboxes/{sandbox_id}/files".format(sandbox_id=quote(str(sandbox_id), safe=""),),
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> FileWritten | Problem | None:
    if response.status_code == 200:
        response_200 = FileWritten.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[FileWritten | Problem]:
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
    path: str,

) -> Response[FileWritten | Problem]:
    """ Write a file (raw body) at ?path= in the workspace

    Args:
        sandbox_id (str):
        path (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[FileWritten | Problem]
     """


    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
path=path,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    path: str,

) -> FileWritten | Problem | None:
    """ Write a file (raw body) at ?path= in the workspace

    Args:
        sandbox_id (str):
        path (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        FileWritten | Problem
     """


    return sync_detailed(
        sandbox_id=sandbox_id,
client=client,
path=path,

    ).parsed

async def asyncio_detailed(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    path: str,

) -> Response[FileWritten | Problem]:
    """ Write a file (raw body) at ?path= in the workspace

    Args:
        sandbox_id (str):
        path (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[FileWritten | Problem]
     """


    kwargs = _get_kwargs(
        sandbox_id=sandbox_id,
path=path,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    sandbox_id: str,
    *,
    client: AuthenticatedClient | Client,
    path: str,

) -> FileWritten | Problem | None:
    """ Write a file (raw body) at ?path= in the workspace

    Args:
        sandbox_id (str):
        path (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        FileWritten | Problem
     """


    return (await asyncio_detailed(
        sandbox_id=sandbox_id,
client=client,
path=path,

    )).parsed
