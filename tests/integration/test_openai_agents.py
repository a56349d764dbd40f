"""The OpenAI Agents SDK provider (sandlot_client.openai_agents) against a live server on real
Docker: an agent turn with the SDK's offline scripted model writes a file and runs a command in
a Sandlot sandbox; the session state goes through JSON, is resumed by a fresh client, and the
file is read back: after reattaching, after the container was removed (the service hydrates a
replacement), and after the Sandlot session ended (a new one starts from its snapshot)."""

from __future__ import annotations

import io
import json
import secrets
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents import RunConfig, Runner, set_tracing_disabled
from agents.sandbox import SandboxAgent, SandboxRunConfig
from agents.sandbox.errors import (
    InvalidManifestPathError,
    WorkspaceArchiveReadError,
    WorkspaceArchiveWriteError,
    WorkspaceReadNotFoundError,
)
from agents.sandbox.manifest import Manifest
from agents.testing import ScriptedModel, assistant_message, function_call
from openai.types.responses import ResponseCustomToolCall

from sandlot_client import AsyncSandlot
from sandlot_client.openai_agents import (
    SandlotSandboxClient,
    SandlotSandboxClientOptions,
)
from tests.integration.conftest import NewTenant, key_of
from tests.support.agents import inner
from tests.support.docker import remove_container

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.timeout(180)]
set_tracing_disabled(True)  # the SDK's own traces would go to OpenAI; nothing leaves this machine

NOTE = "written by the agent"  # apply_patch writes the lines without a final newline
PATCH = f"*** Begin Patch\n*** Add File: notes/todo.txt\n+{NOTE}\n*** End Patch\n"


def scripted_turn() -> ScriptedModel:
    """Write notes/todo.txt with apply_patch, run a command over it, then answer."""
    return ScriptedModel(
        [
            [
                ResponseCustomToolCall(
                    id="patch-1", call_id="patch-1", name="apply_patch", input=PATCH, type="custom_tool_call"
                )
            ],
            [
                function_call(
                    "exec_command",
                    {"cmd": "wc -w < notes/todo.txt > count.txt && cat notes/todo.txt && python3 -V"},
                    call_id="exec-1",
                )
            ],
            [assistant_message("done")],
        ]
    )


async def read_text(session: Any, path: str) -> str:
    return (await session.read(Path(path))).read().decode()


@pytest.fixture
async def sandlot(live_server: str, new_tenant: NewTenant) -> AsyncIterator[AsyncSandlot]:
    async with AsyncSandlot(live_server, key_of(await new_tenant())) as client:
        yield client


async def agent_turn(sandlot: AsyncSandlot) -> tuple[dict[str, object], str]:
    """Run the scripted turn in a new session; close it; return its state (through JSON) and
    what the command printed to the model."""
    env = f"agents-{secrets.token_hex(3)}"
    await sandlot.create_environment(env, ["sandlot/python:3"], pool_size=[1, 2])
    client = SandlotSandboxClient(sandlot=sandlot)
    model = scripted_turn()
    agent = SandboxAgent(name="writer", instructions="Keep notes.", model=model)
    session = await client.create(options=SandlotSandboxClientOptions(environment=env, pause_on_exit=True))
    async with session:
        result = await Runner.run(
            agent,
            "write the note, then count it",
            run_config=RunConfig(sandbox=SandboxRunConfig(session=session)),
        )
        assert result.final_output == "done"
        model.assert_complete()
        state = json.loads(json.dumps(client.serialize_session_state(session.state)))
    tool_output = json.dumps(model.calls[2].input)
    assert inner(session).remote.status == "suspended"  # closing paused it: nothing lost
    return state, tool_output


