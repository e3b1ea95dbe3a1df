"""``agentcli mcp``: serve the two guarded tools to an MCP client over standard input/output.

The SDK is an optional extra (``pip install 'agentcli[mcp]'``, ``mcp>=2,<3``): without it, or
with another major version, one line says how to install it (exit 3). Light at import time, so
``agentcli mcp --help`` loads no SDK: the server (``agentcli.mcp_server``) is imported by the
command body once the SDK is known to be there.
"""


import contextlib
import os
import sys
from importlib import metadata
from importlib.util import find_spec
from typing import AsyncIterator, Optional

import typer

from ..app import App
from ..config import MCP, Settings, resolve
from ..drafts.queue import ticket_arg
from ..errors import ConfigError, UsageError
from ..loop import new_session_id
from ..stores import open_store
from ..ticket import Ticket
from ..tools import default_registry
from .common import run, warn
from .options import TicketOpt, option
from .preflight import drafts_check, sessions_check

Db, Customer, DraftsDir, DraftsUrl, ToolTimeout = (
    option(name, MCP) for name in ("db", "customer", "drafts_dir", "drafts_url", "tool_timeout"))

INSTALL = "pip install 'agentcli[mcp]'"
SDK_MAJOR = 2


def require_sdk() -> None:
    """The ``mcp`` SDK of the major version this code is written for, or ConfigError."""
    if find_spec("mcp") is None:
        raise ConfigError(f"agentcli mcp needs the MCP SDK, which is not installed: {INSTALL}")
    try:
        version = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        version = ""
    if version.split(".")[0] != str(SDK_MAJOR):
        raise ConfigError(f"agentcli mcp needs version {SDK_MAJOR} of the MCP SDK, found "
                          f"{version or 'an unknown version'}: {INSTALL}")


def register(app: typer.Typer) -> None:
    @app.command("mcp", short_help="Serve the two tools to an MCP client (Claude Desktop, ...).")
    def mcp(db: Db = None, customer: Customer = None, drafts_dir: DraftsDir = None,
            drafts_url: DraftsUrl = None, tool_timeout: ToolTimeout = None,
            ticket: TicketOpt = None) -> None:
        """Serve get_order_status (read-only) and draft_reply (to the review queue only) to a
        Model Context Protocol client over standard input/output; nothing that approves,
        rejects, edits or sends is served. One MCP session is one agentcli session (agentcli
        log show replays it); --customer scopes every lookup. Standard output carries only the
        protocol. Needs the mcp extra: pip install 'agentcli[mcp]'.

        Examples:

        \b
          claude mcp add agentcli -- agentcli mcp --customer ana@example.com
          agentcli mcp --db ./orders.sqlite3 --drafts-dir ./drafts --ticket HD-1042
        """
        raise typer.Exit(run(lambda: _body(ticket, db=db, customer=customer,
                                           drafts_dir=drafts_dir, drafts_url=drafts_url,
                                           tool_timeout=tool_timeout)))


def _body(ticket: Optional[str], **flags) -> object:
    if sys.stderr is None:  # started with standard error closed: the protocol needs none
        sys.stderr = open(os.devnull, "w")
    require_sdk()
    t = ticket_arg(ticket)
    settings = resolve(**flags)
    if sys.stdin is None:
        raise UsageError("standard input is closed: an MCP client writes its messages there")
    for check in (drafts_check(settings), sessions_check()):
        if not check.ok:
            raise ConfigError(check.line())
    return _serve(settings, t)


@contextlib.asynccontextmanager
async def opened(settings: Settings, ticket: Optional[str]) -> AsyncIterator[tuple[App, Ticket]]:
    """The App of an MCP session (no model: the client's side is the model) and its ticket (the
    one named, resumed), announced on standard error; the App closed after."""
    from ..mcp_server.session import ClientSide

    store = open_store(settings.db)
    app = App(settings, store, ClientSide(), default_registry())
    try:
        t = Ticket(new_session_id(), external=ticket, customer=settings.customer)
        if ticket is not None:
            app.resume(t)
        note = t.unread_note()
        if note is not None:
            warn([note])
        sys.stderr.write(f"agentcli mcp: serving get_order_status and draft_reply on standard "
                         f"input/output (ticket {t.id}"
                         + (f", customer {t.customer}" if t.customer else ", every customer")
                         + "); drafts go to the review queue, nothing is sent\n")
        yield app, t
    finally:
        await app.aclose()


async def _serve(settings: Settings, ticket: Optional[str]) -> int:
    from ..mcp_server.server import (
        serve,  # the SDK: only once it is known to be installed
    )

    async with opened(settings, ticket) as (app, t):
        if sys.stdin.isatty():
            sys.stderr.write("agentcli mcp: this is a server for an MCP client (Claude Desktop, "
                             "Claude Code: see the README), which speaks JSON-RPC on standard "
                             "input; Ctrl-D or Ctrl-C ends it\n")
        sys.stderr.flush()
        return await serve(app, t, sys.stdin, sys.stdout)
