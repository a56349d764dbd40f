from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.environment_out import EnvironmentOut
from ...models.environment_update import EnvironmentUpdate
from ...models.problem import Problem
from typing import cast



def _get_kwargs(
    environment: str,
    *,
    body: EnvironmentUpdate,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "patch",
        "url": "/v1/environments/{environment}".format(environment=quote(str(environment), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> EnvironmentOut | Problem | None:
    if response.status_code == 200:
        response_200 = EnvironmentOut.from_dict(response.json())



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

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[EnvironmentOut | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    environment: str,
    *,
    client: AuthenticatedClient | Client,
    body: EnvironmentUpdate,

) -> Response[EnvironmentOut | Problem]:
    """ Change some fields of an environment

    Args:
        environment (str):
        body (EnvironmentUpdate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EnvironmentOut | Problem]
     """


    kwargs = _get_kwargs(
        environment=environment,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    environment: str,
    *,
    client: AuthenticatedClient | Client,
    body: EnvironmentUpdate,

) -> EnvironmentOut | Problem | None:
    """ Change some fields of an environment

    Args:
        environment (str):
        body (EnvironmentUpdate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EnvironmentOut | Problem
     """


    return sync_detailed(
        environment=environment,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    environment: str,
    *,
    client: AuthenticatedClient | Client,
    body: EnvironmentUpdate,

) -> Response[EnvironmentOut | Problem]:
    """ Change some fields of an environment

    Args:
        environment (str):
        body (EnvironmentUpdate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EnvironmentOut | Problem]
     """


    kwargs = _get_kwargs(
        environment=environment,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    environment: str,
    *,
    client: AuthenticatedClient | Client,
    body: EnvironmentUpdate,

) -> EnvironmentOut | Problem | None:
    """ Change some fields of an environment

    Args:
        environment (str):
        body (EnvironmentUpdate):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EnvironmentOut | Problem
     """


    return (await asyncio_detailed(
        environment=environment,
client=client,
body=body,

    )).parsed
