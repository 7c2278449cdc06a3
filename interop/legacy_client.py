"""The legacy Python lane: the official Python SDK (`mcp`, pinned with hashes by
interop/requirements.txt) in its legacy mode, a `ClientSession` over `stdio_client` or
`streamable_http_client` opened with `initialize()` (the 2025 handshake, offering
2025-11-25; `mcp.Client(mode="legacy")` does the same). It drives presa-fixture over one
transport and prints one line per step, in the format of common.mjs:
`interop: ok   legacy-py <transport> <step>` or `interop: FAIL legacy-py ...: <reason>`.

Usage (interop/run does this for each transport, with the venv's python):
    python legacy_client.py --transport http  --url http://127.0.0.1:<port>/mcp [--wire-log FILE]
    python legacy_client.py --transport stdio --command /path/to/presa-fixture [--wire-log FILE]
                                              [--stderr-log FILE]

Exit code 0 when every step is ok, 1 otherwise, 2 on bad arguments. Every step goes through
the SDK's public API, as an application uses it; the only additions are the wire logs (a
tap on the session's message streams, and httpx event hooks for HTTP requests and
responses) that observe traffic without changing it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import ClientSession
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

REVISION = "2025-11-25"  # the SDK's LATEST_HANDSHAKE_VERSION, which initialize() offers
WATCHED = "test://watched-resource"
USER = {"username": "alice", "email": "alice@example.com"}
STEP_TIMEOUT_S = 10.0  # per step; a whole client run takes about a second
NOTIFICATION_WAIT_S = 5.0

# resources/subscribe and logging are deprecated as of 2026-07-28, but belong to the legacy
# revisions this lane speaks; the SDK's warning about them is not news here.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)


class Wire:
    """Timestamped lines appended to the wire log (a no-op without a path)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        if path:
            open(path, "w").close()

    def __call__(self, line: str) -> None:
        if self.path:
            stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
            with open(self.path, "a") as f:
                f.write(f"{stamp} {line}\n")


def _dump(item: Any) -> str:
    message = getattr(item, "message", None)
    if message is not None:
        return message.model_dump_json(by_alias=True, exclude_unset=True)
    return f"(transport exception) {item!r}"


class TapRead:
    """The session's read stream, logging each message it yields."""

    def __init__(self, inner: Any, wire: Wire) -> None:
        self._inner = inner
        self._wire = wire

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> TapRead:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __aiter__(self) -> TapRead:
        return self

    async def __anext__(self) -> Any:
        item = await self._inner.__anext__()
        self._wire(f"<< {_dump(item)}")
        return item


class TapWrite:
    """The session's write stream, logging each message sent."""

    def __init__(self, inner: Any, wire: Wire) -> None:
        self._inner = inner
        self._wire = wire

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> TapWrite:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    async def send(self, item: Any) -> None:
        self._wire(f">> {_dump(item)}")
        await self._inner.send(item)


class Steps:
    """The step lines of one lane on one transport, counted."""

    def __init__(self, transport: str) -> None:
        self.transport = transport
        self.failed = 0
        self.connected = True

    def _line(self, status: str, name: str, tail: str) -> None:
        print(f"interop: {status} {'legacy-py':<9} {self.transport:<5} {name}{tail}", flush=True)

    async def run(self, name: str, fn: Callable[[], Awaitable[str | None]]) -> None:
        if not self.connected:
            self.fail(name, "not run: the connection failed")
            return
        try:
            with anyio.fail_after(STEP_TIMEOUT_S):
                note = await fn()
        except TimeoutError:
            self.fail(name, f"step timed out after {STEP_TIMEOUT_S} s")
        except MCPError as e:
            self.fail(name, f"JSON-RPC error {e.code}: {e.error.message}")
        except Exception as e:  # noqa: BLE001 - any failure is the step's FAIL line
            self.fail(name, f"{type(e).__name__}: {e}")
        else:
            self._line("ok  ", name, f" [{note}]" if note else "")

    def fail(self, name: str, reason: str) -> None:
        self.failed += 1
        self._line("FAIL", name, f": {reason}")


def check(cond: Any, msg: str) -> None:
    if not cond:
        raise AssertionError(msg)


def first_text(result: types.CallToolResult) -> str | None:
    for block in result.content:
        if isinstance(block, types.TextContent):
            return block.text
    return None


class Notifications:
    """Notifications by kind, with a wait for the next one (an event, not polling)."""

    def __init__(self) -> None:
        self.seen: dict[str, list[Any]] = {}
        self._changed = anyio.Event()

    def record(self, kind: str, value: Any) -> None:
        self.seen.setdefault(kind, []).append(value)
        self._changed.set()
        self._changed = anyio.Event()

    def count(self, kind: str) -> int:
        return len(self.seen.get(kind, []))

    async def after(self, kind: str, count: int) -> Any:
        """The first `kind` notification after the first `count`, within the wait."""
        with anyio.fail_after(NOTIFICATION_WAIT_S):
            while self.count(kind) <= count:
                await self._changed.wait()
        return self.seen[kind][count]


