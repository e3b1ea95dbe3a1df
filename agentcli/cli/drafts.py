"""``agentcli drafts``: the human review queue (list, show, edit, approve, reject) and the way into
the helpdesk (export, push: as internal notes or drafts; nothing is ever sent to a customer).

Cold start matters for ``drafts list``: only typer and the standard library load with this module;
the queue logic (``review``) and rich are imported inside the command bodies. The bodies live in
``drafts_list`` (list output), ``drafts_show`` (show, edit) and ``drafts_review`` (approve/reject).
"""


import sys
from pathlib import Path
from typing import Annotated, Any, Callable, List, Optional

import typer

from ..config import DRAFTS, HELPDESK
from ..drafts.queue import damaged_record, query, require_folder, store_for
from ..errors import UsageError
from ..redact import one_line
from ..stdio import isatty
from .common import dump_json, err_console, lock_notice, run, warn
from .drafts_admin import migrate_body, schema_body, stats_body
from .drafts_helpdesk import export_body, push_body
from .drafts_list import print_table, write_pipe
from .drafts_review import decide
from .drafts_show import edit_body, show_body
from .options import PlainUsage, option
from .recheck import Rechecker, select_fresh

drafts_app = typer.Typer(help="The human review queue for drafts, and their way into the helpdesk "
                                "as internal notes or drafts (nothing is ever sent to a customer).",
                         no_args_is_help=True)

DraftsDirOpt, Json = option("drafts_dir", DRAFTS), option("json", DRAFTS)
DraftsUrlOpt = option("drafts_url", DRAFTS)
TERMINAL_PAGE = 100  # drafts a terminal shows at once unless --limit says otherwise


def page_note(first: int, shown: int, page: int, more: bool, size: int | None) -> str:
    """"drafts 51–100; more: --page 3" ("" for a whole list)."""
    if not size or (page == 1 and not more):
        return ""
    last = first + shown - 1
    what = f"drafts {first}–{last}" if shown > 1 else f"draft {first}"
    return what + (f"; more: --page {page + 1}" + ("" if size == TERMINAL_PAGE else f" --limit {size}")
                   if more else "; the last page")
DraftId = Annotated[str, typer.Argument(help="draft id (d-3f2a9c1b7e04), a unique prefix of it, "
                                             "or `last`", show_default=False, metavar="ID")]
DraftIds = Annotated[Optional[List[str]], typer.Argument(
    help="draft ids (or unique prefixes); none: the drafts the filters select", show_default=False,
    metavar="ID...")]

# The filters of `drafts list`, shared by `review` and by approve/reject.
StatusOpt = Annotated[Optional[str], typer.Option(
    "--status", help="pending_review (or pending), approved, rejected or superseded", show_default=False,
    metavar="STATUS")]
OrderOpt = Annotated[Optional[str], typer.Option("--order", help="only drafts about this order code",
                                                 show_default=False, metavar="CODE")]
CustomerOpt = Annotated[Optional[str], typer.Option("--customer", help="only drafts for this customer email",
                                                    show_default=False, metavar="EMAIL")]
SinceOpt = Annotated[Optional[str], typer.Option(
    "--since", help="created since a date (2026-11-30), a time, or an age (30m, 12h, 7d, 2w)",
    show_default=False, metavar="WHEN")]
TicketFilter = Annotated[Optional[str], typer.Option("--ticket", help="only drafts of this ticket",
                                                     show_default=False, metavar="ID")]
FlaggedOpt = Annotated[bool, typer.Option("--flagged", help="only drafts with grounding findings")]
AllOpt = Annotated[bool, typer.Option("--all", help="superseded drafts too (hidden by default)")]
PushedOpt = Annotated[Optional[bool], typer.Option(
    "--pushed/--not-pushed", help="only drafts pushed to a helpdesk (drafts push) / only the others",
    show_default=False)]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="no confirmation (for scripts)")]
ForceOpt = Annotated[bool, typer.Option("--force", help="change a draft already approved, rejected "
                                                        "or superseded; approve one with error-level "
                                                        "grounding findings without asking")]
VersionOpt = Annotated[Optional[str], typer.Option(
    "--version", help="the version you were shown (drafts show prints it): refused, saying what "
                      "changed, when the draft is no longer at it", show_default=False,
    metavar="VERSION")]


def _store(flag: Optional[Path], url: Optional[str] = None):
    return store_for(flag, url)


