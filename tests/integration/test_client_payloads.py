"""Large payloads through the Python client against live servers on real Docker: files and
stdin far beyond a JSON body stream through byte for byte; a payload over the service's limit
is ``PayloadTooLarge`` (it used to reach the client as a lost connection, ``TransportError``,
and the langfun adapter then retired a healthy sandbox); any early answer to a large body
(401, 404) reaches an async client as itself."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import Iterator

import langfun as lf
import pytest

from sandlot_client import (
    AsyncSandlot,
    AsyncSession,
    NotAuthenticated,
    NotFound,
    PayloadTooLarge,
    Sandlot,
    output_bytes,
)
from sandlot_client.langfun_env import SandlotSandbox, SandlotSandboxService
from tests.conftest import INSTANCE
from tests.integration.conftest import NewTenant, key_of
from tests.integration.servers import Server

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.timeout(300)]

IMAGE = "sandlot/busybox:latest"
FILE_LIMIT = 4 << 20


@pytest.fixture(scope="module")
def small_server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live server of the same deployment whose limits are small: 4 MiB files and streamed
    bodies, 64 KiB JSON bodies."""
    data_dir = tmp_path_factory.mktemp("small")
    settings = {
        "SANDLOT_DATABASE_URL": pg_url,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_INSTANCE": INSTANCE,
        "SANDLOT_DATA_DIR": str(data_dir),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        "SANDLOT_RECONCILE_ON_START": "false",
        "SANDLOT_MAX_FILE_BYTES": str(FILE_LIMIT),
        "SANDLOT_MAX_REQUEST_BYTES": str(64 << 10),
    }
    with Server(settings, data_dir / "server.log") as server:
        yield server.url


async def test_a_50_mib_file_and_a_5_mib_stdin_round_trip_byte_for_byte(
    live_server: str, new_tenant: NewTenant
) -> None:
    async with AsyncSandlot(live_server, key_of(await new_tenant())) as client:
        name = f"big-{secrets.token_hex(3)}"
        await client.create_environment(name, [IMAGE], pool_size=0)
        async with client.session(environment=name) as s:
            content = secrets.token_bytes(50 << 20)
            assert (await s.files.write("in/big.bin", content))["size"] == len(content)
            assert await s.files.read("in/big.bin") == content
            summed = await s.shell.exec(["sha256sum", "in/big.bin"])
            assert summed["stdout"].split()[0] == hashlib.sha256(content).hexdigest()
            del content

            stdin = secrets.token_bytes(5 << 20)
            ran = await s.shell.exec(["cat"], stdin=stdin)
            assert ran["exit_code"] == 0 and not ran["truncated"]
            assert output_bytes(ran)[0] == stdin
            counted = await s.shell.exec(["wc", "-c"], stdin=stdin)
            assert counted["stdout"].strip() == str(len(stdin))


async def test_an_oversized_payload_is_payload_too_large_and_the_session_lives_on(
    small_server: str, new_tenant: NewTenant
) -> None:
    key = key_of(await new_tenant())

    def scenario() -> None:
        with Sandlot(small_server, key) as client:
            name = f"over-{secrets.token_hex(3)}"
            client.create_environment(name, [IMAGE], pool_size=0)
            with client.session(environment=name) as s:
                too_big = b"x" * (FILE_LIMIT + (2 << 20))
                with pytest.raises(PayloadTooLarge) as raised:
                    s.files.write("big.bin", too_big)  # streamed, refused at its announced size
                assert raised.value.status == 413
                with pytest.raises(PayloadTooLarge):
                    s.shell.exec(["wc", "-c"], stdin=too_big)
                with pytest.raises(PayloadTooLarge):  # a JSON body over 64 KiB
                    s.shell.exec(["true"], env={"BIG": "y" * (200 << 10)})
                assert s.shell.run("ls -A; echo alive")["stdout"] == "alive\n"

    await asyncio.to_thread(scenario)


async def test_an_early_answer_to_a_large_body_reaches_an_async_client_as_itself(
    small_server: str, new_tenant: NewTenant
) -> None:
    key = key_of(await new_tenant())
    body = secrets.token_bytes(3 << 20)  # within the limit, sent to a session that is not there
    async with AsyncSandlot(small_server, key, max_retries=0) as client:
        with pytest.raises(NotFound):
            await AsyncSession(client, {"id": "ses_0000000000000000"}).files.write("f", body)
    async with AsyncSandlot(small_server, "sl_00000000_not-a-key", max_retries=0) as stranger:
        with pytest.raises(NotAuthenticated):
            await AsyncSession(stranger, {"id": "ses_0000000000000000"}).files.write("f", body)


async def test_langfun_keeps_a_sandbox_that_was_sent_too_much(
    small_server: str, new_tenant: NewTenant
) -> None:
    key = key_of(await new_tenant())

    def scenario() -> None:
        with Sandlot(small_server, key) as admin:
            name = f"lf-{secrets.token_hex(3)}"
            admin.create_environment(name, [IMAGE], pool_size=0)
        service = SandlotSandboxService(
            base_url=small_server, api_key=key, sandlot_environment=name, image_ids=[IMAGE]
        )
        with lf.env.Environment(sandboxes={"sandlot": service}) as env, env.sandbox() as sb:
            assert isinstance(sb, SandlotSandbox)
            sandbox_id = sb.session.sandbox_id
            with pytest.raises(PayloadTooLarge):
                sb.write_file("big.bin", b"x" * (FILE_LIMIT + 1))
            assert not sb.state_errors and sb.status != lf.env.Sandbox.Status.OFFLINE
            assert sb.shell("echo still here")["stdout"] == "still here\n"
            assert sb.session.sandbox_id == sandbox_id

    await asyncio.to_thread(scenario)
