"""``agentcli drafts`` (the review queue), ``agentcli log`` (session replay) and ``agentcli eval``.

Cold start matters for ``drafts list`` and ``log list``: this module imports only typer and the
standard library at load time; the queue and replay logic (``review``), rich, the loop and the
providers are imported inside the command bodies that use them.
"""

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .cli_common import (Customer, Db, DraftsDir, Json, MaxTurns, Model, NoStream, Provider, Quiet,
                         RequestTimeout, Retries, ToolTimeout, error_line, out_console, run)

drafts_app = typer.Typer(help="The human review queue for drafts (nothing is ever sent).",
                         no_args_is_help=True)
log_app = typer.Typer(help="Past sessions, re-rendered with every tool call and result.",
                      no_args_is_help=True)

DraftsDirOpt = Annotated[Optional[Path], typer.Option(
    "--drafts-dir", help="the drafts directory [env AGENTCLI_DRAFTS_DIR; default ./drafts]",
    show_default=False)]
DraftId = Annotated[str, typer.Argument(help="draft id (d-3f2a9c1b7e04) or a unique prefix of it",
                                        show_default=False)]


def register(app: typer.Typer) -> None:
    app.add_typer(drafts_app, name="drafts")
    app.add_typer(log_app, name="log")
    app.command("eval")(eval_cmd)


# --------------------------------------------------------------------------- helpers

def _drafts_store(flag: Optional[Path]):
    from .drafts import DraftStore

    if flag is not None:
        return DraftStore(Path(flag).expanduser())
    env = os.environ.get("AGENTCLI_DRAFTS_DIR")
    if env:
        return DraftStore(Path(env).expanduser())
    from .config import load_config_file

    cfg = load_config_file().get("drafts_dir")
    return DraftStore(Path(str(cfg)).expanduser() if cfg else Path("drafts"))


def _warn(lines: list[str]) -> None:
    from .redact import clean_for_terminal

    for w in lines:
        sys.stderr.write(f"agentcli: warning: {clean_for_terminal(w)}\n")
    sys.stderr.flush()


def _is_tty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _dump(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=None) + "\n")
    sys.stdout.flush()


def _tsv(*cells: Any) -> str:
    from .review import one_line

    return "\t".join(one_line("" if c is None else c, 200).replace("\t", " ") for c in cells)


# =========================================================================== drafts

@drafts_app.command("list")
def drafts_list(
    status: Annotated[Optional[str], typer.Option(
        "--status", help="pending_review (or pending), approved or rejected", show_default=False)] = None,
    order: Annotated[Optional[str], typer.Option("--order", help="only drafts about this order code",
                                                 show_default=False)] = None,
    customer: Annotated[Optional[str], typer.Option("--customer", help="only drafts for this customer email",
                                                    show_default=False)] = None,
    since: Annotated[Optional[str], typer.Option(
        "--since", help="created since a date (2026-11-30), a time, or an age (30m, 12h, 7d, 2w)",
        show_default=False)] = None,
    limit: Annotated[Optional[int], typer.Option("-n", "--limit", min=1, help="show at most N drafts",
                                                 show_default=False)] = None,
    drafts_dir: DraftsDirOpt = None,
    json_: Json = False,
) -> None:
    """List drafts, newest first (a table on a terminal, tab-separated lines in a pipe)."""

    def body() -> int:
        from .review import list_drafts, normalise_status, parse_since

        store = _drafts_store(drafts_dir)
        st = normalise_status(status)
        since_dt = parse_since(since)
        warnings: list[str] = []
        drafts = list_drafts(store, status=st, order=order, customer=customer, since=since_dt,
                             limit=limit, warnings=warnings)
        _warn(warnings)
        if json_:
            _dump([d.record() for d in drafts])
            return 0
        if not drafts:
            filtered = any(v is not None for v in (status, order, customer, since))
            sys.stderr.write(f"agentcli: no drafts{' match' if filtered else ''} in {store.dir}\n")
            return 0
        if _is_tty():
            _drafts_table(drafts, store.dir)
        else:
            for d in drafts:
                m = d.meta
                sys.stdout.write(_tsv(d.id, m.get("status"), m.get("created_at"), m.get("order_code") or "-",
                                      m.get("customer") or "-", "edited" if d.edited else "-", d.text) + "\n")
        return 0

    raise typer.Exit(run(body))


