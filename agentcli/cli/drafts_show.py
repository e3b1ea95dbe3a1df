"""``drafts show`` (and ``--text``, ``last``) and ``drafts edit``; the draft's parts as screen
lines, shared with ``agentcli review``.

A draft is shown as sections of lines (``DraftView``): the header (id, status, version), the
fields (ticket, customer, order, age, model, file), the grounding findings of the text as it is
now (checked again first when the text changed: ``recheck``), the ticket's questions, the lookups
it relied on, the text, the edit as a diff, the history. On a terminal every line is wrapped at
words to the terminal's width (an id, a path, a session id is one word: never split); into a pipe
each item is one line. ``drafts show`` prints every section; ``review`` fits them on one screen.

Every string from a draft file is hostile: printed as ``rich.text.Text`` (never markup) after
``clean_for_terminal``; only ``--text`` into a pipe writes the reply byte for byte.

``drafts edit`` opens the text in $VISUAL / $EDITOR on the version it read; the save carries that
version, so an edit or a decision a teammate made meanwhile is never overwritten: the save is
refused, saying what changed, and the person's text is shown and kept in a file
(``keep_aside``). A save that fails for any other reason keeps it the same way.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.text import Text

from ..config import sessions_dir, state_dir
from ..drafts.base import ReviewConflict, one_live
from ..drafts.format import not_utf8, same_text
from ..drafts.queue import (
    Query,
    check_version,
    provenance,
    resolve_draft_id,
    reviewer,
    select,
)
from ..drafts.store import DraftChanged, require_version
from ..errors import AgentcliError, ConfigError, UsageError, signals_held
from ..helpdesk import HELPDESKS
from ..redact import clean_for_terminal, one_line
from ..stdio import isatty
from ..vocab import Outcome, ToolName, records
from .common import dump_json, err_console, format_time, lock_notice, out_console, warn
from .editor import run_editor
from .layout import age, print_lines, wrapped
from .recheck import Rechecker, unchecked_note
from .trace_lines import compact, result_summary, tool_call_line

_BREAKS_RE = re.compile(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+")
STATUS_STYLE = {"pending_review": "yellow", "approved": "green", "rejected": "red",
                "superseded": "dim"}


def resolve(store, token: str) -> str:
    """A draft id from an id, a unique prefix, or ``last`` (the newest draft, superseded aside)."""

    if (token or "").strip().lower() == "last":
        drafts = select(store, Query(), limit=1).drafts
        if not drafts:
            raise UsageError(f"no drafts in {one_line(store.location, 200)} (see `agentcli "
                             "drafts list`)")
        return drafts[0].id
    return resolve_draft_id(store, token)


class DraftView:
    """A draft's sections as screen lines for a console: wrapped at words to ``width`` on a
    terminal (None: one line per item, for a pipe)."""

    def __init__(self, console: Any, d: Any, prov: dict[str, Any] | None, *,
                 width: int | None, note: str | None = None):
        self.c, self.d, self.prov, self.width, self.note = console, d, prov or {}, width, note

    def line(self, text: Any, style: str = "", indent: int | None = None) -> list[Text]:
        """One item: a line break in a header field, a finding or a history entry would print
        lines that look like ours, so it is flattened (⏎); then wrapped, continuation lines
        indented by ``indent`` (default: two more than the item's own indent)."""
        flat = _BREAKS_RE.sub(" \u23ce ", str(text))
        if indent is None:
            lead = len(flat) - len(flat.lstrip(" "))
            indent = lead + 2 if lead else 0
        t = Text(clean_for_terminal(flat), style=style)
        return wrapped(self.c, t, self.width, indent)

    def header(self) -> list[Text]:
        d, m = self.d, self.d.meta
        st = clean_for_terminal(str(m.get("status") or "?"))
        head = Text(f"draft {clean_for_terminal(d.id)} · ", style="bold")
        head.append(st, style="bold " + STATUS_STYLE.get(st, ""))
        head.append(f" · version {d.version}", style="dim")
        if d.edited:
            head.append(" · ✎ edited after it was saved", style="bold magenta")
        if d.reopened:
            head.append(" · edited after approval: pending again" if d.meta.get("approved_sha256")
                        else " · marked approved by hand, never approved: pending", style="bold magenta")
        return wrapped(self.c, head, self.width) if self.width else [head]

    def fields(self, *, short: bool = False) -> list[Text]:
        d, m = self.d, self.d.meta
        created = m.get("created_at")
        ago = age(created)
        if short:  # one item: what a reviewer places the draft by
            parts = [f"ticket {d.ticket}" if d.ticket else "", f"order {m['order_code']}"
                     if m.get("order_code") else "", str(m.get("customer") or ""),
                     (f"{ago} old" if ago not in ("now", "?") else "just saved") if created else ""]
            return self.line(" · ".join(p for p in parts if p) or "(no ticket, order or customer)",
                             "bold", indent=2)
        when = (f"{format_time(created)} ({'just now' if ago == 'now' else ago + ' ago'})"
                if created else None)
        fields = [("ticket", d.ticket), ("customer", m.get("customer")),
                  ("order", m.get("order_code")), ("created", when)]
        if not short:
            fields += [("model", f"{m.get('model')} ({m.get('provider')})" if m.get("model") else None),
                       ("session", m.get("session_id")), ("file", str(d.path))]
            if m.get("superseded_by"):
                fields.append(("replaced", f"by the newer draft {m['superseded_by']}"))
            if m.get("reviewed_at"):
                fields.append(("reviewed", f"{m.get('status')} by {m.get('reviewed_by')} at "
                                           f"{format_time(m.get('reviewed_at'))}"))
            if m.get("review_reason"):
                fields.append(("reason", m.get("review_reason")))
        out: list[Text] = []
        for k, v in fields:
            out += self.line(f"  {k:<9} {'—' if v in (None, '') else v}", indent=12)
        return out

    def findings(self, limit: int | None = None) -> list[Text]:
        """The findings of the text as it is now. ``limit``: a screen's short form, errors
        first, one line each (the sentence it is about), warnings counted by kind."""
        d = self.d
        found = [f for f in d.meta.get("findings") or [] if isinstance(f, dict)]
        if limit and d.findings_current and found:
            return self._brief_findings(found, limit)
        out: list[Text] = []
        if not d.findings_current:
            out += self.line(f"⚑ findings not checked for this text: {self.note or unchecked_note(d)}"
                             "; read it closely before approving", "bold yellow", indent=2)
            if found:
                out += self.line(f"  (the {len(found)} finding(s) of an earlier text are not "
                                 "shown as current)", "dim", indent=4)
            return out
        if not found:
            return out
        errors = sum(1 for f in found if f.get("severity") == "error")
        out += self.line(f"findings ({len(found)}{f', {errors} error-level' if errors else ''}): "
                         "check these before approving", "bold red" if errors else "bold yellow")
        for f in found[:limit] if limit else found:
            sev = str(f.get("severity") or "?")
            said = f" — “{f['sentence']}”" if f.get("sentence") else ""
            out += self.line(f"  {'⚑' if sev == 'error' else '⚠'} {f.get('kind') or '?'}: "
                             f"{f.get('message') or ''}{said}",
                             "red" if sev == "error" else "yellow", indent=4)
        if limit and len(found) > limit:
            out += self.line(f"  … {len(found) - limit} more", "dim")
        return out

    def _brief_findings(self, found: list[dict[str, Any]], limit: int) -> list[Text]:
        errors = [f for f in found if f.get("severity") == "error"]
        warnings = [f for f in found if f.get("severity") != "error"]
        out: list[Text] = []
        for f in errors[:limit]:
            said = f.get("sentence") or f.get("message") or ""
            t = Text(f"⚑ {clean_for_terminal(str(f.get('kind') or '?'))}: ", style="bold red")
            t.append(one_line(said, 300), style="red")
            out += self._one(t)
        if len(errors) > limit:
            out += self.line(f"⚑ … {len(errors) - limit} more error-level (d: the whole draft)",
                             "bold red")
        if warnings:
            kinds: dict[str, int] = {}
            for f in warnings:
                k = one_line(f.get("kind") or "?", 40)
                kinds[k] = kinds.get(k, 0) + 1
            said = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in kinds.items())
            out += self._one(Text(f"⚠ {len(warnings)} warning{'s' if len(warnings) != 1 else ''}: "
                                  f"{said}", style="yellow"))
        return out

    def _one(self, t: Text) -> list[Text]:
        """A line cut to the screen's width with "…" (a screen's short form)."""
        if self.width is not None and t.cell_len > self.width:
            t.truncate(self.width, overflow="ellipsis")
        return [t]

    def questions(self, limit: int | None = None) -> list[Text]:
        m, prov = self.d.meta, self.prov
        qs = m.get("questions") or ([m["question"]] if m.get("question") else [])
        if not qs and prov.get("found") and prov.get("question"):
            qs = [prov["question"]]
        qs = [q for q in qs if isinstance(q, str)]
        if not qs:
            return self.line("  (no question recorded)", "yellow")
        out: list[Text] = []
        shown = qs[-limit:] if limit else qs
        for i, q in enumerate(shown, len(qs) - len(shown) + 1):
            label = "asked" if limit == 1 and len(qs) == 1 else f"question {i}"
            out += self.line(f"  {label}: {' '.join(q.split())}", indent=4)
        return out

    def lookups(self, limit: int | None = None) -> list[Text]:
        m, prov = self.d.meta, self.prov
        stored = m.get("lookups")
        if stored is None and prov.get("found"):  # a draft saved before lookups were stored
            stored = prov.get("tool_calls")
        # lookups stored before they carried their tool's name are lookups all the same
        rs = [r for r in records([{"name": ToolName.LOOKUP, **x} for x in stored or []
                                  if isinstance(x, dict)]) if r.is_lookup]
        if not rs:
            return self.line("  none: nothing was looked up before this draft", "yellow")
        out: list[Text] = []
        for r in rs[-limit:] if limit else rs:
            tag = ("✗ failed" if r.is_error else "← not found" if r.outcome == Outcome.NOT_FOUND
                   else "←")
            said = compact(r.result, 300) if r.is_error else result_summary(r.result)
            if limit:  # one line a lookup: what a reviewer compares the text with
                out += self.line(f"  {tag} {said}", "red" if r.is_error else "green", indent=4)
            else:
                text, style = tool_call_line(ToolName.LOOKUP, r.input)
                out += self.line("  " + text, style, indent=4)
                out += self.line(f"  {tag}: {said}", "red" if r.is_error else "green", indent=4)
        return out

    def text(self) -> list[Text]:
        """The reply as the customer would read it: each of its lines wrapped at words."""
        out: list[Text] = []
        for ln in clean_for_terminal(self.d.text).split("\n"):
            t = Text(ln.rstrip())
            out += wrapped(self.c, t, self.width) if self.width else [t]
        while len(out) > 1 and not out[-1].plain:
            out.pop()
        return out

    def diff(self) -> list[Text]:
        orig = self.prov.get("original_text")
        if not (self.d.edited and isinstance(orig, str)):
            return []
        return (self.line("edit (model's text → file)", "bold magenta")
                + diff_lines(self, orig, self.d.text, "model", "file"))

    def history(self, limit: int = 20) -> list[Text]:
        hist = [h for h in self.d.meta.get("history") or [] if isinstance(h, dict)]
        if not hist:
            return []
        out = self.line("history", "bold")
        for h in hist[-limit:]:
            why = f" — {h.get('reason')}" if h.get("reason") else ""
            moved = f"{h.get('from') or '?'} → {h.get('to') or '?'}"
            if h.get("from") == h.get("to") and h.get("reason"):
                moved, why = "", str(h.get("reason"))  # a note, an export or a push: no move
            out += self.line(f"  {format_time(h.get('when'))}  {h.get('who') or '?'}: "
                             f"{moved}{why}", "dim", indent=4)
        if len(hist) > limit:
            out += self.line(f"  … {len(hist) - limit} earlier (drafts show --json)", "dim")
        return out

    def provenance_note(self) -> list[Text]:
        prov = self.prov
        if prov.get("found"):
            return self.line(f"  (session log {prov.get('session_id')}: agentcli log show "
                             f"{prov.get('session_id')})", "dim", indent=4)
        if prov.get("note"):
            return self.line(f"  ({prov.get('note')})", "dim", indent=4)
        return []


