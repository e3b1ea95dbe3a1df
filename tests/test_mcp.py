"""``agentcli mcp`` (issue 29): the two guarded tools for any MCP client.

Everything is real. What a session does (tool results, scopes, findings, drafts, session logs,
bad arguments, tickets resumed) is asked by the ``mcp`` SDK's own ``ClientSession`` of agentcli's
own server in this process, over the SDK's in-memory streams (``in_memory``: the App, ticket and
session ``agentcli mcp`` builds, served by ``serve_on`` as the stdio transport serves them).
What only a process shows (the stdio wire, malformed lines, closed streams, a client that leaves,
signals, exit codes, the missing extra) is the installed console script in its own process,
spoken to over real pipes by the SDK's ``stdio_client`` or line by line (``Raw``). The demo
SQLite database (a slow view where a call must still be running); real draft files, read back
through ``agentcli drafts``; real session logs, replayed by ``agentcli log show``. Bounds such as
``timeout=`` only stop a hung test.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agentcli.config import resolve
from agentcli.drafts.queue import ticket_arg
from agentcli.drafts.store import DraftStore
from agentcli.stores import init_sqlite, open_store
from agentcli.ticket import Ticket
from agentcli.tools import ToolDeps, default_registry, run_tool

from .conftest import agentcli_exe, saved_drafts
from .test_store_faults import SLOW_VIEW


@functools.cache
def sdk() -> SimpleNamespace:
    """The MCP SDK's client side and agentcli's server, imported when a test first needs them:
    every xdist worker collects this file, and an import at the top costs each of them ~1 s of
    CPU for a file only one of them runs."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError
    from mcp.shared.memory import create_client_server_memory_streams
    from mcp.shared.message import SessionMessage
    from mcp.types import Implementation, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

    from agentcli.cli.mcp import opened
    from agentcli.mcp_server.server import sdk_logging, serve_on
    from agentcli.mcp_server.session import McpSession

    return SimpleNamespace(
        ClientSession=ClientSession, StdioServerParameters=StdioServerParameters,
        stdio_client=stdio_client, MCPError=MCPError,
        create_client_server_memory_streams=create_client_server_memory_streams,
        SessionMessage=SessionMessage, JSONRPCNotification=JSONRPCNotification,
        JSONRPCRequest=JSONRPCRequest, JSONRPCResponse=JSONRPCResponse, opened=opened,
        sdk_logging=sdk_logging, serve_on=serve_on, McpSession=McpSession,
        CLIENT=Implementation(name="test-client", version="9.1"))

TRUE_REPLY = ("Hello Ana, we received your payment for order GH56JK78MN; it is not yet matched "
              "to the order, so the license has not been issued yet. A colleague is on it.")
FALSE_REPLY = "Hello Ana, your order GH56JK78MN has shipped and will arrive tomorrow."


@pytest.fixture(scope="module")
def slow_db(tmp_path_factory) -> Path:
    """Every lookup takes minutes (a view over a recursive count): a call that is still running."""
    path = tmp_path_factory.mktemp("slow") / "slow.sqlite3"
    init_sqlite(path, 20)
    with sqlite3.connect(path) as c:
        c.execute("ALTER TABLE orders RENAME TO orders_data")
        c.execute(SLOW_VIEW)
    return path


# --------------------------------------------------------------------------- the SDK's client

def in_memory(body, *, ticket: str | None = None, **flags: str) -> tuple[Any, str]:
    """Run ``body(session, init)`` with the SDK's ``ClientSession`` against agentcli's MCP
    server in this process, over the SDK's in-memory streams: the App and ticket of
    ``agentcli mcp --ticket TICKET`` with ``flags`` (settings by name, as its options give them;
    the environment is cli_env's), served by ``serve_on`` until the client leaves. (What body
    returned, what the server wrote on standard error.)"""
    settings = resolve(**flags)
    err = io.StringIO()

    async def main():
        with contextlib.redirect_stderr(err), sdk().sdk_logging():
            async with sdk().opened(settings, ticket_arg(ticket)) as (app, t):
                async with sdk().create_client_server_memory_streams() as (client, server):
                    served = asyncio.ensure_future(sdk().serve_on(sdk().McpSession(app, t),
                                                            contextlib.nullcontext(server)))
                    try:
                        async with sdk().ClientSession(*client, client_info=sdk().CLIENT) as session:
                            return await body(session, await session.initialize())
                    finally:
                        await client[1].aclose()  # the client is done: the server's input ends
                        await served

    result = asyncio.run(asyncio.wait_for(main(), 90))
    return result, err.getvalue()


