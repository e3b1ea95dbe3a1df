"""``drafts approve`` / ``drafts reject``: one draft, several ids, or every draft a filter selects.

Several drafts (or any filter) on a terminal ask for a confirmation first; from a script a filter
needs ``--yes``. An approved, rejected or superseded draft changes again only with ``--force``.
Each draft is changed on its own (under the store's lock): one that cannot be changed is one
line on stderr and exit 2, the others are still changed. Nothing is ever sent.
"""

from __future__ import annotations

import sys
from typing import Any

from ..drafts.queue import (
    check_reason,
    query,
    require_folder,
    resolve_draft_id,
    review,
    select,
)
from ..errors import UsageError
from ..redact import clean_for_terminal, one_line
from ..stdio import isatty
from .drafts_show import resolve


def _confirm(prompt: str) -> bool:
    sys.stderr.write(prompt + " [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _flagged(draft: Any) -> bool:
    findings = draft.meta.get("findings") or []
    return isinstance(findings, list) and any(
        isinstance(f, dict) and f.get("severity") == "error" for f in findings)


def decide(store, status: str, ids: list[str], filters: tuple, *, reason: str | None,
           yes: bool, force: bool) -> int:

    reason = check_reason(reason)
    st_f, order, customer, since, ticket, flagged = filters
    by_filter = any(v not in (None, False) for v in filters)
    if ids and by_filter:
        raise UsageError("give draft ids or filters (--ticket, --status, ...), not both")
    if not ids and not by_filter:
        raise UsageError("which drafts? give draft ids, or filters such as --ticket T-1042 or "
                         "--status pending (see `agentcli drafts list`)")
    require_folder(store)
    if by_filter:
        q = query(st_f or "pending_review", order, customer, since, ticket, flagged, False)
        chosen = select(store, q).drafts
        held = [] if status != "approved" or force else [d.id for d in chosen if _flagged(d)]
        targets = [d.id for d in chosen if d.id not in held]
        if held:  # a bulk approval never approves what the grounding checks flagged unread
            sys.stderr.write(f"agentcli: {len(held)} draft{'s' if len(held) != 1 else ''} with "
                             "error-level grounding findings left as they are: read each with "
                             "`agentcli drafts show ID`, then approve it by id (or add --force)\n")
        if not targets:
            sys.stderr.write("agentcli: no drafts match; nothing changed\n" if not held else
                             "agentcli: nothing else to approve; nothing changed\n")
            return 0
    else:
        targets = list(dict.fromkeys(resolve(store, t) if t.strip().lower() == "last"
                                     else resolve_draft_id(store, t) for t in ids))
    verb = "approve" if status == "approved" else "reject"
    terminal = isatty(sys.stdin) and isatty(sys.stderr)
    if (by_filter or (len(targets) > 1 and terminal)) and not yes:
        if not terminal:  # a filter from a script: say so explicitly
            raise UsageError(f"{len(targets)} drafts selected: add --yes to {verb} them from "
                             "a script")
        for did in targets[:20]:
            d = store.get(did)
            sys.stderr.write(clean_for_terminal(
                f"  {did}  {d.meta.get('status')}  {one_line(d.ticket or '-', 30)}  "
                f"{one_line(d.text, 50)}\n"))
        if len(targets) > 20:
            sys.stderr.write(f"  … and {len(targets) - 20} more\n")
        if not _confirm(f"{verb} {len(targets)} draft{'s' if len(targets) != 1 else ''}?"):
            sys.stderr.write("agentcli: nothing changed\n")
            return 0
    failed = 0
    for did in targets:
        try:
            res = review(store, did, status, reason=reason, force=force)
        except UsageError as e:  # ReviewConflict (needs --force), a vanished or damaged draft
            sys.stderr.write(f"agentcli: {clean_for_terminal(e.message)}\n")
            failed += 1
            continue
        _report(res, status)
    return 2 if failed else 0


def _report(res: Any, status: str) -> None:
    d = res.draft
    m = d.meta
    verb = "approved" if status == "approved" else "rejected"
    if not res.changed:
        sys.stderr.write(clean_for_terminal(
            f"agentcli: note: {d.id} is already {verb} (by {m.get('reviewed_by') or '?'} at "
            f"{m.get('reviewed_at') or '?'}); nothing changed\n"))
        return
    was = f" (was {res.previous})" if res.previous and res.previous != "pending_review" else ""
    extra = " — the file keeps its hand edit" if d.edited else ""
    tail = ("nothing was sent: copy the text into your helpdesk to reply (agentcli drafts show "
            f"{d.id} --text)" if status == "approved" else "nothing was sent")
    sys.stdout.write(clean_for_terminal(
        f"{verb} {d.id}{was} by {m.get('reviewed_by')} at {m.get('reviewed_at')}{extra}; {tail}\n"))
    sys.stdout.flush()