def using(flag: Optional[Path], url: Optional[str], fn: Callable[[Any], int]) -> int:
    """``fn(store)`` with the drafts store of ``--drafts-dir`` / ``--drafts-url``, closed after
    (a queue's connections are given back)."""
    store = store_for(flag, url)
    try:
        return fn(store)
    finally:
        store.close()


def register(app: typer.Typer) -> None:
    app.add_typer(drafts_app, name="drafts", short_help="The review queue of drafts (nothing is sent to a customer).")


@drafts_app.command("list", short_help="List drafts, newest first.")
def drafts_list(
    status: StatusOpt = None, order: OrderOpt = None, customer: CustomerOpt = None,
    since: SinceOpt = None, ticket: TicketFilter = None, flagged: FlaggedOpt = False,
    all_: AllOpt = False, pushed: PushedOpt = None,
    limit: Annotated[Optional[int], typer.Option(
        "-n", "--limit", min=1, help="a page of at most N drafts (a terminal shows the first "
        f"{TERMINAL_PAGE} unless told)", show_default=False, metavar="N")] = None,
    page: Annotated[Optional[int], typer.Option(
        "--page", min=1, help="which page of --limit drafts (1: the newest)", show_default=False,
        metavar="P")] = None,
    drafts_dir: DraftsDirOpt = None, drafts_url: DraftsUrlOpt = None,
    json_: Json = False,
) -> None:
    """List drafts, newest first (a table on a terminal, tab-separated lines with a header in a
    pipe); superseded drafts only with --all; damaged files are listed as damaged. A page
    (--limit, --page) reads only its own drafts, however long the queue.

    Examples:

    \b
      agentcli drafts list --status pending --since 1d
      agentcli drafts list --ticket HD-1042 --flagged --json
      agentcli drafts list --limit 50 --page 2
      agentcli drafts list --status approved --not-pushed
    """

    def body(store) -> int:
        q = query(status, order, customer, since, ticket, flagged, all_, pushed)
        require_folder(store)
        store.on_wait = lock_notice(err_console())
        terminal = isatty(sys.stdout) and not json_
        size = limit or (TERMINAL_PAGE if terminal or page else None)
        n = page or 1
        # a text edited since its findings is checked again (--flagged selects by the new ones)
        sel = select_fresh(store, q, Rechecker(store), limit=size,
                           offset=(n - 1) * size if size else 0)
        drafts = sel.drafts
        warn([f"damaged draft file {d.path.name} ({d.reason})" for d in sel.damaged])
        if json_:
            dump_json([d.record() for d in drafts] + [damaged_record(d) for d in sel.damaged])
            return 0
        rows = [*drafts, *sel.damaged]
        if not rows:
            sys.stderr.write(f"agentcli: no drafts{' match' if q.filtered else ''} "
                             f"{'on page ' + str(n) + ' ' if n > 1 else ''}in "
                             f"{one_line(store.location, 200)}\n")
            return 0
        first = (n - 1) * size + 1 if size else 1
        span = page_note(first, len(drafts), n, sel.more, size)
        if terminal:
            print_table(rows, span=span, directory=store.location)
        else:
            write_pipe(rows)
            if span:
                sys.stderr.write(f"agentcli: {span}\n")
        return 0

    raise typer.Exit(run(lambda: using(drafts_dir, drafts_url, body)))


@drafts_app.command("show", cls=PlainUsage, short_help="Show a draft: findings, provenance, text, history.")
def drafts_show(did: DraftId, drafts_dir: DraftsDirOpt = None, drafts_url: DraftsUrlOpt = None, json_: Json = False,
                text: Annotated[bool, typer.Option("--text", help="print exactly the reply text "
                                                             "(for the clipboard or a helpdesk)")] = False) -> None:
    """Show a draft: grounding findings, its ticket's questions and the lookups it relied on, the
    text, and its review history.

    Examples:

    \b
      agentcli drafts show d-3f2a9c1b7e04
      agentcli drafts show last --text | xclip -selection clipboard
    """

    raise typer.Exit(run(lambda: using(drafts_dir, drafts_url, lambda store: show_body(
        store, did, json_=json_, text_only=text))))