def with_client(env: dict[str, str], args: list[str], body, tmp_path: Path) -> tuple[Any, str]:
    """Run ``body(session)`` against ``agentcli mcp ARGS`` through the SDK's stdio client;
    (what body returned, the server's standard error)."""
    errfile = tmp_path / f"mcp-stderr-{len(list(tmp_path.glob('mcp-stderr-*')))}.txt"

    async def main():
        params = sdk().StdioServerParameters(command=agentcli_exe(), args=["mcp", *args], env=env)
        with open(errfile, "w") as errlog:
            async with sdk().stdio_client(params, errlog=errlog) as (read, write):
                async with sdk().ClientSession(read, write, client_info=sdk().CLIENT) as session:
                    init = await session.initialize()
                    return await body(session, init)

    result = asyncio.run(asyncio.wait_for(main(), 90))
    return result, errfile.read_text()


def sessions(cli, env) -> list[dict[str, Any]]:
    p = cli(["log", "list", "--json"], env)
    assert p.returncode == 0, p.err
    return json.loads(p.out)


def log_events(home: Path, sid: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (home / "sessions" / f"{sid}.jsonl").read_text().splitlines()]


def only_log(home: Path) -> list[dict[str, Any]]:
    """The events of the one session log there is."""
    (path,) = (home / "sessions").glob("*.jsonl")
    return log_events(home, path.stem)


async def logged_call(home: Path) -> None:
    """Until the session log holds a ``tool_call`` record: the call has started."""
    for _ in range(400):
        logs = list((home / "sessions").glob("*.jsonl"))
        if logs and any(e["type"] == "tool_call" for e in log_events(home, logs[0].stem)):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the call never started")