async def test_sessions_left_without_delete_end_on_exit_and_never_pin_their_pool(
    sandlot: AsyncSandlot,
) -> None:
    """#28.4: leaving ``async with session:`` suspended the Sandlot session, whose frozen sandbox
    stayed out of its pool: four sessions left so pinned a [1, 4] pool and the fifth start failed
    after ~20 s of retries. Closing ends it by default (``pause_on_exit`` to suspend), as the
    SDK's E2B provider does: eight used and left without ``delete``, the ninth starts."""
    env = f"agents-{secrets.token_hex(3)}"
    await sandlot.create_environment(env, ["sandlot/busybox:latest"], pool_size=[1, 4])
    client = SandlotSandboxClient(sandlot=sandlot)
    for _ in range(8):
        session = await client.create(options=SandlotSandboxClientOptions(environment=env))
        async with session:
            assert (await session.exec("echo", "hi", shell=False)).stdout == b"hi\n"
        assert inner(session).remote.status == "ended"
    ninth = await client.create(options=SandlotSandboxClientOptions(environment=env))
    async with ninth:
        assert await ninth.running()


async def test_a_session_whose_start_failed_is_ended_at_once(sandlot: AsyncSandlot) -> None:
    """#28.4: a failed start (here its workspace root cannot be made) left the Sandlot session
    active until its idle timeout: ``async with`` gives a failed entry no exit."""
    env = f"agents-{secrets.token_hex(3)}"
    await sandlot.create_environment(env, ["sandlot/busybox:latest"], pool_size=0)
    client = SandlotSandboxClient(sandlot=sandlot)
    session = await client.create(
        manifest=Manifest(root="/proc/sandlot-nowhere"), options=SandlotSandboxClientOptions(environment=env)
    )
    with pytest.raises(Exception, match=r"(?i)workspace|root|proc"):
        async with session:
            pass
    await inner(session).remote.refresh()
    assert inner(session).remote.status == "ended"


async def test_an_agent_turn_runs_in_sandlot_and_resumes_by_reattaching(
    sandlot: AsyncSandlot, live_server: str, new_tenant: NewTenant
) -> None:
    state, tool_output = await agent_turn(sandlot)
    assert "written by the agent" in tool_output and "Python 3" in tool_output
    assert state["type"] == "sandlot" and "api_key" not in json.dumps(state)

    # a fresh client (as another process would be) resumes from the JSON alone
    async with AsyncSandlot(live_server, sandlot.api_key) as other:
        client = SandlotSandboxClient(sandlot=other)
        resumed = await client.resume(client.deserialize_session_state(state))
        async with resumed:
            assert inner(resumed).resumed_how == "reattached"
            assert await read_text(resumed, "notes/todo.txt") == NOTE
            assert (await read_text(resumed, "/workspace/count.txt")).strip() == "4"
            result = await resumed.exec("cat notes/todo.txt | tr a-z A-Z")
            assert result.ok() and result.stdout.decode() == NOTE.upper()
        await client.delete(resumed)
        assert inner(resumed).remote.status == "ended"


async def test_resume_hydrates_a_replacement_when_the_container_is_gone(sandlot: AsyncSandlot) -> None:
    state, _ = await agent_turn(sandlot)
    await remove_container(str(state["sandbox_id"]))

    client = SandlotSandboxClient(sandlot=sandlot)
    resumed = await client.resume(client.deserialize_session_state(state))
    async with resumed:
        assert inner(resumed).resumed_how == "hydrated"
        assert inner(resumed).state.sandbox_id != state["sandbox_id"]
        assert await read_text(resumed, "notes/todo.txt") == NOTE
        assert (await resumed.exec("cat", "count.txt", shell=False)).stdout.decode().strip() == "4"
    await client.delete(resumed)


async def test_resume_after_the_session_ended_starts_from_its_snapshot(sandlot: AsyncSandlot) -> None:
    state, _ = await agent_turn(sandlot)
    await sandlot.request("DELETE", f"/v1/sessions/{state['sandlot_session_id']}")

    client = SandlotSandboxClient(sandlot=sandlot)
    resumed = await client.resume(client.deserialize_session_state(state))
    async with resumed:
        assert inner(resumed).resumed_how == "from_snapshot"
        assert inner(resumed).state.sandlot_session_id != state["sandlot_session_id"]
        assert await read_text(resumed, "notes/todo.txt") == NOTE
    await client.delete(resumed)