def diff_lines(view: DraftView, before: str, after: str, a: str = "before",
               b: str = "after") -> list[Text]:
    out: list[Text] = []
    for dl in difflib.unified_diff(before.splitlines(), after.splitlines(), a, b, lineterm="", n=1):
        style = "green" if dl.startswith("+") else "red" if dl.startswith("-") else "dim"
        out += view.line(dl, style, indent=1)
    return out


def show_lines(v: DraftView, *, footer: bool = True) -> list[Text]:
    """Every section of the draft, for ``drafts show``."""
    d = v.d
    blank = [Text("")]
    out = v.header() + v.fields()
    f = v.findings()
    if f:
        out += blank + f
    out += blank + v.line("ticket", "bold") + v.questions()
    out += blank + v.line("lookups it relied on", "bold") + v.lookups() + v.provenance_note()
    out += blank + v.line("text" + (" (as edited)" if d.edited else ""), "bold") + v.text()
    diff = v.diff()
    if diff:
        out += blank + diff
    hist = v.history()
    if hist:
        out += blank + hist
    if footer:
        pending = d.meta.get("status") == "pending_review"
        push = d.meta.get("push") if isinstance(d.meta.get("push"), dict) else {}
        if push.get("state") == "done":  # in the helpdesk, for an agent to send; not to a customer
            where = f"{push.get('what') or 'a note'} {push.get('id') or ''}".rstrip()
            hd = HELPDESKS.get(str(push.get("helpdesk")))
            out += blank + v.line(f"in {hd.title if hd else push.get('helpdesk')} ticket {push.get('ticket')} as "
                                  f"{where}; nothing has been sent to the customer", "dim")
            return out
        out += blank + v.line("nothing has been sent" + (
            f"; review with: agentcli drafts approve {d.id} --version {d.version}  |  "
            f"agentcli drafts reject {d.id} --reason ..." if pending else ""), "dim")
    return out