@drafts_app.command("edit", cls=PlainUsage, short_help="Edit a draft's text in $VISUAL / $EDITOR.")
def drafts_edit(did: DraftId, version: VersionOpt = None, drafts_dir: DraftsDirOpt = None,
                 drafts_url: DraftsUrlOpt = None) -> None:
    """Edit a draft's text in $VISUAL or $EDITOR; the edit is kept (shown as a diff) and its
    grounding findings are checked again. A save that finds the draft changed meanwhile (a
    teammate's edit or decision) is refused and your text is kept in a file.

    Example:

    \b
      EDITOR=nano agentcli drafts edit d-3f2a
    """

    raise typer.Exit(run(lambda: using(drafts_dir, drafts_url,
                                       lambda store: edit_body(store, did, version))))


@drafts_app.command("approve", cls=PlainUsage, short_help="Mark drafts approved (nothing is sent).")
def drafts_approve(
    ids: DraftIds = None, status: StatusOpt = None, order: OrderOpt = None,
    customer: CustomerOpt = None, since: SinceOpt = None, ticket: TicketFilter = None,
    flagged: FlaggedOpt = False, yes: YesOpt = False, force: ForceOpt = False,
    version: VersionOpt = None, drafts_dir: DraftsDirOpt = None, drafts_url: DraftsUrlOpt = None,
) -> None:
    """Mark drafts approved: by id, or every draft the filters select (pending ones unless
    --status says otherwise). In place, atomically; nothing is sent. A draft with an
    error-level grounding finding is left pending by a filter; by id it asks first on a
    terminal (or needs --force).

    Examples:

    \b
      agentcli drafts approve d-3f2a
      agentcli drafts approve d-3f2a9c1b7e04 --version 5e1f0a9c2b
      agentcli drafts approve --ticket HD-1042 --yes
    """

    raise typer.Exit(run(lambda: using(drafts_dir, drafts_url, lambda store: decide(
        store, "approved", ids or [],
        (status, order, customer, since, ticket, flagged), reason=None, yes=yes, force=force,
        version=version))))


@drafts_app.command("reject", cls=PlainUsage, short_help="Mark a draft rejected, with a reason.")
def drafts_reject(
    ids: DraftIds = None,
    reason: Annotated[Optional[str], typer.Option("--reason", help="why (kept in the draft's history)",
                                                  show_default=False, metavar="TEXT")] = None,
    status: StatusOpt = None, order: OrderOpt = None,
    customer: CustomerOpt = None, since: SinceOpt = None, ticket: TicketFilter = None,
    flagged: FlaggedOpt = False, yes: YesOpt = False, force: ForceOpt = False,
    version: VersionOpt = None, drafts_dir: DraftsDirOpt = None, drafts_url: DraftsUrlOpt = None,
) -> None:
    """Mark drafts rejected, with an optional reason: by id or by filter. Nothing is sent.

    Example:

    \b
      agentcli drafts reject d-3f2a --reason "wrong delivery date"
    """

    raise typer.Exit(run(lambda: using(drafts_dir, drafts_url, lambda store: decide(
        store, "rejected", ids or [],
        (status, order, customer, since, ticket, flagged), reason=reason, yes=yes, force=force,
        version=version))))


@drafts_app.command("migrate", short_help="Create the queue's schema; copy drafts between a folder and a queue.")
def drafts_migrate(
    to: Annotated[Optional[str], typer.Option(
        "--to", help="where the drafts go: a postgresql://... queue (from the folder) or a "
                     "folder (from the queue of --drafts-url)", show_default=False,
        metavar="URL|DIR")] = None,
    schema: Annotated[bool, typer.Option(
        "--schema", help="create the queue's tables in --drafts-url (run once, as the "
                         "database's owner; an up-to-date schema is left as it is)")] = False,
    drafts_dir: DraftsDirOpt = None, drafts_url: DraftsUrlOpt = None,
) -> None:
    """Create a drafts queue's schema (--schema), or copy every draft into another store
    (--to): from the folder into a PostgreSQL queue, or from the queue of --drafts-url into a
    folder. Text byte for byte, status, history, findings, ticket and provenance; a draft
    already there is left as it is, so it can be run twice.

    Examples:

    \b
      agentcli drafts migrate --schema --drafts-url postgresql://owner@db/support
      agentcli drafts migrate --drafts-dir ./drafts --to postgresql://kim@db/support
      agentcli drafts migrate --drafts-url postgresql://kim@db/support --to ./drafts-copy
    """

    def body() -> int:
        if schema == (to is not None):
            raise UsageError("give --schema (create the queue's tables) or --to URL|DIR "
                             "(copy the drafts), one of the two")
        if schema:
            return schema_body(drafts_url)
        return using(drafts_dir, drafts_url, lambda store: migrate_body(store, to or ""))

    raise typer.Exit(run(body))


