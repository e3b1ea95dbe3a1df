"""``agentcli mcp``: the registry's two tools, served to any MCP client over standard I/O.

The SDK's low-level ``Server`` (``mcp>=2,<3``) does the protocol: the handshake, ``tools/list``,
``tools/call``, unknown methods (-32601), malformed params (-32602), a peer's cancellations. The
tools are the registry's, listed with its schemas and descriptions; their annotations follow
from the effect class our code enforces (``HINTS``), never from the tool's own say, and a tool of
any other effect is never listed. Nothing else is served: no resources, no prompts, nothing that
approves, rejects, edits or sends.

A ``tools/call`` runs through ``McpSession.call`` (the loop's rules); its result is the loop's
result as JSON text (and as ``structuredContent`` when it is an object), redacted; a failed call
is a result with ``isError`` and the loop's message; a saved draft's result carries its grounding
findings (``checks``). An unknown tool is a protocol error (-32602), as the MCP specification asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import warnings
from typing import Any, Callable, Iterator

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from .. import __version__
from ..app import App
from ..errors import AgentcliError
from ..redact import one_line, redact_obj, replace_surrogates
from ..ticket import Ticket
from ..tools import DRAFT, READ_ONLY, Registry
from ..vocab import Outcome, ToolName
from .session import McpSession, Reply, SessionFailed
from .transport import ClientLines, ProtocolError, ProtocolOutput, claimed

# The hints of each effect class (every one set: a client must not fall back on the defaults,
# destructive and open-world). What they promise is enforced elsewhere: the orders database is
# opened read-only, a draft only goes to the review queue, the same text is the same draft.
HINTS: dict[str, dict[str, bool]] = {
    READ_ONLY: {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True,
                "open_world_hint": False},
    DRAFT: {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": True,
            "open_world_hint": False},
}
TITLES = {ToolName.LOOKUP: "Look up an order (read-only)",
          ToolName.DRAFT: "Save a reply as a draft for human review (sends nothing)"}

INSTRUCTIONS = """\
agentcli's guarded support tools. get_order_status looks an order up in the shop's orders \
database (read-only; scoped to one customer when the server was started with --customer). \
draft_reply saves a reply as a draft in a review queue: a person reads, edits and approves it; \
nothing is ever sent to the customer. Look the order up first and wait for its result, then \
draft: a draft asked for while a lookup is still running is refused. State only facts the \
lookups returned; each draft is checked against them and the findings come back with it."""

DRAFT_NOTE = ("a reviewer will see these findings on the draft; if the reply states something "
              "the lookups did not return, call draft_reply again with a corrected text (the new "
              "draft replaces this one)")


def tool_list(registry: Registry) -> list[types.Tool]:
    out = []
    for t in registry:
        hints = HINTS.get(t.effect)
        if hints is None:  # the registry refuses other effects; should one appear, it stays hidden
            continue
        out.append(types.Tool(name=t.name, description=t.description, input_schema=t.input_schema,
                              annotations=types.ToolAnnotations(title=TITLES.get(t.name), **hints)))
    return out


def tool_result(reply: Reply) -> types.CallToolResult:
    """The client's view of one call's outcome (redacted: a database field may hold a key)."""
    out = reply.outcome
    if out.is_error:
        text = replace_surrogates(redact_obj(str(out.result)))
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
    result = out.result
    if out.draft is not None and isinstance(result, dict):
        result = {**result, "checks": reply.checks if reply.checks is not None else []}
        if reply.checks is None:
            result["checks_error"] = "the grounding checks could not run on this draft"
        elif any(f.get("severity") == "error" for f in reply.checks):
            result["note"] = DRAFT_NOTE
    result = replace_surrogates(redact_obj(result))
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(text=text)],
                                structured_content=result if isinstance(result, dict) else None,
                                is_error=False)


def build_server(session: McpSession) -> Server:
    tools = tool_list(session.app.registry)

    def seen(ctx: Any) -> None:
        if session.client is None:
            params = ctx.session.client_params
            info = getattr(params, "client_info", None)
            session.client_seen(getattr(info, "name", None), getattr(info, "version", None),
                                ctx.protocol_version)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        seen(ctx)
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        seen(ctx)
        try:
            reply = await session.call(params.name, params.arguments)
        except SessionFailed:
            raise MCPError(code=types.INTERNAL_ERROR,
                           message="agentcli cannot record this session (its session log cannot "
                                   "be written), so it runs no more calls; the session ends") from None
        if reply.outcome.outcome == Outcome.UNKNOWN_TOOL:
            raise MCPError(code=types.INVALID_PARAMS, message=str(reply.outcome.result))
        return tool_result(reply)

    return Server("agentcli", version=__version__, title="agentcli support tools",
                  instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


class _OneLine(logging.Handler):
    """The SDK's own log (a handler that raised, a dropped message): one cleaned line each on
    standard error, never a traceback, never an error of its own."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            why = f" ({record.exc_info[0].__name__})" if record.exc_info and record.exc_info[0] else ""
            sys.stderr.write(f"agentcli: mcp: {one_line(record.getMessage(), 300)}{why}\n")
            sys.stderr.flush()
        except Exception:
            pass

    def handleError(self, record: logging.LogRecord) -> None:
        pass