def emit(console: Any, lines: list[Text]) -> None:
    """Lines built for this console: as they are on a terminal (each fits), one item a line
    elsewhere."""
    if console.is_terminal:
        print_lines(console, lines)
    else:
        for ln in lines:
            console.print(ln, soft_wrap=True, highlight=False)


def show_body(store, token: str, *, json_: bool = False, text_only: bool = False) -> int:
    d = store.get(resolve(store, token))
    if text_only:
        if isatty(sys.stdout):
            shown = clean_for_terminal(d.text)
            sys.stdout.write(shown if shown.endswith("\n") else shown + "\n")  # the prompt's own line
        else:
            sys.stdout.write(d.text)  # exactly the reply, for the clipboard or a helpdesk
        sys.stdout.flush()
        return 0
    store.on_wait = lock_notice(err_console())
    checker = Rechecker(store)
    d = checker.fresh(d)  # findings belong to a text: an edited one is checked again
    prov = provenance(d, sessions_dir())
    warn(prov.get("warnings") or [])
    if json_:
        dump_json({**d.record(), "provenance": prov})
        return 0
    c = out_console()
    v = DraftView(c, d, prov, width=c.width if c.is_terminal else None,
                  note=unchecked_note(d, checker))
    emit(c, show_lines(v))
    return 0


