"""The Agents SDK's interactive exec through the Sandlot provider, against a live server on real
Docker, driven by the SDK's offline scripted model: a 30-second command started with
``exec_command`` keeps running past its yield, is polled and written to with ``write_stdin``
(on a terminal), and ends with its exit code, while the connection carrying its output is cut
once in the middle (a proxy drops it mid-frame): the model sees every byte exactly once. Without
a tty the command has no stdin, a ``tty=True`` command on an image without a terminal program
gets a stdin pipe, and closing the session kills what still runs."""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import pytest
from agents import RunConfig, Runner, set_tracing_disabled
from agents.sandbox import SandboxAgent, SandboxRunConfig
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.testing.model import ModelStepResult

from sandlot_client import AsyncSandlot
from sandlot_client.openai_agents import SandlotSandboxClient, SandlotSandboxClientOptions
from tests.integration.conftest import NewTenant, key_of
from tests.support.agents import inner

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.timeout(240)]
set_tracing_disabled(True)

#: 15 ticks a second apart, a question, 15 more ticks: over 30 seconds, exit 3.
TICKS = (
    "for i in $(seq 1 15); do echo tick $i; sleep 1; done; printf 'name? '; read name; "
    'echo "hello $name"; for i in $(seq 16 30); do echo tick $i; sleep 1; done; exit 3'
)
EXPECTED = (
    "".join(f"tick {i}\r\n" for i in range(1, 16))
    + "name? world\r\nhello world\r\n"
    + "".join(f"tick {i}\r\n" for i in range(16, 31))
)


class CuttingProxy:
    """A TCP proxy to the server that cuts the first output stream (a WebSocket to
    ``.../stream?offset=``) once ``cut_after`` bytes of its frames went through, in the middle of
    whatever it was relaying, as a network failure would."""

    def __init__(self, port: int, cut_after: int) -> None:
        self.port = port
        self.cut_after = cut_after
        self.cuts = 0
        self.streams = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> CuttingProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        server_r, server_w = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            head = await client_r.read(1 << 16)  # a client sends its request head in one write
            is_stream = b"/stream?offset=" in head.split(b"\r\n", 1)[0]
            self.streams += is_stream
            server_w.write(head)
            cut = is_stream and self.cuts == 0
            both = [
                asyncio.create_task(_copy(client_r, server_w)),
                asyncio.create_task(self._down(server_r, client_w, cut)),
            ]
            try:  # a side that closes closes the other (a closing handshake waits for it)
                await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in both:
                    t.cancel()
                await asyncio.gather(*both, return_exceptions=True)
        finally:
            for w in (client_w, server_w):
                w.transport.abort()
            self._tasks.discard(task)

    async def _down(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, cut: bool) -> None:
        seen = b""  # the handshake answer, until its end
        frames = 0  # bytes relayed after it
        while data := await src.read(1 << 16):
            if cut and b"\r\n\r\n" not in seen:
                seen += data
                if b"\r\n\r\n" in seen:
                    frames = len(seen) - seen.index(b"\r\n\r\n") - 4
                dst.write(data)
            elif cut and frames + len(data) >= self.cut_after and self.cuts == 0:
                dst.write(data[: self.cut_after - frames])
                await dst.drain()
                self.cuts += 1
                dst.transport.abort()
                return
            else:
                frames += len(data)
                dst.write(data)
            await dst.drain()


async def _copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    while data := await src.read(1 << 16):
        dst.write(data)
        await dst.drain()