_STATUS_STYLE = {"pending_review": "yellow", "approved": "green", "rejected": "red"}


def _drafts_table(drafts: list, directory: Path) -> None:
    from rich.table import Table
    from rich.text import Text

    from .review import format_time, one_line

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


@drafts_app.command("show")
def drafts_show(did: DraftId, drafts_dir: DraftsDirOpt = None, json_: Json = False) -> None:
    """Show a draft: its text, metadata, and provenance (the question and the tool calls it relied on)."""

    def body() -> int:
        from .config import sessions_dir
        from .review import provenance, resolve_draft_id

        store = _drafts_store(drafts_dir)
        d = store.get(resolve_draft_id(store, did))
        prov = provenance(d, sessions_dir())
        _warn(prov.get("warnings") or [])
        if json_:
            _dump({**d.record(), "provenance": prov})
            return 0
        _print_draft(d, prov)
        return 0

    raise typer.Exit(run(body))


def _print_draft(d: Any, prov: dict[str, Any]) -> None:
    import difflib

    from rich.text import Text

    from .redact import clean_for_terminal
    from .render import _compact
    from .review import format_time

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
            line(f"  → {call.get('name')} {_compact(call.get('input'), 300)}", "cyan")
            if call.get("is_error"):
                line(f"  ✗ {call.get('name')} {call.get('outcome')} ({call.get('duration_ms') or 0:.1f} ms): "
                     f"{_compact(call.get('result'))}", "red")
            else:
                tag = "not found" if call.get("outcome") == "not_found" else "ok"
                line(f"  ← {call.get('name')} {tag} ({call.get('duration_ms') or 0:.1f} ms): "
                     f"{_compact(call.get('result'))}", "green")
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
        from .redact import clean_for_terminal
        from .review import review

        store = _drafts_store(drafts_dir)
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


@drafts_app.command("approve")
def drafts_approve(did: DraftId, drafts_dir: DraftsDirOpt = None) -> None:
    """Mark a draft approved (in place, atomically; reviewer from $USER). Nothing is sent."""
    _review(did, "approved", drafts_dir, None)


@drafts_app.command("reject")
def drafts_reject(
    did: DraftId, drafts_dir: DraftsDirOpt = None,
    reason: Annotated[Optional[str], typer.Option("--reason", help="why (kept in the draft file)",
                                                  show_default=False)] = None,
) -> None:
    """Mark a draft rejected, with an optional reason. Nothing is sent."""
    _review(did, "rejected", drafts_dir, reason)


# =========================================================================== log

ToolFilter = Annotated[Optional[str], typer.Option("--tool", help="only tool calls of this tool",
                                                   show_default=False)]
ErrorsFilter = Annotated[bool, typer.Option("--errors", help="only failed tool calls (list: sessions "
                                            "with a failure)")]


@log_app.command("list")
def log_list(
    tool: ToolFilter = None, errors: ErrorsFilter = False,
    limit: Annotated[int, typer.Option("-n", "--limit", min=0, help="show at most N sessions (0: all)")] = 20,
    json_: Json = False,
) -> None:
    """Past sessions, newest first: id, start, first question, provider/model, tool calls, drafts, status."""

    def body() -> int:
        from .config import sessions_dir
        from .review import list_sessions

        d = sessions_dir()
        warnings: list[str] = []
        sessions = list_sessions(d, tool=tool, errors_only=errors, limit=limit or None, warnings=warnings)
        _warn(warnings)
        if json_:
            _dump([s.record() for s in sessions])
            return 0
        if not sessions:
            sys.stderr.write(f"agentcli: no sessions{' match' if tool or errors else ''} in {d}\n")
            return 0
        if _is_tty():
            _sessions_table(sessions, d)
        else:
            from .review import format_time

            for s in sessions:
                sys.stdout.write(_tsv(s.id, format_time(s.started_at), f"{s.provider}/{s.model}",
                                      s.questions, s.tool_calls, s.tool_errors, len(s.drafts), s.status,
                                      s.question) + "\n")
        return 0

    raise typer.Exit(run(body))


