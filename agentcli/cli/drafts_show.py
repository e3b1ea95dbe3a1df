"""``drafts show`` (and ``--text``, ``last``) and ``drafts edit``; the draft view is shared with
``agentcli review``.

Every string from a draft file is hostile: printed as ``rich.text.Text`` (never markup) after
``clean_for_terminal``; only ``--text`` into a pipe writes the reply byte for byte.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.text import Text

from ..config import sessions_dir
from ..drafts.queue import Query, provenance, resolve_draft_id, reviewer, select
from ..errors import ConfigError, UsageError
from ..redact import clean_for_terminal
from ..stdio import isatty
from ..vocab import Outcome, ToolName, records
from .common import dump_json, format_time, out_console, warn
from .editor import run_editor
from .trace_lines import compact, result_summary, tool_call_line

_BREAKS_RE = re.compile(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+")
STATUS_STYLE = {"pending_review": "yellow", "approved": "green", "rejected": "red",
                "superseded": "dim"}


def resolve(store, token: str) -> str:
    """A draft id from an id, a unique prefix, or ``last`` (the newest draft, superseded aside)."""

    if (token or "").strip().lower() == "last":
        drafts = select(store, Query()).drafts
        if not drafts:
            raise UsageError(f"no drafts in {store.dir} (see `agentcli drafts list`)")
        return drafts[0].id
    return resolve_draft_id(store, token)


def show_body(store, token: str, *, json_: bool = False, text_only: bool = False) -> int:
    d = store.get(resolve(store, token))
    if text_only:
        if isatty(sys.stdout):

            sys.stdout.write(clean_for_terminal(d.text))
        else:
            sys.stdout.write(d.text)  # exactly the reply, for the clipboard or a helpdesk
        sys.stdout.flush()
        return 0
    prov = provenance(d, sessions_dir())
    warn(prov.get("warnings") or [])
    if json_:
        dump_json({**d.record(), "provenance": prov})
        return 0
    print_draft(out_console(), d, prov)
    return 0


def print_draft(c: Any, d: Any, prov: dict[str, Any] | None, *, footer: bool = True) -> None:
    """The whole draft for a reviewer: header, findings, ticket (questions, customer), lookups
    with results, the text (and its edit as a diff), the history."""


    m = d.meta
    prov = prov or {}

    def line(text: Any, style: str = "") -> None:
        # one line, whatever the file holds: a line break in a header field, a finding or a
        # history entry would print lines that look like ours ("findings: none", "text")
        flat = _BREAKS_RE.sub(" \u23ce ", str(text))
        c.print(Text(clean_for_terminal(flat), style=style), soft_wrap=True, highlight=False)

    st = clean_for_terminal(str(m.get("status") or "?"))
    head = Text(f"draft {clean_for_terminal(d.id)} · ", style="bold")
    head.append(st, style="bold " + STATUS_STYLE.get(st, ""))
    if d.edited:
        head.append(" · ✎ EDITED by hand after it was saved", style="bold magenta")
    if d.reopened:
        head.append(" · edited after approval: pending again", style="bold magenta")
    c.print(head, soft_wrap=True, highlight=False)
    fields = [("ticket", d.ticket), ("customer", m.get("customer")), ("order", m.get("order_code")),
              ("created", format_time(m.get("created_at")) + f"  ({m.get('created_at')})"),
              ("model", f"{m.get('model')} ({m.get('provider')})" if m.get("model") else None),
              ("session", m.get("session_id")), ("file", str(d.path))]
    if m.get("superseded_by"):
        fields.append(("replaced", f"by the newer draft {m['superseded_by']}"))
    if m.get("reviewed_at"):
        fields.append(("reviewed", f"{m.get('status')} by {m.get('reviewed_by')} at {m.get('reviewed_at')}"))
    if m.get("review_reason"):
        fields.append(("reason", m.get("review_reason")))
    for k, v in fields:
        line(f"  {k:<9} {'—' if v in (None, '') else v}")

    findings = m.get("findings") or []
    if findings:
        c.print()
        line(f"findings ({len(findings)}): check these before approving", "bold red")
        for f in findings:
            sev = str(f.get("severity") or "?")
            line(f"  {sev}: {f.get('kind') or '?'} — {f.get('message') or ''}",
                 "red" if sev == "error" else "yellow")

    c.print()
    line("ticket", "bold")
    questions = m.get("questions") or ([m["question"]] if m.get("question") else [])
    if not questions and prov.get("found") and prov.get("question"):
        questions = [prov["question"]]
    for i, q in enumerate(questions, 1):
        line(f"  question {i}: {' '.join(str(q).split())}")
    if not questions:
        line("  (no question recorded)", "yellow")

    c.print()
    stored = m.get("lookups")
    if stored is None and prov.get("found"):  # a draft saved before lookups were stored
        stored = prov.get("tool_calls")
    # lookups stored before they carried their tool's name are lookups all the same
    lookups = [r for r in records([{"name": ToolName.LOOKUP, **x} for x in stored or []
                                   if isinstance(x, dict)]) if r.is_lookup]
    line("lookups it relied on", "bold")
    if not lookups:
        line("  none: nothing was looked up before this draft", "yellow")
    for r in lookups:
        text, style = tool_call_line(ToolName.LOOKUP, r.input)
        line("  " + text, style)
        tag = ("✗ failed" if r.is_error else "← not found" if r.outcome == Outcome.NOT_FOUND else "← found")
        line(f"  {tag}: {compact(r.result, 300) if r.is_error else result_summary(r.result)}",
             "red" if r.is_error else "green")

    if prov.get("found"):
        line(f"  (session log {prov.get('session_id')}: agentcli log show {prov.get('session_id')})", "dim")
    elif prov.get("note"):
        line(f"  ({prov.get('note')})", "dim")

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
        print_diff(c, orig, d.text, "model", "file")

    hist = m.get("history") or []
    if hist:
        c.print()
        line("history", "bold")
        for h in hist[-20:]:
            why = f" — {h.get('reason')}" if h.get("reason") else ""
            line(f"  {format_time(h.get('when'))}  {h.get('who') or '?'}: {h.get('from') or '?'} → "
                 f"{h.get('to') or '?'}{why}", "dim")
        if len(hist) > 20:
            line(f"  … {len(hist) - 20} earlier (drafts show --json)", "dim")
    if footer:
        c.print()
        line("nothing has been sent" + (f"; review with: agentcli drafts approve {d.id}  |  "
                                        f"agentcli drafts reject {d.id} --reason ..."
                                        if st == "pending_review" else ""), "dim")


def print_diff(c: Any, before: str, after: str, a: str = "before", b: str = "after") -> None:
    for dl in difflib.unified_diff(before.splitlines(), after.splitlines(), a, b, lineterm="", n=1):
        style = "green" if dl.startswith("+") else "red" if dl.startswith("-") else "dim"
        c.print(Text(clean_for_terminal(dl), style=style), soft_wrap=True, highlight=False)


def editor_command() -> list[str]:
    for var in ("VISUAL", "EDITOR"):
        v = os.environ.get(var, "").strip()
        if v:
            try:
                cmd = shlex.split(v)
            except ValueError:
                raise ConfigError(f"${var} is not a command line; fix it") from None
            if cmd:
                return cmd
    for fallback in ("nano", "vi"):
        if shutil.which(fallback):
            return [fallback]
    raise ConfigError("no editor: set $VISUAL or $EDITOR (e.g. export EDITOR=nano)")


def edit_text(text: str, name: str) -> str:
    """Open ``text`` in the person's editor (a private temporary file) and return the result."""
    cmd = editor_command()
    with tempfile.TemporaryDirectory(prefix="agentcli-edit-") as tmp:
        path = Path(tmp) / f"{name}.txt"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        try:
            rc = run_editor([*cmd, str(path)])  # SIGTERM/SIGHUP stop it; the copy goes with tmp
        except OSError as e:
            raise ConfigError(f"cannot start the editor {cmd[0]!r} ({e.strerror}); set $VISUAL or "
                              "$EDITOR") from None
        if rc != 0:
            raise UsageError(f"the editor exited with status {rc}; the draft is unchanged")
        try:
            return path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError as e:
            raise UsageError(f"cannot read the edited text back ({e.strerror}); the draft is "
                             "unchanged") from None


def edit_draft(store, did: str, console: Any) -> Any:
    """Edit one draft's text; the edit is kept and shown as a diff. Returns the draft."""

    d = store.get(did)
    new = edit_text(d.text, did)
    if not new.strip():
        raise UsageError("the edited text is empty; the draft is unchanged")
    d2, changed = store.set_text(did, new, reviewer=reviewer())
    if not changed:
        console.print("no change: the draft's text is as it was", highlight=False)
        return d2
    print_diff(console, d.text, d2.text, "before", "after")

    note = f"edited {d2.id}; status {d2.meta.get('status')}"
    if d.meta.get("status") == "approved":
        note += " (it was approved: review it again; the approved text is kept in the file)"
    console.print(Text(note + "; nothing was sent"), highlight=False)
    return d2


def edit_body(store, token: str) -> int:
    edit_draft(store, resolve(store, token), out_console())
    return 0