# --------------------------------------------------------------------------- editing

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
    # The copy is made and removed with signals held (a signal meanwhile takes effect after),
    # so no instant leaves the draft's text behind; while the editor runs, run_editor stops it
    # on SIGTERM / SIGHUP and the copy is removed on the way out.
    tmp: str | None = None
    try:
        with signals_held():  # a signal that came meanwhile is raised at its end: in this try
            tmp = tempfile.mkdtemp(prefix="agentcli-edit-")
            path = Path(tmp) / f"{name}.txt"
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
        try:
            rc = run_editor([*cmd, str(path)])
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
    finally:
        if tmp is not None:
            with signals_held():
                shutil.rmtree(tmp, ignore_errors=True)


def keep_aside(text: str, did: str) -> Path | None:
    """Keep a person's text that could not be saved: a private file under agentcli's state
    folder (``unsaved/DRAFT-TIME.txt``); None when even that cannot be written."""
    try:
        folder = state_dir() / "unsaved"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = folder / f"{did}-{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}.txt"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(text)
        return path
    except (OSError, AgentcliError):
        return None


class EditNotSaved(UsageError):
    """An edit that could not be saved: the text is kept (``aside``) and was shown."""

    def __init__(self, message: str, aside: Path | None, text: str):
        super().__init__(message)
        self.aside, self.text = aside, text


