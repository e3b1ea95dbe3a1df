"""``drafts approve`` / ``drafts reject``: one draft, several ids, or every draft a filter selects.

Several drafts (or any filter) on a terminal ask for a confirmation first; from a script a filter
needs ``--yes``. An approved, rejected or superseded draft changes again only with ``--force``.
Each draft is changed on its own (under the store's lock), at the version it had when it was
checked or shown (``--version`` for a script that showed it): one changed since is refused,
saying what changed. A draft with an error-level grounding finding (or whose text changed and
could not be checked again) is never approved by a filter: it is left pending with a line saying
why (exit 1: a human must look), ``--force`` or not; by id it needs a confirmation on a
terminal (the finding shown) or ``--force``. Before an approval the pattern floor runs again on
the text as it is now, so a findings line deleted by hand in the file does not make a flagged
draft clean. One that cannot be changed is one line on stderr and exit 2, the others are still
changed. Nothing is ever sent.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.text import Text

from ..drafts.format import MAX_TICKET_CHARS
from ..drafts.queue import (
    check_reason,
    check_version,
    query,
    require_folder,
    resolve_draft_id,
    review,
)
from ..drafts.store import require_version
from ..errors import UsageError
from ..redact import clean_for_terminal, one_line
from ..stdio import isatty
from ..vocab import NOT_FULLY_CHECKED
from .common import err_console, lock_notice, out_console
from .drafts_show import resolve
from .layout import preview, print_lines, short_status, wrapped
from .recheck import Rechecker, select_fresh, unchecked_note

MAX_LISTED = 20
HELD = 1  # exit code of a bulk approval that left drafts for a person: a human must look


def _confirm(prompt: str) -> bool:
    sys.stderr.write(prompt + " [y/N] ")
    sys.stderr.flush()
    try:
        answer = sys.stdin.readline()
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return False
    return answer.strip().lower() in ("y", "yes")


def held_reason(d: Any, checker: Rechecker) -> str | None:
    """Why ``d`` may not be approved without a person's second look, or None: an error-level
    finding of its text as it is now (the floor run again: ``Rechecker.verify``), or findings
    that are not of its text."""
    d = checker.verify(d)
    errors = d.errors
    if errors:
        f = errors[0]
        more = f" and {len(errors) - 1} more" if len(errors) > 1 else ""
        said = one_line(f.get("sentence") or f.get("message") or "", 160).rstrip(".;:")
        return f"error-level grounding finding {one_line(f.get('kind') or '?', 40)}{more}: “{said}”"
    unread = [f for f in (d.meta.get("findings") or []) if d.findings_current and isinstance(f, dict)
              and f.get("kind") == NOT_FULLY_CHECKED]
    if unread:
        return f"its text was not fully checked: “{one_line(unread[0].get('message') or '', 160)}”"
    return unchecked_note(d, checker) or checker.unverified.get(d.id)


def _say(console: Any, text: str, style: str = "") -> None:
    """One message: wrapped at words on a terminal (continuation lines indented), one line
    into a pipe."""
    t = Text(clean_for_terminal(text), style=style)
    if console.is_terminal:
        print_lines(console, wrapped(console, t, console.width, 2))
    else:
        console.print(t, highlight=False, soft_wrap=True)


def _row(console: Any, d: Any) -> None:
    """A draft in a confirmation list: one line that fits the terminal: the id whole, the
    ticket whole or not at all (a session id standing in for one says nothing), a preview of
    what the reply says."""
    width = console.width if console.is_terminal else 200
    head = f"  {d.id}  {short_status(d.meta.get('status'))}  "
    ticket = one_line(d.ticket or "", MAX_TICKET_CHARS)  # whole or not shown: never cut
    if ticket and ticket != d.meta.get("session_id") and len(head) + len(ticket) + 14 <= width:
        head += ticket + "  "
    line = Text(clean_for_terminal(head))
    room = width - len(head)
    if room >= 10:
        line.append(clean_for_terminal(preview(d.text, room)), style="dim")
    if console.is_terminal:
        print_lines(console, [line])
    else:
        console.print(line, soft_wrap=True)


def decide(store, status: str, ids: list[str], filters: tuple, *, reason: str | None,
           yes: bool, force: bool, version: str | None = None) -> int:

    reason = check_reason(reason)
    version = check_version(version)
    st_f, order, customer, since, ticket, flagged = filters
    by_filter = any(v not in (None, False) for v in filters)
    if ids and by_filter:
        raise UsageError("give draft ids or filters (--ticket, --status, ...), not both")
    if not ids and not by_filter:
        raise UsageError("which drafts? give draft ids, or filters such as --ticket T-1042 or "
                         "--status pending (see `agentcli drafts list`)")
    if version is not None and len(ids) != 1:
        raise UsageError("--version goes with one draft id (the version `drafts show ID` printed)")
    require_folder(store)
    err = err_console()
    store.on_wait = lock_notice(err)
    checker = Rechecker(store)
    approving = status == "approved"
    terminal = isatty(sys.stdin) and isatty(sys.stderr)
    held: list[tuple[Any, str]] = []
    if by_filter:
        q = query(st_f or "pending_review", order, customer, since, ticket, flagged, False)
        chosen = select_fresh(store, q, checker).drafts
        # never by a filter, --force or not (--force re-decides a decided draft, by id)
        held = [(d, held_reason(d, checker)) for d in chosen] if approving else []
        held = [(d, why) for d, why in held if why]
        for d, why in held[:MAX_LISTED]:  # a bulk approval never approves what needs a look
            _say(err, f"agentcli: {d.id} left pending: {why}; read it (agentcli drafts show "
                      f"{d.id}), then approve it by id", "yellow")
        if len(held) > MAX_LISTED:
            _say(err, f"agentcli: … and {len(held) - MAX_LISTED} more left pending "
                      "(agentcli drafts list --flagged)", "yellow")
        if held:
            n = len(held)
            _say(err, f"agentcli: {n} draft{'s' if n != 1 else ''} with error-level grounding "
                      "findings (or texts not checked in time) left as they are", "yellow")
        kept = {d.id for d, _ in held}
        targets = [d for d in chosen if d.id not in kept]
        if not targets:
            _say(err, "agentcli: no drafts match; nothing changed" if not held else
                      "agentcli: nothing else to approve; nothing changed")
            return HELD if held else 0
    else:
        dids = list(dict.fromkeys(resolve(store, t) if t.strip().lower() == "last"
                                  else resolve_draft_id(store, t) for t in ids))
        targets = [store.get(did) for did in dids]
        require_version(targets[0], version, status)  # the person saw another text or status
        targets = [checker.fresh(d) for d in targets]
    verb = "approve" if approving else "reject"
    if (by_filter or (len(targets) > 1 and terminal)) and not yes:
        if not terminal:  # a filter from a script: say so explicitly
            raise UsageError(f"{len(targets)} drafts selected: add --yes to {verb} them from "
                             "a script")
        for d in targets[:MAX_LISTED]:
            _row(err, d)
        if len(targets) > MAX_LISTED:
            _say(err, f"  … and {len(targets) - MAX_LISTED} more")
        if not _confirm(f"{verb} {len(targets)} draft{'s' if len(targets) != 1 else ''}?"):
            _say(err, "agentcli: nothing changed")
            return 0
    failed = 0
    for d in targets:
        why = held_reason(d, checker) if approving and not force and not by_filter else None
        if why:
            if not terminal:
                _say(err, f"agentcli: {d.id} not approved: {why}; read it (agentcli drafts show "
                          f"{d.id}), then approve it on a terminal or with --force", "yellow")
                failed += 1
                continue
            _say(err, f"{d.id} has {why}", "bold red")
            _say(err, f"  {preview(d.text, 300, greeting=True)}")
            if not _confirm(f"approve {d.id} anyway?"):
                _say(err, f"agentcli: {d.id} left pending; nothing changed")
                continue
        try:
            res = review(store, d.id, status, reason=reason, force=force, expect=d.version)
        except UsageError as e:  # changed since (DraftChanged), needs --force, vanished, damaged
            _say(err, f"agentcli: {e.message}", "yellow")
            failed += 1
            continue
        _report(res, status)
    return 2 if failed else HELD if held else 0


def _report(res: Any, status: str) -> None:
    d = res.draft
    m = d.meta
    verb = "approved" if status == "approved" else "rejected"
    if not res.changed:
        _say(err_console(), f"agentcli: note: {d.id} is already {verb} (by "
                            f"{m.get('reviewed_by') or '?'} at {m.get('reviewed_at') or '?'}); "
                            "nothing changed")
        return
    was = f" (was {res.previous})" if res.previous and res.previous != "pending_review" else ""
    extra = " — the text as edited" if d.edited else ""
    tail = ("nothing was sent: put it into the helpdesk ticket as a note with `agentcli drafts "
            f"push --to HELPDESK {d.id}`, or copy the text (agentcli drafts show {d.id} --text)"
            if status == "approved" else "nothing was sent")
    _say(out_console(), f"{verb} {d.id}{was} by {m.get('reviewed_by')} at "
                        f"{m.get('reviewed_at')}{extra}; {tail}")
    sys.stdout.flush()