async def main() -> int:
    parser = argparse.ArgumentParser(prog="legacy_client.py")
    parser.add_argument("--transport", choices=["http", "stdio"], required=True)
    parser.add_argument("--url")
    parser.add_argument("--command")
    parser.add_argument("--wire-log")
    parser.add_argument("--stderr-log")
    opts = parser.parse_args()
    if opts.transport == "http" and not opts.url:
        parser.error("--transport http needs --url")
    if opts.transport == "stdio" and not opts.command:
        parser.error("--transport stdio needs --command")

    wire = Wire(opts.wire_log)
    steps = Steps(opts.transport)
    notifications = Notifications()
    elicitations: list[types.ElicitRequestParams] = []
    samplings: list[types.CreateMessageRequestParams] = []
    http_responses: list[tuple[str, int]] = []

    # The server's requests to the client: answered at once, as a user or a model would.
    async def on_elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        elicitations.append(params)
        return types.ElicitResult(action="accept", content=dict(USER))

    async def on_sample(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        samplings.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="a sampled answer"),
            model="interop-model",
            stop_reason="endTurn",
        )

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            wire(f"!! transport exception: {message!r}")
        elif isinstance(message, types.ToolListChangedNotification):
            notifications.record("tools/list_changed", message)
        elif isinstance(message, types.ResourceUpdatedNotification):
            notifications.record("resources/updated", message.params)

    async with contextlib.AsyncExitStack() as stack:
        if opts.transport == "http":

            async def on_request(request: httpx2.Request) -> None:
                headers = " | ".join(f"{k}: {v}" for k, v in request.headers.items())
                body = request.content.decode(errors="replace") if request.method == "POST" else ""
                wire(f">> {request.method} {request.url} [{headers}] {body}")

            async def on_response(response: httpx2.Response) -> None:
                headers = " | ".join(f"{k}: {v}" for k, v in response.headers.items())
                wire(f"<< {response.status_code} [{headers}] ({response.request.method})")
                http_responses.append((response.request.method, response.status_code))

            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    timeout=httpx2.Timeout(30.0, read=300.0),
                    event_hooks={"request": [on_request], "response": [on_response]},
                )
            )
            transport = streamable_http_client(opts.url, http_client=http)
        else:
            errlog = stack.enter_context(open(opts.stderr_log, "a")) if opts.stderr_log else sys.stderr
            server = StdioServerParameters(command=opts.command, args=["--transport", "stdio"])
            transport = stdio_client(server, errlog=errlog)

        # The session's context is inside the transport's, so the DELETE the HTTP transport
        # sends on exit is observed below, after the session has closed.
        read, write = await stack.enter_async_context(transport)
        session = await stack.enter_async_context(
            ClientSession(
                TapRead(read, wire),
                TapWrite(write, wire),
                elicitation_callback=on_elicit,
                sampling_callback=on_sample,
                message_handler=on_message,
                client_info=types.Implementation(name="presa-interop-legacy-py", version="1.0.0"),
            )
        )
        await run_steps(steps, session, notifications, elicitations, samplings)

    if opts.transport == "http":
        # streamable_http_client ends its session with DELETE on exit (terminate_on_close).
        deletes = [status for method, status in http_responses if method == "DELETE"]

        async def deleted() -> str | None:
            check(deletes, "no DELETE was sent")
            check(200 <= deletes[-1] < 300, f"DELETE answered {deletes[-1]}")
            return f"{deletes[-1]}"

        await steps.run("DELETE ends the session (on exit)", deleted)
    return 0 if steps.failed == 0 else 1