def not_saved(console: Any, did: str, new: str, why: str) -> EditNotSaved:
    """Show the person's unsaved text and keep it in a file; the error that says so."""
    aside = keep_aside(new, did)
    kept = (f"your text is kept in {aside}" if aside is not None
            else "your text is above (it could not be written to a file either: copy it)")
    v = DraftView(console, None, None, width=console.width if console.is_terminal else None)
    lines = v.line("your text (not saved):", "bold yellow")
    for ln in clean_for_terminal(new).split("\n"):
        lines += [Text("  │ ") + t for t in (wrapped(console, Text(ln), max(10, console.width - 4))
                                              if console.is_terminal else [Text(ln)])]
    emit(console, lines)
    return EditNotSaved(f"not saved: {why}; {kept}", aside, new)


NO_CHANGE = "no change: the draft's text is as it was (nothing recorded)"


def edit_draft(store, did: str, console: Any, *, version: str | None = None,
               show: bool = True) -> tuple[Any, bool]:
    """Edit one draft's text at the version read (or ``version``, the one the person was
    shown); the edit is kept, its findings checked again and (``show``) both printed with the
    diff. Returns (draft, changed). A save refused (changed meanwhile) or failed raises
    ``EditNotSaved`` after showing the person's text."""

    d = store.get(did)
    require_version(d, version)
    if d.meta.get("status") == "approved":  # said before the editor opens, so nothing typed is lost
        one_live(d, [x.id for x in store.in_ticket(d.ticket)
                     if x.id != d.id and x.meta.get("status") == "pending_review"])
    new = edit_text(d.text, did)
    bad = not_utf8(new)
    if bad is not None:
        # read back as it is, the text would be stored with U+FFFD for every such byte:
        # "Jürgen" saved as Latin-1 became "J�rgen", reported as an edit
        raise not_saved(console, did, new, f"the editor saved the text in another encoding than "
                        f"UTF-8 (line {bad}); set the editor to UTF-8 and edit again")
    if not new.strip():
        raise UsageError("the edited text is empty; the draft is unchanged")
    if same_text(new, d.text):
        if show:
            console.print(Text(NO_CHANGE), highlight=False)
        return d, False
    try:
        d2, changed = store.set_text(did, new, reviewer=reviewer(), expect=d.version)
    except DraftChanged as e:
        raise not_saved(console, did, new, e.message.removesuffix("; nothing was changed")) from None
    except ReviewConflict as e:  # a newer live draft saved while the editor was open
        raise not_saved(console, did, new, str(e)) from None
    except UsageError:
        raise
    except (AgentcliError, OSError) as e:  # locked too long, disk full, read-only, permission
        why = getattr(e, "message", None) or e.strerror or str(e)
        raise not_saved(console, did, new, why) from None
    if not changed:
        if show:
            console.print(Text(NO_CHANGE), highlight=False)
        return d2, False
    checker = Rechecker(store)
    d2 = checker.fresh(d2)
    if not show:
        return d2, True
    v = DraftView(console, d2, None, width=console.width if console.is_terminal else None,
                  note=unchecked_note(d2, checker))
    lines = diff_lines(v, d.text, d2.text, "before", "after")
    note = f"edited {d2.id}; status {d2.meta.get('status')}; version {d2.version}"
    if d.meta.get("status") == "approved":
        note += " (it was approved: review it again; the approved text is kept in the file)"
    lines += v.line(note + "; nothing was sent")
    found = v.findings()
    lines += found or v.line("grounding checks run again for the new text: no findings", "green")
    emit(console, lines)
    return d2, True


def edit_body(store, token: str, version: str | None = None) -> int:
    store.on_wait = lock_notice(err_console())
    edit_draft(store, resolve(store, token), out_console(), version=check_version(version))
    return 0