def _one_line_warning(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(f"agentcli: mcp: warning: {one_line(str(message), 300)}\n")


@contextlib.contextmanager
def sdk_logging() -> Iterator[None]:
    """While serving, what the SDK, asyncio ("Task exception was never retrieved") and warnings
    would print with a traceback or a source line becomes one line on standard error."""
    saved = []
    for name in ("mcp", "mcp_types", "asyncio"):
        lg = logging.getLogger(name)
        saved.append((lg, lg.handlers[:], lg.level, lg.propagate))
        lg.handlers[:] = [_OneLine()]
        lg.setLevel(logging.WARNING)
        lg.propagate = False
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        yield
    finally:
        warnings.showwarning = shown
        for lg, handlers, level, propagate in saved:
            lg.handlers[:] = handlers
            lg.setLevel(level)
            lg.propagate = propagate


GONE = {"closed": "the MCP client closed the connection before every result was written",
        "stalled": "the MCP client stopped reading its results"}


async def serve_on(session: McpSession, streams: contextlib.AbstractAsyncContextManager[tuple[Any, Any]],
                   gone: Callable[[], str | None] = lambda: None) -> None:
    """Serve ``session`` on the SDK's message streams (read, write) that ``streams`` opens (the
    stdio transport's, or an in-memory pair) until the client ends it or the streams close;
    then end it (``McpSession.finish``: running calls finish, the ``session_end`` record).
    ``gone``: why the client is known to be gone (a key of ``GONE``), None while it is there.
    A signal's cancellation and a bug go up, after the record."""
    server = build_server(session)
    reason, cancel, crashed = "the client ended the session", False, False
    try:
        async with streams as (read, write):
            await server.run(read, write, server.create_initialization_options())
    except asyncio.CancelledError:
        reason, cancel = "stopped by a signal (SIGINT or SIGTERM)", True
        raise
    except Exception as e:  # a bug (the SDK's or ours): on record, then one line (cli.common.run)
        reason, crashed = f"internal error ({type(e).__name__})", True
        raise
    finally:
        why = gone()
        if why is not None and not cancel:
            reason = GONE[why]
        elif session.failure is not None:
            reason = "the session log cannot be written"
        await session.finish(reason, cancel=cancel, gone=why is not None, crashed=crashed)


async def serve(app: App, ticket: Ticket, stdin: Any, stdout: Any) -> int:
    """Serve one MCP session on ``stdin`` / ``stdout`` until the client ends it. 0: it ended
    the session; AgentcliError (exit 1) when it went away mid-way; the session log's
    ConfigError (exit 3); a signal's cancellation goes up (130, 143)."""
    loop = asyncio.get_running_loop()
    session = McpSession(app, ticket)
    with claimed(stdin, stdout) as (in_fd, out_fd), sdk_logging():
        lines: ClientLines | None = None

        def gone(why: str) -> None:
            if lines is not None:
                lines.end()

        def refused(e: ProtocolError) -> None:
            session.protocol_error(e.code, e.message, e.request_id)

        def hello(msg: dict[str, Any]) -> None:  # the client names itself first thing
            if msg.get("method") == "initialize" and isinstance(msg.get("params"), dict):
                info = msg["params"].get("clientInfo")
                info = info if isinstance(info, dict) else {}
                session.client_seen(info.get("name"), info.get("version"),
                                    msg["params"].get("protocolVersion"))

        out = ProtocolOutput(out_fd, loop, gone)
        # at the end of the input, the calls already asked for are answered first
        lines = ClientLines(in_fd, loop, out, refused, settle_s=session.timeout + 2.0,
                            on_message=hello)
        session.on_fatal = lines.end
        lines.start()
        try:
            await serve_on(session, stdio_server(lines, out), lambda: out.gone)
        finally:
            out.stop(1.0)
    if session.failure is not None:
        raise session.failure
    if out.gone is not None:
        where = f"; see agentcli log show {ticket.session_id}" if session.log_path else ""
        raise AgentcliError(f"mcp: {GONE[out.gone]}{where}")
    return 0