_SESSION_STYLE = {"ok": "green", "incomplete": "yellow", "unfinished": "yellow", "cancelled": "yellow",
                  "error": "red"}


def _sessions_table(sessions: list, directory: Path) -> None:
    from rich.table import Table
    from rich.text import Text

    from .review import format_time, one_line

    t = Table(title=f"sessions in {directory} (newest first)", title_justify="left", header_style="bold")
    for col in ("session", "started", "question", "provider/model", "tools", "drafts", "status"):
        t.add_column(col, no_wrap=col != "question", overflow="fold" if col == "question" else "ellipsis")
    for s in sessions:
        tools = str(s.tool_calls) + (f" ({s.tool_errors} failed)" if s.tool_errors else "")
        q = one_line(s.question or "—", 60) + (f"  (+{s.questions - 1})" if s.questions > 1 else "")
        t.add_row(s.id, format_time(s.started_at), Text(q), Text(one_line(f"{s.provider}/{s.model}", 32)),
                  Text(tools, style="red" if s.tool_errors else ""), str(len(s.drafts)),
                  Text(s.status, style=_SESSION_STYLE.get(s.status, "")))
    out_console().print(t)


@log_app.command("show")
def log_show(
    session: Annotated[str, typer.Argument(help="session id (or a unique prefix, `last`, or a .jsonl path)",
                                           show_default=False)],
    tool: ToolFilter = None, errors: ErrorsFilter = False, json_: Annotated[bool, typer.Option(
        "--json", help="dump the session's events as JSON")] = False,
) -> None:
    """Replay a session: questions, text, every tool call (input, result, error, duration), drafts, stops, usage."""

    def body() -> int:
        from .config import sessions_dir
        from .review import filter_events, open_session
        from .sessions import read_events

        path = open_session(sessions_dir(), session)
        warnings: list[str] = []
        try:
            events = list(read_events(path, warnings))
        except OSError as e:
            from .errors import UsageError

            raise UsageError(f"cannot read session log {path}: {e.strerror}") from None
        _warn(warnings)
        shown = filter_events(events, tool=tool, errors_only=errors)
        if json_:
            _dump({"session_id": path.stem, "path": str(path), "warnings": warnings, "events": shown})
            return 0
        _replay(path, events, shown, tool=tool, errors=errors)
        return 0

    raise typer.Exit(run(body))


def _replay(path: Path, events: list[dict[str, Any]], shown: list[dict[str, Any]], *,
            tool: Optional[str], errors: bool) -> None:
    from rich.text import Text

    from .redact import clean_for_terminal
    from .render import TraceRenderer
    from .review import format_time, rebuild, summarise

    c = out_console()
    r = TraceRenderer(c, live=True, quiet=False, err_console=c)
    s = summarise(path.stem, events, path)
    bad: list[str] = []

    def line(text: str, style: str = "") -> None:
        r.close()  # end a half-written text line first
        c.print(Text(clean_for_terminal(text), style=style), soft_wrap=True, highlight=False)

    def show(ev: dict[str, Any]) -> None:
        t = ev.get("type")
        if t == "session_start":
            meta = [f"session {ev.get('session_id') or path.stem}", f"started {format_time(s.started_at)}",
                    f"{ev.get('provider')}/{ev.get('model')}"]
            if ev.get("customer"):
                meta.append(f"customer {ev.get('customer')}")
            line(" · ".join(meta), "bold")
            extra = [f"db {ev['db']}" if ev.get("db") else None,
                     f"drafts {ev['drafts_dir']}" if ev.get("drafts_dir") else None]
            if any(extra):
                line("  " + " · ".join(x for x in extra if x), "dim")
            return
        if t == "cancelled":
            line(f"✗ cancelled: {ev.get('message') or 'cancelled by the person'}", "bold yellow")
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
            who = f"  [customer {obj.customer}]" if obj.customer else ""
            line(f"? {obj.text}{who}", "bold")
        r(obj)
        if t == "turn_finished":
            u = obj.usage or {}
            parts = [f"■ {obj.status} ({obj.stop_reason})", f"{obj.turns} model call{'s' if obj.turns != 1 else ''}",
                     f"tokens in {int(u.get('input_tokens') or 0)} / out {int(u.get('output_tokens') or 0)}"]
            cache = int(u.get("cache_read_input_tokens") or 0), int(u.get("cache_creation_input_tokens") or 0)
            if any(cache):
                parts.append(f"cache read {cache[0]} / written {cache[1]}")
            if obj.status not in ("ok", "incomplete") and obj.message:
                parts.append(obj.message)
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
    _warn(bad)