def tool_outputs(call: ModelCall) -> list[str]:
    return [
        str(item["output"])
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def printed(output: str) -> str:
    """What the command printed, in one ``exec_command`` or ``write_stdin`` answer."""
    return output.split("\nOutput:\n", 1)[1]


def process_id(output: str) -> int | None:
    found = re.search(r"Process running with session ID (\d+)", output)
    return int(found.group(1)) if found else None


Decide = Callable[[list[str]], Sequence[Any] | None]


def operator(decide: Decide, turns: int = 40) -> ScriptedModel:
    """The SDK's scripted model, each step decided from the tool outputs so far (process ids
    and timing are only known then); ``decide`` answering None ends the turn with "done"."""

    def respond(call: ModelCall) -> ModelStepResult:
        outputs = tool_outputs(call)
        items = decide(outputs)
        if items is None:
            return [assistant_message("done")]
        return [function_call(name, args, call_id=f"call-{len(outputs)}") for name, args in items]

    return ScriptedModel([ModelStep.respond(respond) for _ in range(turns)])


def answer_then_wait(outputs: list[str]) -> Sequence[Any] | None:
    """Start TICKS on a terminal; poll until it asks, answer "world", poll until it exits."""
    if not outputs:
        return [("exec_command", {"cmd": TICKS, "tty": True, "yield_time_ms": 5000})]
    if "Process exited with code" in outputs[-1]:
        return None
    pid = process_id(outputs[-1])
    so_far = "".join(printed(o) for o in outputs)
    if "name? " in so_far and "world" not in so_far:
        return [("write_stdin", {"session_id": pid, "chars": "world\n", "yield_time_ms": 1000})]
    return [("write_stdin", {"session_id": pid, "chars": "", "yield_time_ms": 10_000})]


@pytest.fixture
async def sandlot(live_server: str, new_tenant: NewTenant) -> AsyncIterator[AsyncSandlot]:
    async with AsyncSandlot(live_server, key_of(await new_tenant())) as client:
        yield client


async def run_turn(sandlot: AsyncSandlot, image: str, model: ScriptedModel, via: str | None = None) -> Any:
    """Run one agent turn on a new session of ``image`` (through the server at ``via`` when
    given); the SDK session, closed."""
    env = f"pty-{secrets.token_hex(3)}"
    await sandlot.create_environment(env, [image], pool_size=0)
    async with contextlib.AsyncExitStack() as stack:
        own = sandlot if via is None else await stack.enter_async_context(AsyncSandlot(via, sandlot.api_key))
        client = SandlotSandboxClient(sandlot=own)
        # paused on exit, not ended: a test looks at what closing it did to its processes
        options = SandlotSandboxClientOptions(environment=env, pause_on_exit=True)
        session = await client.create(options=options)
        agent = SandboxAgent(name="operator", instructions="Run it.", model=model)
        async with session:
            result = await Runner.run(
                agent, "run it", run_config=RunConfig(sandbox=SandboxRunConfig(session=session)), max_turns=40
            )
        assert result.final_output == "done"
    return session


async def test_a_30_second_command_is_polled_answered_and_resumed_exactly(
    sandlot: AsyncSandlot, live_server: str
) -> None:
    model = operator(answer_then_wait)
    port = int(live_server.rsplit(":", 1)[1])
    async with CuttingProxy(port, cut_after=12) as proxy:
        await run_turn(sandlot, "sandlot/python:3", model, via=proxy.url)
    outputs = tool_outputs(model.calls[-1])
    assert proxy.cuts == 1  # the first output stream was cut in the middle of a frame...
    assert "".join(printed(o) for o in outputs) == EXPECTED  # ...and nothing was lost or repeated
    assert process_id(outputs[0]) is not None  # still running after its first yield
    assert sum("write_stdin" in str(c.input) for c in model.calls) >= 2  # polled, and answered
    assert "Process exited with code 3" in outputs[-1] and printed(outputs[-1]).endswith("tick 30\r\n")


def no_stdin_then_a_pipe(outputs: list[str]) -> Sequence[Any] | None:
    """Leave a sleeper running, try its stdin; then a tty=True reader on busybox."""
    steps: list[Any] = [
        ("exec_command", {"cmd": "echo start; sleep 600", "yield_time_ms": 1000}),
        ("write_stdin", {"session_id": process_id(outputs[0]) if outputs else 0, "chars": "x"}),
        ("exec_command", {"cmd": 'read x; echo "got $x"', "tty": True, "yield_time_ms": 1000}),
    ]
    if len(outputs) < len(steps):
        return [steps[len(outputs)]]
    if len(outputs) == len(steps):
        pid = process_id(outputs[-1])
        return [("write_stdin", {"session_id": pid, "chars": "hi\n", "yield_time_ms": 5000})]
    return None


async def test_without_a_tty_there_is_no_stdin_and_closing_the_session_kills_what_runs(
    sandlot: AsyncSandlot,
) -> None:
    model = operator(no_stdin_then_a_pipe)
    session = await run_turn(sandlot, "sandlot/busybox:latest", model)
    sleeper, refused, reader, answered = tool_outputs(model.calls[-1])
    assert printed(sleeper) == "start\n" and process_id(sleeper) is not None
    assert "stdin is not available for this process" in refused
    assert "cannot open a terminal" in printed(reader) and process_id(reader) is not None
    assert printed(answered) == "got hi\n" and "Process exited with code 0" in answered

    # closing the session killed the sleeper; reattach to see it
    remote = await sandlot.resume({"session_id": inner(session).remote.id})
    try:
        statuses = sorted(p["status"] for p in await remote.processes.list())
        assert statuses == ["exited", "killed"]
    finally:
        await remote.end()
