from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.v1_sessions_session_id_features_activity_call_body import V1SessionsSessionIdFeaturesActivityCallBody
from typing import cast



def _get_kwargs(
    session_id: str,
    feature: str,
    activity: str,
    *,
    body: V1SessionsSessionIdFeaturesActivityCallBody,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/sessions/{session_id}/features/{feature}/{activity}".format(session_id=quote(str(session_id), safe=""),feature=quote(str(feature), safe=""),activity=quote(str(activity), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Any | None:
    if response.status_code == 200:
        return None

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[Any]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    session_id: str,
    feature: str,
    activity: str,
    *,
    client: AuthenticatedClient | Client,
    body: V1SessionsSessionIdFeaturesActivityCallBody,

) -> Response[Any]:
    """ Call a feature activity with JSON arguments

    Args:
        session_id (str):
        feature (str):
        activity (str):
        body (V1SessionsSessionIdFeaturesActivityCallBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any]
     """


    kwargs = _get_kwargs(
        session_id=session_id,
feature=feature,
activity=activity,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


async def asyncio_detailed(
    session_id: str,
    feature: str,
    activity: str,
    *,
    client: AuthenticatedClient | Client,
    body: V1SessionsSessionIdFeaturesActivityCallBody,

) -> Response[Any]:
    """ Call a feature activity with JSON arguments

    Args:
        session_id (str):
        feature (str):
        activity (str):
        body (V1SessionsSessionIdFeaturesActivityCallBody):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any]
     """


    kwargs = _get_kwargs(
        session_id=session_id,
feature=feature,
activity=activity,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