# =========================================================================== eval

def eval_cmd(
    cases: Annotated[Optional[Path], typer.Option(
        "--cases", help="a JSON Lines file of your own tasks (same format as the built-in suite)",
        show_default=False)] = None,
    repeat: Annotated[int, typer.Option("--repeat", min=1, max=100,
                                        help="run each task K times (flaky-model statistics)")] = 1,
    task: Annotated[Optional[list[str]], typer.Option(
        "--task", help="run only this task id (repeatable; shell-style wildcards)", show_default=False)] = None,
    list_: Annotated[bool, typer.Option("--list", help="list the tasks and exit")] = False,
    provider: Provider = None, model: Model = None, db: Db = None, drafts_dir: DraftsDir = None,
    customer: Customer = None, max_turns: MaxTurns = None, tool_timeout: ToolTimeout = None,
    request_timeout: RequestTimeout = None, retries: Retries = None, json_: Json = False,
    quiet: Quiet = False, no_stream: NoStream = False,
) -> None:
    """Run the built-in support tasks (or --cases FILE) against the configured model and score them.

    Built-in tasks run on the demo database unless --db is given; drafts go to a temporary
    directory unless --drafts-dir is given. Exit 1 when any task fails.
    """

    def body():
        from . import evals

        suite = evals.load_cases(cases) if cases is not None else evals.builtin_cases()
        suite = evals.select(suite, task)
        if list_:
            return _list_cases(suite, json_)
        return _eval(suite, source=str(cases) if cases is not None else "built-in",
                     flags=dict(provider=provider, model=model, db=db, drafts_dir=drafts_dir,
                                max_turns=max_turns, tool_timeout=tool_timeout,
                                request_timeout=request_timeout, retries=retries,
                                json=json_, quiet=quiet, no_stream=no_stream),
                     builtin=cases is None, customer=customer, repeat=repeat)

    raise typer.Exit(run(body))


def _list_cases(suite: list, json_out: bool) -> int:
    if json_out:
        _dump([c.record() for c in suite])
        return 0
    for c in suite:
        sys.stdout.write(_tsv(c.id, "needs a model" if c.needs_model else "offline ok",
                              c.customer or "-", c.description or c.question) + "\n")
    return 0