async def test_persist_and_hydrate_move_the_workspace_as_a_tar(sandlot: AsyncSandlot) -> None:
    env = f"agents-{secrets.token_hex(3)}"
    await sandlot.create_environment(env, ["sandlot/busybox:latest"], pool_size=0)
    client = SandlotSandboxClient(sandlot=sandlot)
    first = await client.create(options=SandlotSandboxClientOptions(environment=env))
    second = await client.create(options=SandlotSandboxClientOptions(environment=env))
    try:
        await first.start()
        await second.start()
        await first.write(Path("src/app.py"), io.BytesIO(b"print('hi')\n"))
        await first.write(Path("skip/cache.bin"), io.BytesIO(b"\x00\xff"))
        first.register_persist_workspace_skip_path("skip")
        archive = await first.persist_workspace()
        with tarfile.open(fileobj=io.BytesIO(archive.read()), mode="r:") as tar:
            names = {m.name.removeprefix("./") for m in tar}
        assert "src/app.py" in names and not any(n.startswith("skip") for n in names)
        archive.seek(0)
        await second.hydrate_workspace(archive)
        assert await read_text(second, "src/app.py") == "print('hi')\n"
        with pytest.raises(WorkspaceReadNotFoundError):
            await second.read(Path("skip/cache.bin"))
        failing = await second.exec("exit 3")
        assert failing.exit_code == 3
        assert await second.running()
    finally:
        for session in (first, second):
            await client.delete(session)
    assert not await first.running()


async def test_a_path_through_a_link_out_of_the_workspace_is_the_sdks_refusal(sandlot: AsyncSandlot) -> None:
    """The SDK's own check is lexical: a link in the workspace that leads out of it is refused
    by the service, and the provider raises it as the SDK's InvalidManifestPathError (as its
    remote providers do), for a read, a write and an apply_patch, and for the SDK's helpers
    that run commands (ls, mkdir, rm, an apply_patch deleting a file), which followed the link
    (the SDK's own test of this, with the link made in the sandbox)."""
    env = f"agents-{secrets.token_hex(3)}"
    await sandlot.create_environment(env, ["sandlot/busybox:latest"], pool_size=0)
    client = SandlotSandboxClient(sandlot=sandlot, options=SandlotSandboxClientOptions(environment=env))
    session = await client.create()  # the client's default options
    try:
        await session.start()
        assert (await session.exec("ln -s /etc out && mkdir -p /tmp/away && ln -s /tmp/away link")).ok()
        assert (await session.exec("echo keep > /tmp/away/kept")).ok()
        with pytest.raises(InvalidManifestPathError):
            await session.read(Path("out/passwd"))
        with pytest.raises(InvalidManifestPathError):
            await session.write(Path("out/planted"), io.BytesIO(b"x"))
        with pytest.raises(InvalidManifestPathError):
            await session.apply_patch({"type": "create_file", "path": "out/planted", "diff": "+x\n"})
        with pytest.raises(InvalidManifestPathError, match="must not escape root"):
            await session.mkdir("link/nested", parents=True)
        with pytest.raises(InvalidManifestPathError, match="must not escape root"):
            await session.ls("link")
        with pytest.raises(InvalidManifestPathError, match="must not escape root"):
            await session.rm("link/kept")
        with pytest.raises(InvalidManifestPathError):
            await session.apply_patch({"type": "delete_file", "path": "link/kept"})
        assert (await session.exec("test ! -e /etc/planted && test ! -e /tmp/away/nested")).ok()
        assert (await session.exec("cat /tmp/away/kept")).stdout == b"keep\n"
    finally:
        await client.delete(session)


async def test_file_refusals_are_the_sdks_archive_errors(sandlot: AsyncSandlot) -> None:
    """A read of a directory and a write over one are the SDK's workspace archive errors, as its
    other providers raise, not Sandlot's own exception types."""
    env = f"agents-{secrets.token_hex(3)}"
    await sandlot.create_environment(env, ["sandlot/busybox:latest"], pool_size=0)
    client = SandlotSandboxClient(sandlot=sandlot)
    with pytest.raises(ValueError, match="options"):
        await client.create()  # no options given, none by default
    session = await client.create(options=SandlotSandboxClientOptions(environment=env))
    try:
        await session.start()
        await session.mkdir("adir")
        with pytest.raises(WorkspaceArchiveReadError):
            await session.read(Path("adir"))
        with pytest.raises(WorkspaceArchiveWriteError):
            await session.write(Path("adir"), io.BytesIO(b"x"))
    finally:
        await client.delete(session)
