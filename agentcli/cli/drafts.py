"""``agentcli drafts``: the human review queue (list, show, approve, reject). Nothing is sent.

Cold start matters for ``drafts list``: only typer and the standard library load with this module;
the queue logic (``review``) and rich are imported inside the command bodies.
"""


import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..stdio import isatty
from .common import dump_json, out_console, run, tsv, warn
from .options import Json, PlainUsage

drafts_app = typer.Typer(help="The human review queue for drafts (nothing is ever sent).",
                         no_args_is_help=True)

DraftsDirOpt = Annotated[Optional[Path], typer.Option(
    "--drafts-dir", help="the drafts directory [env AGENTCLI_DRAFTS_DIR; default ./drafts]",
    show_default=False, metavar="DIR")]
DraftId = Annotated[str, typer.Argument(help="draft id (d-3f2a9c1b7e04) or a unique prefix of it",
                                        show_default=False, metavar="ID")]


def register(app: typer.Typer) -> None:
    app.add_typer(drafts_app, name="drafts", short_help="The review queue of drafts (nothing is ever sent).")


def _store(flag: Optional[Path]):
    """The drafts store, its folder resolved like every command's (flag > env > agentcli.toml)."""
    from ..config import resolve_drafts_dir
    from ..drafts import DraftStore

    return DraftStore(resolve_drafts_dir(flag))


@drafts_app.command("list", short_help="List drafts, newest first.")
def drafts_list(
    status: Annotated[Optional[str], typer.Option(
        "--status", help="pending_review (or pending), approved or rejected", show_default=False,
        metavar="STATUS")] = None,
    order: Annotated[Optional[str], typer.Option("--order", help="only drafts about this order code",
                                                 show_default=False, metavar="CODE")] = None,
    customer: Annotated[Optional[str], typer.Option("--customer", help="only drafts for this customer email",
                                                    show_default=False, metavar="EMAIL")] = None,
    since: Annotated[Optional[str], typer.Option(
        "--since", help="created since a date (2026-11-30), a time, or an age (30m, 12h, 7d, 2w)",
        show_default=False, metavar="WHEN")] = None,
    limit: Annotated[Optional[int], typer.Option("-n", "--limit", min=1, help="show at most N drafts",
                                                 show_default=False, metavar="N")] = None,
    drafts_dir: DraftsDirOpt = None,
    json_: Json = False,
) -> None:
    """List drafts, newest first (a table on a terminal, tab-separated lines in a pipe).

    Examples:

    \b
      agentcli drafts list --status pending --since 1d
      agentcli drafts list --order ORD-20261234 --json
    """

    def body() -> int:
        from ..review import list_drafts, normalise_status, parse_since

        store = _store(drafts_dir)
        st = normalise_status(status)
        since_dt = parse_since(since)
        warnings: list[str] = []
        drafts = list_drafts(store, status=st, order=order, customer=customer, since=since_dt,
                             limit=limit, warnings=warnings)
        warn(warnings)
        if json_:
            dump_json([d.record() for d in drafts])
            return 0
        if not drafts:
            filtered = any(v is not None for v in (status, order, customer, since))
            sys.stderr.write(f"agentcli: no drafts{' match' if filtered else ''} in {store.dir}\n")
            return 0
        if isatty(sys.stdout):
            _drafts_table(drafts, store.dir)
        else:
            for d in drafts:
                m = d.meta
                sys.stdout.write(tsv(d.id, m.get("status"), m.get("created_at"), m.get("order_code") or "-",
                                      m.get("customer") or "-", "edited" if d.edited else "-", d.text) + "\n")
        return 0

    raise typer.Exit(run(body))


_STATUS_STYLE = {"pending_review": "yellow", "approved": "green", "rejected": "red"}


def _drafts_table(drafts: list, directory: Path) -> None:
    from rich.table import Table
    from rich.text import Text

    from ..text import format_time, one_line

    t = Table(title=f"{len(drafts)} draft{'s' if len(drafts) != 1 else ''} in {directory}",
              title_justify="left", header_style="bold")
    for col in ("id", "status", "created", "order", "customer", "reviewed by", "text"):
        t.add_column(col, overflow="fold" if col == "text" else "ellipsis",
                     no_wrap=col != "text")
    for d in drafts:
        m = d.meta
        st = str(m.get("status") or "?")
        status = Text(st, style=_STATUS_STYLE.get(st, ""))
        if d.edited:
            status.append(" ✎ edited", style="magenta")
        t.add_row(d.id, status, format_time(m.get("created_at")), Text(one_line(m.get("order_code") or "—", 20)),
                  Text(one_line(m.get("customer") or "—", 32)), Text(one_line(m.get("reviewed_by") or "—", 20)),
                  Text(one_line(d.text, 70)))
    out_console().print(t)


@drafts_app.command("show", cls=PlainUsage, short_help="Show a draft: text, metadata, provenance.")
def drafts_show(did: DraftId, drafts_dir: DraftsDirOpt = None, json_: Json = False) -> None:
    """Show a draft: its text, metadata, and provenance (the question and the tool calls it relied on).

    Example:

    \b
      agentcli drafts show d-3f2a9c1b7e04
    """

    def body() -> int:
        from ..config import sessions_dir
        from ..review import provenance, resolve_draft_id

        store = _store(drafts_dir)
        d = store.get(resolve_draft_id(store, did))
        prov = provenance(d, sessions_dir())
        warn(prov.get("warnings") or [])
        if json_:
            dump_json({**d.record(), "provenance": prov})
            return 0
        _print_draft(d, prov)
        return 0

    raise typer.Exit(run(body))