async def _eval(suite: list, *, source: str, flags: dict[str, Any], builtin: bool,
                customer: Optional[str], repeat: int) -> int:
    import tempfile

    from . import evals
    from .app import App
    from .cli_common import offline_notice, settings_from

    settings = settings_from(customer=customer, **flags)
    # --customer / AGENTCLI_CUSTOMER only fill in cases that name no customer; each conversation
    # gets its case's customer explicitly, never the settings' one.
    default_customer = settings.customer
    settings = settings.with_(customer=None)
    if builtin and flags.get("db") is None:
        settings = settings.with_(db=None)  # the built-in tasks are about the demo database
    tmp = None
    if flags.get("drafts_dir") is None:
        # Eval drafts must not land in the team's review queue.
        tmp = tempfile.TemporaryDirectory(prefix="agentcli-eval-drafts-")
        settings = settings.with_(drafts_dir=Path(tmp.name))
    offline_notice(settings)
    application = App.open(settings)
    try:
        def show_progress(n: int, total: int, rr: Any) -> None:
            word = "skip" if rr.score.skipped else "pass" if rr.passed else "FAIL"
            sys.stderr.write(f"\r[{n}/{total}] {rr.case.id}: {word}\x1b[K")
            sys.stderr.flush()

        interactive = not flags.get("json") and not flags.get("quiet") and sys.stderr.isatty()
        progress = show_progress if interactive else None
        per_case, fatal = await evals.run_suite(application, suite, repeat=repeat,
                                                default_customer=default_customer, progress=progress)
        if progress is not None:
            sys.stderr.write("\r\x1b[K")
        provider_name, model_name = application.provider.name, application.provider.model
        db_desc = application.db_description
    finally:
        await application.aclose()
        if tmp is not None:
            tmp.cleanup()
    summary = evals.summarise(per_case)
    api_failed = [r for runs in per_case for r in runs if r.api_error]
    code = 4 if (fatal or api_failed) else (1 if summary["failed"] else 0)
    summary["exit_code"] = code
    if flags.get("json"):
        _dump({"provider": provider_name, "model": model_name, "db": db_desc, "cases": source,
               "repeat": repeat, "tasks": [evals.task_record(runs) for runs in per_case if runs],
               "summary": summary})
    else:
        _eval_table(per_case, summary, provider_name, model_name, repeat, source)
    if fatal:
        error_line(f"eval stopped: {fatal}")
    elif api_failed:
        error_line(f"{len(api_failed)} run(s) failed because the model API failed: "
                   f"{api_failed[0].api_error}")
    return code


def _eval_table(per_case: list, summary: dict[str, Any], provider: str, model: str, repeat: int,
                source: str) -> None:
    from collections import Counter

    from rich.table import Table
    from rich.text import Text

    from .redact import clean_for_terminal

    t = Table(title=f"eval: {source} tasks · {provider}/{model}" + (f" · ×{repeat}" if repeat > 1 else ""),
              title_justify="left", header_style="bold")
    t.add_column("task", no_wrap=True)
    t.add_column("result", no_wrap=True)
    t.add_column("reasons", overflow="fold")
    for col in ("turns", "tokens", "time"):
        t.add_column(col, justify="right", no_wrap=True)
    for runs in per_case:
        if not runs:
            continue
        case = runs[0].case
        if all(r.score.skipped for r in runs):
            t.add_row(case.id, Text("skip", style="dim"), Text(runs[0].score.skip_reason or "", style="dim"),
                      "—", "—", "—")
            continue
        ok = sum(r.passed for r in runs)
        if repeat == 1:
            res = Text("PASS", style="green") if ok else Text("FAIL", style="bold red")
        else:
            res = Text(f"{ok}/{len(runs)}", style="green" if ok == len(runs) else "bold red")
        reasons = Counter(reason for r in runs for reason in r.score.reasons)
        rtext = "; ".join(f"{clean_for_terminal(k)}" + (f" (×{n})" if repeat > 1 else "")
                          for k, n in reasons.items())
        n = len(runs)
        turns = sum(int((r.result or {}).get("turns") or 0) for r in runs) / n
        tok = sum(int(((r.result or {}).get("usage") or {}).get("input_tokens") or 0)
                  + int(((r.result or {}).get("usage") or {}).get("output_tokens") or 0) for r in runs) / n
        secs = sum(r.time_s for r in runs) / n
        fmt = (lambda v: f"{v:.1f}") if repeat > 1 else (lambda v: f"{v:.0f}")
        t.add_row(case.id, res, Text(rtext), fmt(turns), fmt(tok), f"{secs:.2f} s")
    c = out_console()
    c.print(t)
    s = summary
    line = (f"{s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped of {s['tasks']} tasks")
    if repeat > 1 and s["runs"]:
        line += f" · {s['runs_passed']}/{s['runs']} runs passed ({100 * s['pass_rate']:.0f}%)"
    line += f" · {s['tokens']} tokens · {s['time_s']:.2f} s"
    c.print(Text(line, style="bold green" if not s["failed"] else "bold red"))
    if s["skipped"]:
        c.print(Text(f"{s['skipped']} task(s) need a language model and were skipped under the offline "
                     "provider; run with --provider anthropic (or openai) to score them", style="dim"))