@drafts_app.command("stats", short_help="How review is going: waiting times, approvals, edits.")
def drafts_stats(since: SinceOpt = None, drafts_dir: DraftsDirOpt = None,
                 drafts_url: DraftsUrlOpt = None, json_: Json = False) -> None:
    """How review is going: pending drafts and how long they have waited (p50, p90, the
    oldest) against review_target (agentcli.toml, default 4h); approved as written, approved
    after an edit (characters changed), rejected (the reasons); per model, provider, mode,
    prompt version and reviewer. --since counts drafts created since then.

    Examples:

    \b
      agentcli drafts stats --since 7d
      agentcli drafts stats --json --drafts-url postgresql://kim@db/support
    """

    raise typer.Exit(run(lambda: using(drafts_dir, drafts_url,
                                       lambda store: stats_body(store, since=since, json_=json_))))




ToOpt = Annotated[str, typer.Option("--to", help="zendesk, front, helpscout, freshdesk (or jsonl "
                                                 "for export)", show_default=False, metavar="FORMAT")]
TimeoutOpt = option("helpdesk_timeout", HELPDESK)


@drafts_app.command("export", cls=PlainUsage,
                    short_help="Write approved drafts as helpdesk requests (sends nothing).")
def drafts_export(
    to: ToOpt, ids: DraftIds = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write to this file "
                                                   "(whole, then renamed into place) instead of "
                                                   "standard output", show_default=False,
                                                   metavar="FILE")] = None,
    again: Annotated[bool, typer.Option("--again", help="drafts already exported in this format "
                                                        "too")] = False,
    status: StatusOpt = None, order: OrderOpt = None, customer: CustomerOpt = None,
    since: SinceOpt = None, ticket: TicketFilter = None, flagged: FlaggedOpt = False,
    drafts_dir: DraftsDirOpt = None, drafts_url: DraftsUrlOpt = None,
) -> None:
    """Write, for each selected draft (default: approved and not yet exported in this format),
    one JSON object a line with exactly the request the helpdesk needs to hold it as a draft or
    an internal note: helpdesk, draft, ticket, method, path, body. Sends nothing. A draft whose
    ticket is no helpdesk ticket (saved without --ticket) is skipped, with the reason, on
    stderr. `--to jsonl` writes the helpdesk-free record (text, ticket, customer, order).
      agentcli drafts export --to zendesk
      agentcli drafts export --to jsonl --since 1d -o approved.jsonl
    """

    raise typer.Exit(run(lambda: using(drafts_dir, drafts_url, lambda store: export_body(
        store, to, ids or [], (order, customer, since, ticket, flagged),
        status=status, output=output, again=again))))


@drafts_app.command("push", cls=PlainUsage,
                    short_help="Put approved drafts into the helpdesk, never as a public reply.")
def drafts_push(
    to: ToOpt, ids: DraftIds = None,
    order: OrderOpt = None, customer: CustomerOpt = None, since: SinceOpt = None,
    ticket: TicketFilter = None, flagged: FlaggedOpt = False, timeout: TimeoutOpt = None,
    drafts_dir: DraftsDirOpt = None, drafts_url: DraftsUrlOpt = None, json_: Json = False,
) -> None:
    """Put each selected approved draft (default: every approved draft not yet pushed) into its
    helpdesk ticket as an internal note or a draft, never as a public reply: Zendesk an
    internal note (public: false), Front a shared draft, Help Scout a draft reply (draft: true),
    Freshdesk a private note (private: true). Once: a rerun, a crash or a teammate pushing at
    the same time never makes a second one; the draft's history records when, by whom, where
    and the helpdesk's id. The base URL and token come from AGENTCLI_<HELPDESK>_URL and
    AGENTCLI_<HELPDESK>_TOKEN (or <helpdesk>_url / <helpdesk>_token in agentcli.toml) and are
    never shown. Exit 0 when every selected draft is in the helpdesk, 4 when a request failed,
    1 when a draft was skipped.
      AGENTCLI_ZENDESK_URL=https://acme.zendesk.com agentcli drafts push --to zendesk
      agentcli drafts push --to front d-3f2a --json
    """

    raise typer.Exit(run(lambda: using(drafts_dir, drafts_url, lambda store: push_body(
        store, to, ids or [], (order, customer, since, ticket, flagged),
        json_=json_, timeout=timeout))))