async def run_steps(
    steps: Steps,
    session: ClientSession,
    notifications: Notifications,
    elicitations: list[types.ElicitRequestParams],
    samplings: list[types.CreateMessageRequestParams],
) -> None:
    async def initialize() -> str | None:
        steps.connected = False
        result = await session.initialize()
        steps.connected = True
        check(result.protocol_version == REVISION, f"negotiated {result.protocol_version}, expected {REVISION}")
        check(session.protocol_version == REVISION, f"session protocol_version {session.protocol_version}")
        caps = result.capabilities
        check(caps.tools and caps.resources and caps.prompts, f"capabilities {caps}")
        check(caps.resources.subscribe is True, f"resources.subscribe is {caps.resources.subscribe}")
        check(result.server_info.name == "presa-conformance", f"serverInfo {result.server_info}")
        return None

    await steps.run("initialize (ClientSession.initialize)", initialize)

    async def list_tools() -> str | None:
        result = await session.list_tools()
        names = [t.name for t in result.tools]
        for n in [
            "test_simple_text",
            "test_tool_with_progress",
            "test_elicitation",
            "test_sampling",
            "test_trigger_tool_change",
            "test_trigger_resource_update",
        ]:
            check(n in names, f"{n} missing from {names}")
        return f"{len(names)} tools"

    await steps.run("tools/list", list_tools)

    async def simple_text() -> str | None:
        r = await session.call_tool("test_simple_text", {})
        check(not r.is_error, f"isError: {r}")
        check(first_text(r) == "This is a simple text response for testing.", f"text {first_text(r)!r}")
        return None

    await steps.run("tools/call test_simple_text", simple_text)

    async def read_static() -> str | None:
        r = await session.read_resource("test://static-text")
        check(len(r.contents) == 1, f"contents {r.contents}")
        text = getattr(r.contents[0], "text", None)
        check(text == "This is a static text resource for testing.", f"text {text!r}")
        return None

    await steps.run("resources/read test://static-text", read_static)

    async def simple_prompt() -> str | None:
        r = await session.get_prompt("test_simple_prompt")
        text = getattr(r.messages[0].content, "text", None) if r.messages else None
        check(text == "This is a simple prompt for testing.", f"text {text!r}")
        return None

    await steps.run("prompts/get test_simple_prompt", simple_prompt)

    async def prompt_with_args() -> str | None:
        r = await session.get_prompt("test_prompt_with_arguments", {"arg1": "first", "arg2": "second"})
        text = getattr(r.messages[0].content, "text", None) if r.messages else None
        check(text == "Prompt with arguments: arg1='first', arg2='second'", f"text {text!r}")
        return None

    await steps.run("prompts/get test_prompt_with_arguments", prompt_with_args)

    async def elicitation() -> str | None:
        before = len(elicitations)
        message = "Please share your details"
        r = await session.call_tool("test_elicitation", {"message": message})
        check(len(elicitations) - before == 1, f"handler answered {len(elicitations) - before} elicitations, expected 1")
        asked = elicitations[before]
        check(isinstance(asked, types.ElicitRequestFormParams), f"not a form elicitation: {asked}")
        check(asked.message == message, f"message {asked.message!r}")
        props = sorted(asked.requested_schema.get("properties", {}))
        check(props == ["email", "username"], f"asked for {props}")
        want = f"User provided: username={USER['username']}, email={USER['email']}"
        check(not r.is_error and first_text(r) == want, f"result {r}")
        return None

    await steps.run("tools/call test_elicitation (elicitation/create answered)", elicitation)

    async def sampling() -> str | None:
        before = len(samplings)
        r = await session.call_tool("test_sampling", {"prompt": "What is 2+2?"})
        check(len(samplings) - before == 1, f"handler answered {len(samplings) - before} sampling requests, expected 1")
        asked = samplings[before]
        text = getattr(asked.messages[0].content, "text", None) if asked.messages else None
        check(text == "What is 2+2?", f"messages {asked.messages}")
        check(not r.is_error and first_text(r) == "LLM response: a sampled answer", f"result {r}")
        return None

    await steps.run("tools/call test_sampling (sampling/createMessage answered)", sampling)

    async def progress() -> str | None:
        seen: list[float] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append(progress)

        r = await session.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        check(not r.is_error, f"isError: {r}")
        check(first_text(r) == "Progress computation completed: 5050", f"text {first_text(r)!r}")
        check(len(seen) >= 3, f"{len(seen)} progress notifications: {seen}")
        check(all(b > a for a, b in zip(seen, seen[1:], strict=False)), f"progress not increasing: {seen}")
        return f"{len(seen)} via the callback: {json.dumps(seen)}"

    await steps.run("tools/call test_tool_with_progress (progress callback)", progress)

    async def subscribe() -> str | None:
        await session.subscribe_resource(WATCHED)
        before = notifications.count("resources/updated")
        r = await session.call_tool("test_trigger_resource_update", {})
        check(not r.is_error, f"test_trigger_resource_update: {r}")
        updated = await notifications.after("resources/updated", before)
        check(str(updated.uri) == WATCHED, f"updated {updated}")
        await session.unsubscribe_resource(WATCHED)
        return None

    await steps.run(f"resources/subscribe {WATCHED}, then notifications/resources/updated", subscribe)

    async def list_changed() -> str | None:
        before = notifications.count("tools/list_changed")
        r = await session.call_tool("test_trigger_tool_change", {})
        check(not r.is_error, f"test_trigger_tool_change: {r}")
        await notifications.after("tools/list_changed", before)
        return None

    await steps.run("tools/call test_trigger_tool_change, then notifications/tools/list_changed", list_changed)


if __name__ == "__main__":
    sys.exit(anyio.run(main))