def _print_draft(d: Any, prov: dict[str, Any]) -> None:
    import difflib

    from rich.text import Text

    from ..redact import clean_for_terminal
    from ..render import tool_call_line, tool_result_line
    from ..text import format_time

    c = out_console()
    m = d.meta

    def line(text: str, style: str = "") -> None:
        c.print(Text(clean_for_terminal(text), style=style), soft_wrap=True, highlight=False)

    st = clean_for_terminal(str(m.get("status") or "?"))  # parse() checked both; belt and braces
    head = Text(f"draft {clean_for_terminal(d.id)} · ", style="bold")
    head.append(st, style="bold " + _STATUS_STYLE.get(st, ""))
    if d.edited:
        head.append(" · ✎ EDITED by hand after it was saved", style="bold magenta")
    c.print(head, soft_wrap=True, highlight=False)
    fields = [("created", format_time(m.get("created_at")) + f"  ({m.get('created_at')})"),
              ("order", m.get("order_code")), ("customer", m.get("customer")),
              ("model", f"{m.get('model')} ({m.get('provider')})" if m.get("model") else None),
              ("session", m.get("session_id")), ("file", str(d.path))]
    if m.get("reviewed_at"):
        fields.append(("reviewed", f"{m.get('status')} by {m.get('reviewed_by')} at {m.get('reviewed_at')}"))
    if m.get("review_reason"):
        fields.append(("reason", m.get("review_reason")))
    for k, v in fields:
        line(f"  {k:<9} {'—' if v in (None, '') else v}")

    c.print()
    line("provenance", "bold")
    q = prov.get("question") if prov.get("found") else m.get("question")
    line(f"  question: {q if q else '—'}")
    if prov.get("found"):
        calls = prov.get("tool_calls") or []
        if not calls:
            line("  tool calls: none before the draft (nothing was looked up)", "yellow")
        for call in calls:
            text, style = tool_call_line(call.get("name"), call.get("input"))
            line("  " + text, style)
            text, style = tool_result_line(call.get("name"), call.get("outcome"), bool(call.get("is_error")),
                                           call.get("duration_ms"), call.get("result"))
            line("  " + text, style)
        line(f"  (from session log {prov.get('session_id')}: agentcli log show {prov.get('session_id')})", "dim")
    else:
        line(f"  {prov.get('note')}", "yellow")

    c.print()
    line("text" + (" (as edited)" if d.edited else ""), "bold")
    c.file.write(clean_for_terminal(d.text))
    if not d.text.endswith("\n"):
        c.file.write("\n")
    c.file.flush()
    orig = prov.get("original_text")
    if d.edited and isinstance(orig, str):
        c.print()
        line("edit (model's text → file)", "bold magenta")
        for dl in difflib.unified_diff(orig.splitlines(), d.text.splitlines(), "model", "file",
                                       lineterm="", n=1):
            style = "green" if dl.startswith("+") else "red" if dl.startswith("-") else "dim"
            line(dl, style)
    c.print()
    line("nothing has been sent" + (f"; review with: agentcli drafts approve {d.id}  |  "
                                    f"agentcli drafts reject {d.id} --reason ..."
                                    if st == "pending_review" else ""), "dim")


def _review(did: str, status: str, drafts_dir: Optional[Path], reason: Optional[str]) -> None:
    def body() -> int:
        from ..redact import clean_for_terminal
        from ..review import review

        store = _store(drafts_dir)
        res = review(store, did, status, reason=reason)
        d = res.draft
        m = d.meta
        verb = "approved" if status == "approved" else "rejected"
        if not res.changed:
            sys.stderr.write(clean_for_terminal(
                f"agentcli: note: {d.id} is already {verb} (by {m.get('reviewed_by') or '?'} at "
                f"{m.get('reviewed_at') or '?'}); nothing changed\n"))
            return 0
        was = f" (was {res.previous})" if res.previous and res.previous != "pending_review" else ""
        extra = " — the file keeps its hand edit" if d.edited else ""
        tail = ("nothing was sent: copy the text into your helpdesk to reply"
                if status == "approved" else "nothing was sent")
        sys.stdout.write(clean_for_terminal(
            f"{verb} {d.id}{was} by {m.get('reviewed_by')} at {m.get('reviewed_at')}{extra}; {tail}\n"))
        return 0

    raise typer.Exit(run(body))


@drafts_app.command("approve", cls=PlainUsage, short_help="Mark a draft approved (nothing is sent).")
def drafts_approve(did: DraftId, drafts_dir: DraftsDirOpt = None) -> None:
    """Mark a draft approved (in place, atomically; reviewer from $USER). Nothing is sent.

    Example:

    \b
      agentcli drafts approve d-3f2a
    """
    _review(did, "approved", drafts_dir, None)


@drafts_app.command("reject", cls=PlainUsage, short_help="Mark a draft rejected, with a reason.")
def drafts_reject(
    did: DraftId, drafts_dir: DraftsDirOpt = None,
    reason: Annotated[Optional[str], typer.Option("--reason", help="why (kept in the draft file)",
                                                  show_default=False, metavar="TEXT")] = None,
) -> None:
    """Mark a draft rejected, with an optional reason. Nothing is sent.

    Example:

    \b
      agentcli drafts reject d-3f2a --reason "wrong date"
    """
    _review(did, "rejected", drafts_dir, reason)