@pytest.mark.slow  # a process importing the MCP SDK
def test_over_stdio_the_console_script_lists_the_two_tools_with_every_hint_set(cli_env, tmp_path):
    # end to end: the installed console script, the SDK's stdio client, the JSON on the wire
    async def body(s, init):
        tools = await s.list_tools()
        with pytest.raises(sdk().MCPError) as prompts:  # nothing else is served
            await s.list_prompts()
        with pytest.raises(sdk().MCPError) as resources:
            await s.list_resources()
        looked = await s.call_tool("get_order_status", {"order_code": "GH56JK78MN"})
        return init, tools, prompts.value, resources.value, looked

    (init, tools, prompts, resources, looked), err = with_client(cli_env, [], body, tmp_path)
    registry = {t.name: t for t in default_registry()}
    assert [t.name for t in tools.tools] == ["get_order_status", "draft_reply"]
    for t in tools.tools:
        assert t.input_schema == registry[t.name].input_schema
        assert t.description == registry[t.name].description
    hints = {t.name: t.annotations.model_dump(by_alias=True, exclude_none=True) for t in tools.tools}
    for h in hints.values():  # explicit on the wire: no client falls back on the defaults
        assert {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} <= set(h)
    assert {k: v for k, v in hints["get_order_status"].items() if k != "title"} == {
        "readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    assert {k: v for k, v in hints["draft_reply"].items() if k != "title"} == {
        "readOnlyHint": False, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    assert init.capabilities.tools is not None
    assert init.capabilities.prompts is None and init.capabilities.resources is None
    assert prompts.error.code == resources.error.code == -32601
    assert not looked.is_error and looked.structured_content["status"] == "pending_payment"
    assert "serving get_order_status and draft_reply" in err  # the notice: on stderr
    assert "Traceback" not in err


def test_a_lookup_then_a_draft_reach_the_queue_and_the_session_log(cli, cli_env, home, drafts_dir):
    async def body(s, init):
        looked = await s.call_tool("get_order_status", {"order_code": " gh56-jk78-mn "})
        first = await s.call_tool("draft_reply", {"text": TRUE_REPLY, "order_code": "GH56JK78MN"})
        again = await s.call_tool("draft_reply", {"text": TRUE_REPLY, "order_code": "GH56JK78MN"})
        return looked, first, again

    (looked, first, again), err = in_memory(body)

    # the lookup: the tool's own result, exactly what `orders show --json` prints for the code
    shown = cli(["orders", "show", "GH56JK78MN", "--json", "--no-lines"], cli_env)
    assert not looked.is_error
    assert looked.structured_content == json.loads(shown.out)
    assert json.loads(looked.content[0].text) == looked.structured_content

    # the draft: pending review, checked (nothing to find), the same text is the same draft
    assert not first.is_error
    res = first.structured_content
    assert res["status"] == "pending_review" and res["checks"] == []
    assert again.structured_content["draft_id"] == res["draft_id"]
    (draft,) = saved_drafts(drafts_dir)
    listed = json.loads(cli(["drafts", "list", "--json"], cli_env).out)
    (rec,) = [r for r in listed if r["id"] == res["draft_id"]]
    assert rec["text"] == TRUE_REPLY and rec["order_code"] == "GH56JK78MN"
    assert rec["status"] == "pending_review" and rec["customer"] == "ana.silva@example.com"
    assert (rec["provider"], rec["model"]) == ("mcp", "test-client")
    assert [x["result"]["order_code"] for x in rec["lookups"]] == ["GH56JK78MN"]  # its provenance

    # one MCP session is one agentcli session: its ticket, every call, replayed by log show
    (sess,) = sessions(cli, cli_env)
    assert rec["ticket"] == rec["session_id"] == sess["id"]
    assert sess["tool_calls"] == 3 and sess["drafts"] == 1 and sess["status"] == "ok"
    kinds = [e["type"] for e in log_events(home, sess["id"])]
    assert kinds[:2] == ["session_start", "mcp_client"]
    assert kinds.count("tool_call") == kinds.count("tool_result") == 3
    assert "draft_saved" in kinds and "checked" in kinds and kinds[-1] == "session_end"
    replay = cli(["log", "show", sess["id"]], cli_env)
    assert replay.returncode == 0, replay.err
    for expected in ("MCP client test-client 9.1", "→ get_order_status", "GH56JK78MN pending_payment",
                     f"draft {res['draft_id']} saved", "already saved (same text)",
                     "session ended: the client ended the session"):
        assert expected in replay.out, replay.out
    assert "Traceback" not in err


def test_a_draft_the_lookup_contradicts_comes_back_with_its_findings_stored_on_it(cli, cli_env):
    async def body(s, init):
        await s.call_tool("get_order_status", {"order_code": "GH56JK78MN"})
        return await s.call_tool("draft_reply", {"text": FALSE_REPLY, "order_code": "GH56JK78MN"})

    drafted, _ = in_memory(body)
    res = drafted.structured_content
    assert not drafted.is_error and res["status"] == "pending_review"  # saved, for a person to judge
    kinds = {f["kind"] for f in res["checks"]}
    assert "status_mismatch" in kinds and all(f["where"] == res["draft_id"] for f in res["checks"])
    assert "draft_reply again" in res["note"]
    shown = json.loads(cli(["drafts", "show", res["draft_id"], "--json"], cli_env).out)
    assert [f["kind"] for f in shown["findings"]] == [f["kind"] for f in res["checks"]]
    flagged = json.loads(cli(["drafts", "list", "--flagged", "--json"], cli_env).out)
    assert [r["id"] for r in flagged] == [res["draft_id"]]
    assert sessions(cli, cli_env)[0]["status"] == "incomplete"  # a person must look


def test_a_draft_asked_for_while_a_lookup_runs_is_refused(cli_env, home, slow_db, drafts_dir):
    async def body(s, init):
        lookup = asyncio.ensure_future(s.call_tool("get_order_status", {"order_code": "GH56JK78MN"}))
        await logged_call(home)  # ordering only: the lookup takes minutes, its timeout is 1 s
        draft = await s.call_tool("draft_reply", {"text": TRUE_REPLY})
        return await lookup, draft

    (lookup, draft), _ = in_memory(body, db=str(slow_db), tool_timeout="1")
    assert draft.is_error and "still running" in draft.content[0].text
    assert "get_order_status" in draft.content[0].text
    assert lookup.is_error and "timed out" in lookup.content[0].text
    assert saved_drafts(drafts_dir) == []


BAD_ARGUMENTS = [
    ({"order_code": 5}, None), ({"order_code": "GH56"}, None), ({"order_code": "GH56JK78MN", "x": 1}, None),
    ({}, None), ({"order_code": "GH56JK78MN", "include_line_items": "yes"}, None),
    ({"order_code": "GH56JK78MN", "pad": "x" * 70_000}, "too large"),
]


def test_bad_arguments_get_the_loops_own_error_results(cli_env, demo_db, home, tmp_path):
    async def body(s, init):
        return [await s.call_tool("get_order_status", args) for args, _ in BAD_ARGUMENTS]

    got, _ = in_memory(body)

    async def loop_results():
        store = open_store(str(demo_db))
        try:
            return [await run_tool(default_registry(), "get_order_status", args,
                                   ToolDeps(store, DraftStore(tmp_path / "d")), Ticket("t").view(), 30)
                    for args, _ in BAD_ARGUMENTS]
        finally:
            await store.aclose()

    wants = asyncio.run(loop_results())
    logged = [e for e in only_log(home) if e["type"] == "tool_call"]
    assert len(logged) == len(got) == len(BAD_ARGUMENTS)
    for (args, expected), g, want, call in zip(BAD_ARGUMENTS, got, wants, logged):
        shown = str(args)[:80]
        assert want.is_error and g.is_error, shown
        assert g.content[0].text == want.result, shown
        assert expected is None or expected in g.content[0].text, shown
        if expected == "too large":  # the log keeps what it is, not all of it
            assert set(call["input"]) == {"omitted"} and "bytes" in call["input"]["omitted"]
        else:
            assert call["input"] == args, shown


def test_an_unknown_tool_is_a_protocol_error_and_nothing_approves_or_sends(cli_env):
    async def body(s, init):
        out = []
        for name in ("approve_draft", "send_reply", "drafts approve", "x" * 5000):
            with pytest.raises(sdk().MCPError) as e:
                await s.call_tool(name, {"id": "d-1"})
            out.append(e.value.error)
        return out

    errors, err = in_memory(body)
    assert all(e.code == -32602 and "the available tools are get_order_status, draft_reply" in e.message
               for e in errors)
    assert len(errors[-1].message) < 300
    assert "Traceback" not in err


def test_unknown_methods_early_requests_and_odd_params_are_protocol_errors(cli_env, home):
    """Messages a well-behaved client never sends, as the SDK's JSON-RPC types, to the real
    server (the wire's own checks: test_malformed_messages_...)."""
    async def main():
        async with sdk().opened(resolve(), None) as (app, t):
            async with sdk().create_client_server_memory_streams() as ((read, write), server):
                served = asyncio.ensure_future(sdk().serve_on(sdk().McpSession(app, t), contextlib.nullcontext(server)))

                async def send(msg):
                    await write.send(sdk().SessionMessage(msg))

                async def request(rid, method, params=None):
                    await send(sdk().JSONRPCRequest(jsonrpc="2.0", id=rid, method=method, params=params))
                    got = await read.receive()
                    return got.message.model_dump(by_alias=True, exclude_none=True)

                try:
                    early = await request(1, "tools/list")  # before the handshake
                    assert "error" in early
                    init = await request(0, "initialize", {
                        "protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "1"}})
                    assert "result" in init, init
                    await send(sdk().JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
                    assert (await request(2, "resources/read", {"uri": "file:///etc/passwd"}))["error"]["code"] == -32601
                    assert (await request(3, "no/such/method"))["error"]["code"] == -32601
                    assert (await request(4, "tools/call", {"name": "get_order_status", "arguments": [1, 2]})
                            )["error"]["code"] == -32602
                    assert (await request(5, "tools/call", {"arguments": {}}))["error"]["code"] == -32602
                    assert (await request(6, "tools/call", {"name": "draft_reply"}))["result"]["isError"] is True
                    # a response to a request never made, a notification nobody knows: dropped
                    await send(sdk().JSONRPCResponse(jsonrpc="2.0", id=99, result={}))
                    await send(sdk().JSONRPCNotification(jsonrpc="2.0", method="notifications/whatever",
                                                   params={"a": 1}))
                    assert (await request(7, "ping"))["result"] == {}  # nothing hangs
                finally:
                    await write.aclose()
                    await served

    asyncio.run(asyncio.wait_for(main(), 60))
    end = only_log(home)[-1]
    assert end["type"] == "session_end" and end["status"] == "ok"


def test_drafts_from_an_mcp_client_go_into_a_postgresql_queue(cli, cli_env, pg_dsn):
    import uuid

    from agentcli.drafts.backends import create_schema

    from .pg import fresh_database

    url = fresh_database(pg_dsn, "q_mcp_" + uuid.uuid4().hex[:8])
    create_schema(url)

    async def body(s, init):
        await s.call_tool("get_order_status", {"order_code": "GH56JK78MN"})
        return await s.call_tool("draft_reply", {"text": TRUE_REPLY, "order_code": "GH56JK78MN"})

    res, err = in_memory(body, drafts_url=url)
    assert not res.is_error, res
    did = res.structured_content["draft_id"]
    assert res.structured_content["path"] == f"drafts-queue/{did}"  # never the URL
    (rec,) = json.loads(cli(["drafts", "list", "--json", "--drafts-url", url], cli_env).out)
    assert rec["id"] == did and rec["provider"] == "mcp" and rec["mode"] == "mcp"
    assert [x["result"]["order_code"] for x in rec["lookups"]] == ["GH56JK78MN"]
    assert rec["findings_current"]  # checked at once, the findings stored in the queue
    assert not list(Path(cli_env["AGENTCLI_DRAFTS_DIR"]).glob("d-*.md"))


# --------------------------------------------------------------------------- scope and identity

def test_customer_scopes_every_lookup_and_the_draft(cli, cli_env, monkeypatch):
    async def body(s, init):
        mine = await s.call_tool("get_order_status", {"order_code": "GH56JK78MN"})
        theirs = await s.call_tool("get_order_status", {"order_code": "ORD-20261234"})
        draft = await s.call_tool("draft_reply", {"text": TRUE_REPLY})
        return mine, theirs, draft

    monkeypatch.setenv("AGENTCLI_CUSTOMER", "Ana Silva <ana.silva@example.com>")
    (mine, theirs, draft), err = in_memory(body)
    assert mine.structured_content["found"] is True
    assert theirs.structured_content == {"found": False, "order_code": "ORD-20261234"}
    rec = json.loads(cli(["drafts", "show", draft.structured_content["draft_id"], "--json"], cli_env).out)
    assert rec["customer"] == "ana.silva@example.com"
    assert "customer ana.silva@example.com" in err

    # the flag wins over the environment
    flagged, _ = in_memory(lambda s, i: s.call_tool("get_order_status", {"order_code": "GH56JK78MN"}),
                           customer="ben.okafor@example.net")
    assert flagged.structured_content == {"found": False, "order_code": "GH56JK78MN"}


@pytest.mark.parametrize("args,env", [
    (["--customer", "not an address"], {}), (["--customer", ""], {}),
    ([], {"AGENTCLI_CUSTOMER": ""}), ([], {"AGENTCLI_CUSTOMER": "ana@"}),
    (["--ticket", "bad\nticket"], {}), (["--tool-timeout", "0"], {}),
], ids=["flag", "blank flag", "blank env", "env", "ticket", "timeout"])
def test_a_bad_scope_or_identity_fails_closed_before_serving(cli, cli_env, args, env):
    p = cli(["mcp", *args], {**cli_env, **env}, input="")
    assert p.returncode == 2
    assert p.out == ""  # not even a protocol message: nothing was served
    assert len(p.err.strip().splitlines()) == 1 and "Traceback" not in p.err


def test_a_ticket_collects_the_drafts_and_resumes_the_next_session(cli, cli_env):
    first, _ = in_memory(lambda s, i: s.call_tool("get_order_status", {"order_code": "GH56JK78MN"}),
                         ticket="HD-1042")
    assert not first.is_error
    # the next session of the ticket has read that lookup: a draft rests on it
    drafted, _ = in_memory(lambda s, i: s.call_tool("draft_reply", {"text": TRUE_REPLY}), ticket="HD-1042")
    rec = json.loads(cli(["drafts", "show", drafted.structured_content["draft_id"], "--json"], cli_env).out)
    assert rec["ticket"] == "HD-1042"
    assert [x["result"]["order_code"] for x in rec["lookups"]] == ["GH56JK78MN"]
    assert drafted.structured_content["checks"] == []
    assert len(json.loads(cli(["log", "list", "--ticket", "HD-1042", "--json"], cli_env).out)) == 2


# --------------------------------------------------------------------------- hostile clients

class Raw:
    """``agentcli mcp`` over real pipes, spoken to line by line; every line it writes on
    standard output must be one JSON-RPC message (checked as it is read)."""

    def __init__(self, env: dict[str, str], *args: str):
        self.p = subprocess.Popen([agentcli_exe(), "mcp", *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self._buf = b""
        self.err = b""
        self.protocol: list[dict[str, Any]] = []
        self._err_thread = threading.Thread(target=self._read_err, daemon=True)
        self._err_thread.start()

    def _read_err(self) -> None:
        self.err = self.p.stderr.read()

    def send(self, msg: Any) -> None:
        data = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
        self.p.stdin.write(data + b"\n")
        self.p.stdin.flush()

    def _line(self, timeout: float) -> bytes | None:
        """The next line of standard output (None at its end); read here, never by a thread, so
        closing it (a client that leaves) really closes the pipe."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            assert left > 0, "no answer in time"
            if select.select([self.p.stdout], [], [], left)[0]:
                chunk = os.read(self.p.stdout.fileno(), 1 << 16)
                if not chunk:
                    assert not self._buf.strip(), self._buf[:200]
                    return None
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def recv(self, timeout: float = 30) -> dict[str, Any]:
        line = self._line(timeout)
        assert line is not None, "the server closed its output"
        msg = json.loads(line)
        assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0", line
        self.protocol.append(msg)
        return msg

    def request(self, rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})})
        return self.recv()

    def handshake(self) -> None:
        r = self.request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "raw", "version": "1"}})
        assert "result" in r, r
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def leave(self) -> None:
        """The client goes away: it reads nothing more and writes nothing more."""
        self.p.stdout.close()
        self.p.stdin.close()

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            self.p.stdin.close()
        code = self.p.wait(timeout)
        if not self.p.stdout.closed:
            while (line := self._line(timeout)) is not None:
                self.recv_line(line)
        self._err_thread.join(timeout)
        err = self.err.decode("utf-8", "replace")
        assert "Traceback" not in err, err
        return code, err

    def recv_line(self, line: bytes) -> None:
        msg = json.loads(line)  # whatever is left: protocol too
        assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0", line
        self.protocol.append(msg)

    def kill(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(10)


@pytest.fixture
def raw(cli_env):
    made: list[Raw] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Raw:
        r = Raw(env or cli_env, *args)
        made.append(r)
        return r

    yield start
    for r in made:
        r.kill()


DEEP = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get_order_status"}}
for _ in range(100):
    DEEP = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "get_order_status", "arguments": {"order_code": DEEP["params"]}}}

MALFORMED = [
    (b"not json at all", -32700, None),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', -32700, None),
    (b'\xff\xfe{"jsonrpc": "2.0"}', -32700, None),
    (b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": NaN}}', -32700, None),
    (b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": 1e999}}', -32700, None),
    (b"[]", -32600, None),
    (b'[{"jsonrpc": "2.0", "id": 4, "method": "ping"}]', -32600, None),
    (b'"a string"', -32600, None),
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, None),
    (b'{"jsonrpc": "1.0", "id": 5, "method": "ping"}', -32600, 5),
    (b'{"jsonrpc": "2.0", "id": 6, "method": 42}', -32600, 6),
    (b'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"s": "\\ud800"}}', -32600, 8),
    (json.dumps(DEEP).encode(), -32600, 7),
    (b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"s": "' + b"x" * (2 << 20) + b'"}}',
     -32600, None),
]


@pytest.mark.slow  # a process importing the MCP SDK
def test_malformed_messages_are_answered_and_the_session_goes_on(raw, home):
    r = raw()
    r.handshake()
    for line, code, rid in MALFORMED:
        r.send(line)
        got = r.recv()
        assert got.get("error", {}).get("code") == code and got["id"] == rid, (line[:80], got)
        assert r.request("alive", "ping") == {"jsonrpc": "2.0", "id": "alive", "result": {}}
    code, err = r.finish()
    assert code == 0
    events = log_events(home, next((home / "sessions").glob("*.jsonl")).stem)
    logged = [e for e in events if e["type"] == "mcp_protocol_error"]
    assert [e["code"] for e in logged] == [c for _, c, _ in MALFORMED]
    assert events[-1]["type"] == "session_end" and events[-1]["protocol_errors"] == len(MALFORMED)


@pytest.mark.slow  # a process importing the MCP SDK
def test_requests_sent_before_the_input_closes_are_all_answered_on_a_protocol_only_stdout(raw):
    r = raw()
    r.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}})
    r.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i, code in enumerate(["GH56JK78MN", "ORD-20261234", "NOPE"], 1):
        r.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "get_order_status", "arguments": {"order_code": code}}})
    r.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "nope"}})
    code, err = r.finish()
    assert code == 0
    answers = {m["id"]: m for m in r.protocol}
    assert set(answers) == {0, 1, 2, 3, 4}
    assert answers[1]["result"]["structuredContent"]["status"] == "pending_payment"
    assert answers[2]["result"]["structuredContent"]["status"] == "shipped"
    assert answers[3]["result"]["isError"] is True
    assert answers[4]["error"]["code"] == -32602
    # standard output carries only the protocol (each line checked as read): one answer each
    assert all(m.get("jsonrpc") == "2.0" for m in r.protocol) and len(r.protocol) == 5
    assert "serving get_order_status and draft_reply" in err  # the notice went to stderr


@pytest.mark.slow  # a process importing the MCP SDK
def test_a_client_that_leaves_mid_call_ends_the_session_without_a_hang(raw, home, slow_db):
    r = raw("--db", str(slow_db), "--tool-timeout", "0.5")
    r.handshake()
    r.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_order_status", "arguments": {"order_code": "GH56JK78MN"}}})
    r.leave()
    code, err = r.finish(timeout=30)
    assert code == 1 and "closed the connection" in err
    events = log_events(home, next((home / "sessions").glob("*.jsonl")).stem)
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["outcome"] == "timeout"  # the call ran to its end and is on record
    assert events[-1]["type"] == "session_end" and events[-1]["status"] == "incomplete"


@pytest.mark.slow  # a process importing the MCP SDK
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_while_idle_ends_the_session(raw, home, sig, code):
    r = raw()
    r.handshake()
    assert r.request(1, "tools/list")["result"]["tools"]
    r.p.send_signal(sig)
    got, err = r.finish(timeout=20)
    assert got == code
    assert len([ln for ln in err.splitlines() if ln.startswith("agentcli: ")]) == 1
    events = log_events(home, next((home / "sessions").glob("*.jsonl")).stem)
    assert events[-1]["type"] == "session_end" and events[-1]["status"] == "cancelled"


@pytest.mark.slow  # a process importing the MCP SDK
def test_sigterm_during_a_slow_call_cancels_it_on_record(raw, home, slow_db):
    r = raw("--db", str(slow_db), "--tool-timeout", "120")
    r.handshake()
    r.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_order_status", "arguments": {"order_code": "GH56JK78MN"}}})
    sid = None
    for _ in range(400):  # the call has started once its record is written
        logs = list((home / "sessions").glob("*.jsonl"))
        if logs and any(e["type"] == "tool_call" for e in log_events(home, logs[0].stem)):
            sid = logs[0].stem
            break
        time.sleep(0.05)
    assert sid is not None
    r.p.send_signal(signal.SIGTERM)
    code, err = r.finish(timeout=20)
    assert code == 143
    # the client heard the request end (the SDK answers it: connection closed)
    assert [m["id"] for m in r.protocol if "error" in m] == [1]
    events = log_events(home, sid)
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["outcome"] == "cancelled" and result["is_error"] is True
    assert [e["type"] for e in events][-2:] == ["cancelled", "session_end"]


def test_a_closed_standard_input_is_a_usage_error(cli_env):
    p = subprocess.run([agentcli_exe(), "mcp"], env=cli_env, capture_output=True, text=True,
                       timeout=60, preexec_fn=lambda: os.close(0))
    assert p.returncode == 2 and "standard input is closed" in p.stderr and p.stdout == ""


@pytest.mark.slow  # a process importing the MCP SDK
def test_a_closed_standard_error_does_not_stop_the_protocol(cli_env):
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
    p = subprocess.run([agentcli_exe(), "mcp"], env=cli_env, input=(json.dumps(hello) + "\nnot json\n").encode(),
                       stdout=subprocess.PIPE, timeout=60, preexec_fn=lambda: os.close(2))
    answers = {m["id"]: m for m in map(json.loads, p.stdout.decode().splitlines())}
    assert p.returncode == 0 and "result" in answers[1] and answers[None]["error"]["code"] == -32700


# --------------------------------------------------------------------------- the optional extra

LAUNCH = r"""
import sys
{prelude}
sys.argv = ["agentcli", "mcp"]
from agentcli._entry import main
main()
"""


def test_without_the_sdk_one_line_says_how_to_install_it(cli_env):
    # an interpreter where `import mcp` finds nothing (as without the extra)
    code = LAUNCH.format(prelude="sys.modules['mcp'] = None")
    p = subprocess.run([sys.executable, "-c", code], env=cli_env, capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 3 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "agentcli: agentcli mcp needs the MCP SDK, which is not installed: pip install 'agentcli[mcp]'"]


def test_another_major_version_of_the_sdk_is_refused(cli, cli_env, tmp_path, monkeypatch):
    # an mcp 1.x found first on the path (its metadata is what the check reads)
    fake = tmp_path / "site"
    (fake / "mcp").mkdir(parents=True)
    (fake / "mcp" / "__init__.py").write_text("")
    (fake / "mcp-1.26.0.dist-info").mkdir()
    (fake / "mcp-1.26.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp\nVersion: 1.26.0\n")
    monkeypatch.syspath_prepend(str(fake))
    p = cli(["mcp"], cli_env)
    assert p.returncode == 3 and p.out == ""
    assert "found 1.26.0" in p.err and "pip install 'agentcli[mcp]'" in p.err


def test_mcp_help_loads_no_sdk(cli_env):
    code = ("import sys\nsys.argv = ['agentcli', 'mcp', '--help']\nfrom agentcli._entry import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    c = e.code\n"
            "sys.stderr.write('LOADED=' + ','.join(sorted({m.split('.')[0] for m in sys.modules} "
            "& {'mcp', 'mcp_types', 'pydantic', 'anyio', 'starlette'})) + ' EXIT=%s' % c)")
    p = subprocess.run([sys.executable, "-c", code], env=cli_env, capture_output=True, text=True, timeout=60)
    assert "--customer" in p.stdout
    assert "LOADED= EXIT=0" in p.stderr, p.stderr
