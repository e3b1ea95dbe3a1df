"""``agentcli log``: past sessions, re-rendered with every tool call and result.

Cold start matters for ``log list``: only typer and the standard library load with this module.
"""


import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.text import Text

from ..config import LOG, sessions_dir
from ..drafts.queue import ticket_arg
from ..errors import UsageError
from ..redact import clean_for_terminal, one_line
from ..sessions.log import read_events
from ..sessions.replay import (
    filter_events,
    list_sessions,
    open_session,
    rebuild,
    summarise,
    token_count,
)
from ..stdio import isatty
from ..vocab import InvalidOrderCode, OrderCode, parse_since
from .common import dump_json, format_time, out_console, run, tsv, warn
from .layout import Col, age, fit_path, print_lines, table_lines, wrapped
from .options import PlainUsage, option
from .render import TraceRenderer
from .trace_lines import flat

log_app = typer.Typer(help="Past sessions, re-rendered with every tool call and result.",
                      no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(log_app, name="log", short_help="Past sessions, replayed with every tool call.")


ToolFilter = Annotated[Optional[str], typer.Option("--tool", help="only tool calls of this tool",
                                                   show_default=False, metavar="NAME")]
ErrorsFilter = Annotated[bool, typer.Option("--errors", help="only failed tool calls (list: sessions "
                                            "with a failure)")]
Json = option("json", LOG)
AllFilter = Annotated[bool, typer.Option("--all", help="include `agentcli eval` sessions (hidden by default)")]


@log_app.command("list", short_help="Past sessions, newest first.")
def log_list(
    tool: ToolFilter = None, errors: ErrorsFilter = False, all_: AllFilter = False,
    ticket: Annotated[Optional[str], typer.Option(
        "--ticket", help="only the sessions of this ticket (a helpdesk id, or a session id)",
        show_default=False, metavar="ID")] = None,
    order: Annotated[Optional[str], typer.Option(
        "--order", help="only sessions that looked up this order", show_default=False,
        metavar="CODE")] = None,
    since: Annotated[Optional[str], typer.Option(
        "--since", help="only sessions started since: an age (30m, 12h, 7d) or a date",
        show_default=False, metavar="AGE")] = None,
    limit: Annotated[int, typer.Option("-n", "--limit", min=0, metavar="N",
                                       help="show at most N sessions (0: all)")] = 20,
    json_: Json = False,
) -> None:
    """Past sessions, newest first: id, start, first question, provider/model, tool calls, drafts, status.

    Examples:

    \b
      agentcli log list -n 5
      agentcli log list --errors
      agentcli log list --ticket HD-1042 --since 7d
    """

    def body() -> int:
        try:
            code = OrderCode.parse(order) if order is not None else None
        except InvalidOrderCode as e:
            raise UsageError(f"--order: {e}") from None
        d = sessions_dir()
        warnings: list[str] = []
        sessions = list_sessions(d, tool=tool, errors_only=errors, limit=limit or None, warnings=warnings,
                                 include_eval=all_, ticket=ticket_arg(ticket), order=code,
                                 since=parse_since(since))
        warn(warnings)
        if json_:
            dump_json([s.record() for s in sessions])
            return 0
        if not sessions:
            filtered = tool or errors or ticket or order or since
            sys.stderr.write(f"agentcli: no sessions{' match' if filtered else ''} in {d}"
                             f"{'' if all_ else ' (eval sessions are hidden: --all shows them)'}\n")
            return 0
        if isatty(sys.stdout):
            _sessions_table(sessions, d)
        else:

            # a header, then the table's columns (numbers as numbers; questions: how many)
            sys.stdout.write("\t".join(LIST_COLUMNS) + "\n")
            for s in sessions:
                sys.stdout.write(tsv(s.id, format_time(s.started_at), s.question, s.questions,
                                     f"{s.provider}/{s.model}", s.tool_calls, s.tool_errors,
                                     len(s.drafts), _status(s)) + "\n")
        return 0

    raise typer.Exit(run(body))


LIST_COLUMNS = ("session", "started", "question", "questions", "provider/model", "tools", "failed",
                "drafts", "status")
_SESSION_STYLE = {"ok": "green", "incomplete": "yellow", "unfinished": "yellow", "cancelled": "yellow",
                  "error": "red"}


def _status(s: Any) -> str:
    return f"{s.status} (eval)" if s.origin == "eval" else s.status


def _sessions_table(sessions: list, directory: Path) -> None:
    """The sessions as a table that fits the terminal: the whole session id always, then the
    status, the first question, its age, drafts and tool calls, as the width allows."""
    console = out_console()
    width = console.width
    cols = [Col("session", "session", 0), Col("status", "status", 1),
            Col("question", "question", 2, cut=20, grow=True), Col("age", "age", 3),
            Col("drafts", "drafts", 4, right=True), Col("tools", "tools", 5, right=True),
            Col("failed", "failed", 6, right=True),
            Col("model", "provider/model", 7, cut=12, cap=40),
            Col("questions", "questions", 8, right=True)]
    rows = [{"session": Text(one_line(s.id, 40)),
             "status": Text(one_line(_status(s), 20), style=_SESSION_STYLE.get(s.status, "")),
             "question": Text(one_line(s.question or "—", 300)), "age": Text(age(s.started_at)),
             "drafts": str(len(s.drafts)), "tools": str(s.tool_calls),
             "failed": Text(str(s.tool_errors), style="red" if s.tool_errors else ""),
             "model": Text(one_line(f"{s.provider}/{s.model}", 60)), "questions": str(s.questions)}
            for s in sessions]
    head = "sessions (newest first) in "
    title = Text(head + fit_path(directory, max(10, width - len(head))))
    print_lines(console, [*wrapped(console, title, width), Text(""),
                          *table_lines(cols, rows, width)])


@log_app.command("show", cls=PlainUsage, short_help="Replay a session with every tool call.")
def log_show(
    session: Annotated[str, typer.Argument(help="session id (or a unique prefix, `last`, or a .jsonl path)",
                                           show_default=False, metavar="ID")],
    tool: ToolFilter = None, errors: ErrorsFilter = False,
    all_: Annotated[bool, typer.Option("--all", help="`last` may be an `agentcli eval` session")] = False,
    json_: Annotated[bool, typer.Option(
        "--json", help="dump the session's events as JSON")] = False,
) -> None:
    """Replay a session: questions, text, every tool call (input, result, error, duration), drafts, stops, usage.

    Examples:

    \b
      agentcli log show last
      agentcli log show 20261130-142501 --errors
    """

    def body() -> int:
        path = open_session(sessions_dir(), session, include_eval=all_)
        warnings: list[str] = []
        try:
            events = list(read_events(path, warnings))
        except OSError as e:

            raise UsageError(f"cannot read session log {path}: {e.strerror}") from None
        warn(warnings)
        shown = filter_events(events, tool=tool, errors_only=errors)
        if json_:
            dump_json({"session_id": path.stem, "path": str(path), "warnings": warnings, "events": shown})
            return 0
        _replay(path, events, shown, tool=tool, errors=errors)
        return 0

    raise typer.Exit(run(body))


def _mcp_line(ev: dict[str, Any]) -> tuple[str, str] | None:
    """The line of an ``agentcli mcp`` record (the client, a message refused, how the session
    ended), or None for any other record."""
    def w(key: str, fmt: str = "{}") -> str:
        v = ev.get(key)
        return fmt.format(flat(v)) if isinstance(v, (str, int)) and not isinstance(v, bool) else ""

    t = ev.get("type")
    if t == "mcp_client":
        return f"MCP client {w('name')} {w('version')}{w('protocol_version', ' (protocol {})')}", "dim"
    if t == "mcp_protocol_error":
        return f"✗ protocol error {w('code')}: {w('message')}{w('request_id', ' (request {})')}", "yellow"
    if t == "session_end":
        return (f"■ session ended: {w('reason')}{w('calls', ' · {} call(s)')}{w('status', ' · status {}')}",
                "dim" if ev.get("status") == "ok" else "yellow")
    return None


def _replay(path: Path, events: list[dict[str, Any]], shown: list[dict[str, Any]], *,
            tool: Optional[str], errors: bool) -> None:


    c = out_console()
    r = TraceRenderer(c, live=True, quiet=False, err_console=c)
    s = summarise(path.stem, events, path)
    bad: list[str] = []

    def line(text: str, style: str = "") -> None:
        r.close()  # end a half-written text line first
        t = Text(clean_for_terminal(text), style=style)
        if c.is_terminal:  # wrapped at words: no id or path broken by the terminal
            print_lines(c, wrapped(c, t, c.width, 2))
        else:
            c.print(t, soft_wrap=True, highlight=False)

    def show(ev: dict[str, Any]) -> None:
        t = ev.get("type")
        if t == "session_start":
            meta = [f"session {flat(ev.get('session_id') or path.stem)}",
                    f"started {format_time(s.started_at)}",
                    f"{flat(ev.get('provider'))}/{flat(ev.get('model'))}"]
            if ev.get("customer"):
                meta.append(f"customer {flat(ev.get('customer'))}")
            if s.origin:
                meta.append(f"origin {flat(s.origin)}")
            if ev.get("mode") in ("agent", "workflow"):
                meta.append(f"mode {ev['mode']}")
            line(" · ".join(meta), "bold")
            drafts = (f"drafts {flat(ev['drafts_dir'])}" + (" (a temporary folder, deleted after the run)"
                                                             if s.drafts_deleted else "")
                      if ev.get("drafts_dir") else None)
            extra = [f"db {flat(ev['db'])}" if ev.get("db") else None, drafts]
            if any(extra):
                line("  " + " · ".join(x for x in extra if x), "dim")
            return
        if t == "cancelled":
            line(f"✗ cancelled: {flat(ev.get('message') or 'cancelled by the person')}", "bold yellow")
            return
        mcp = _mcp_line(ev)
        if mcp is not None:
            line(*mcp)
            return
        try:
            obj = rebuild(ev)
        except ValueError as e:
            bad.append(f"{path.name}: {e}; skipped")
            return
        if obj is None:
            return
        if t == "question":
            c.print()
            who = f"  [customer {flat(obj.customer)}]" if obj.customer else ""
            # a question may hold several lines: each one after the first indented, so none
            # starts at the left edge and passes for a trace line ("✓ …") of our own
            asked = "\n  ".join(clean_for_terminal(str(obj.text)).splitlines() or [""])
            line(f"? {asked}{who}", "bold")
        r(obj)
        if t == "turn_finished":
            u = obj.usage or {}
            if not isinstance(u, dict):
                raise TypeError("usage is not an object")
            parts = [f"■ {flat(obj.status)} ({flat(obj.stop_reason)})", f"{obj.turns} model call{'s' if obj.turns != 1 else ''}",
                     f"tokens in {token_count(u.get('input_tokens'))} / out "
                     f"{token_count(u.get('output_tokens'))}"]
            cache = (token_count(u.get("cache_read_input_tokens")),
                     token_count(u.get("cache_creation_input_tokens")))
            if any(cache):
                parts.append(f"cache read {cache[0]} / written {cache[1]}")
            if obj.status not in ("ok", "incomplete") and obj.message:
                parts.append(flat(obj.message))
            line(" · ".join(parts), "dim" if obj.status == "ok" else "yellow")

    for ev in shown:
        try:
            show(ev)
        except (TypeError, AttributeError, ValueError, KeyError) as e:  # a hand-edited or foreign log
            bad.append(f"{path.name}: a {clean_for_terminal(str(ev.get('type')))[:40]} record is damaged "
                       f"({type(e).__name__}); skipped")
    r.close()
    c.print()
    total = f"{s.questions} question{'s' if s.questions != 1 else ''} · {s.tool_calls} tool call" \
            f"{'s' if s.tool_calls != 1 else ''} ({s.tool_errors} failed) · {len(s.drafts)} draft" \
            f"{'s' if len(s.drafts) != 1 else ''} · status {s.status}"
    if tool or errors:
        n = sum(1 for e in shown if e.get("type") == "tool_result")
        what = " and ".join(x for x in (f"tool {tool}" if tool else "", "failed calls" if errors else "") if x)
        total += f" · showing {n} tool call{'s' if n != 1 else ''} ({what})"
    line(total, "dim")
    warn(bad)
