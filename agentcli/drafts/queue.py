"""Human review: the drafts queue (no CLI, no heavy imports; session replay is ``replay``).

    ``select`` filters and orders the draft files (newest first) by a ``Query``; ``provenance`` finds, in the
    draft's session log, the question and the tool calls/results that preceded its
    ``draft_saved`` event; ``review`` changes a status through ``DraftStore.set_status`` (which
    locks and replaces the file atomically). A hand-edited draft keeps its edit: the status
    change rewrites the header around the text as it is on disk.

Only the standard library and agentcli's light modules are imported here: ``drafts list`` and
``log list`` must start fast.
"""

from __future__ import annotations

import dataclasses
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ..config import (
    is_default_drafts_dir,
    resolve_drafts_dir,
    resolve_drafts_url,
    reviewer_setting,
    sessions_dir,
    where_set,
)
from ..errors import ConfigError, UsageError
from ..redact import one_line
from ..sessions.log import SESSION_ID_RE, read_events
from ..vocab import CallRecord, InvalidOrderCode, OrderCode, parse_since, parse_time
from .backends import open_drafts
from .base import DraftsBackend
from .format import VERSION_RE, safe_ticket
from .store import STATUSES, Damaged, Draft, resolve_reviewer

STATUS_ALIASES = {"pending": "pending_review", "pending_review": "pending_review",
                  "approved": "approved", "approve": "approved",
                  "rejected": "rejected", "reject": "rejected", "superseded": "superseded"}
_ID_PREFIX_RE = re.compile(r"^d-[0-9a-f]{4,12}$")
MAX_REASON_CHARS = 2000


# =========================================================================== drafts queue

def ticket_arg(value: str | None, what: str = "--ticket") -> str | None:
    """A helpdesk ticket id given by a person: printable text, at most 200 characters (no
    control or line-separator characters: it is shown in lists and file headers)."""
    if value is None:
        return None
    v = value.strip()
    if not v or len(v) > 200 or not v.isprintable():

        raise UsageError(f"{what} {one_line(value, 40)!r}: a ticket id is 1 to 200 printable "
                         "characters (e.g. T-1042)")

    return safe_ticket(v)  # a key pasted as a ticket: its hash, as the drafts store keeps it


def order_arg(value: str | None, what: str = "--order") -> str | None:
    """An order code given by a person, in any form customers write it (``log list --order``'s
    rule): a malformed one is a usage error, never a filter that silently matches nothing."""
    if value is None:
        return None
    try:
        return str(OrderCode.parse(value))
    except InvalidOrderCode as e:
        raise UsageError(f"{what}: {e}") from None


def normalise_status(value: str | None) -> str | None:
    if value is None:
        return None
    s = STATUS_ALIASES.get(value.strip().lower())
    if s is None:
        raise UsageError(f"unknown status {value!r}: use one of {', '.join(STATUSES)} (or pending)")
    return s


def is_pushed(d: Draft) -> bool:
    """Is the draft in a helpdesk (``drafts push`` recorded it done)?"""
    p = d.meta.get("push")
    return isinstance(p, dict) and p.get("state") == "done"


def _created(d: Draft) -> datetime | None:
    return parse_time(d.meta.get("created_at"))


@dataclasses.dataclass
class Query:
    """What ``drafts list`` (and ``review``, and approve/reject by filter) select."""
    status: str | None = None
    order: str | None = None
    customer: str | None = None
    since: datetime | None = None
    ticket: str | None = None
    flagged: bool = False        # only drafts with grounding findings
    all: bool = False            # superseded drafts too (hidden unless asked for)
    pushed: bool | None = None   # True: only drafts pushed to a helpdesk; False: only the others

    @property
    def filtered(self) -> bool:
        return any(v not in (None, False) for v in (self.status, self.order, self.customer,
                                                     self.since, self.ticket, self.flagged)) \
            or self.pushed is not None

    def matches(self, d: Draft) -> bool:
        st = d.meta.get("status")
        if self.status:
            if st != self.status:
                return False
        elif st == "superseded" and not self.all:
            return False
        if self.order and OrderCode.parse_or_none(d.meta.get("order_code")) != \
                (OrderCode.parse_or_none(self.order) or self.order.strip().upper()):
            return False
        if self.customer and str(d.meta.get("customer") or "").lower() != self.customer.strip().lower():
            return False
        if self.ticket is not None and d.ticket != self.ticket:
            return False
        if self.flagged and not d.meta.get("findings"):
            return False
        if self.pushed is not None and self.pushed != is_pushed(d):
            return False
        if self.since is not None:
            c = _created(d)
            if c is None or c < self.since:
                return False
        return True


@dataclasses.dataclass
class Selection:
    drafts: list[Draft]          # every match, newest first (or the page asked for)
    damaged: list[Damaged]       # files named like drafts that cannot be read as one (never dropped)
    more: bool = False           # a page: more matches follow it


def select(store: DraftsBackend, q: Query, *, limit: int | None = None,
           offset: int = 0) -> Selection:
    """The drafts ``q`` selects, newest first. With ``limit``: one page (``offset`` matches
    skipped), read from the newest down and no further than the page (and one more, to say
    whether more follow): the first page of a queue of 100,000 reads a page of drafts."""
    out: list[Draft] = []
    damaged: list[Damaged] = []
    more = False
    seen = 0
    for item in store.newest(status=q.status, ticket=q.ticket, since=q.since):
        if not isinstance(item, Draft):
            damaged.append(item)
            continue
        if not q.matches(item):
            continue
        seen += 1
        if seen <= offset:
            continue
        if limit is not None and len(out) >= limit:
            more = True
            break
        out.append(item)
    out.sort(key=lambda d: (d.meta.get("created_at") or "", d.id), reverse=True)
    return Selection(out, damaged, more)


def damaged_record(item: Damaged) -> dict[str, Any]:
    """A damaged file as a ``drafts list --json`` record: the same keys, status ``damaged``."""
    return {"id": item.id, "status": "damaged", "path": str(item.path), "damaged": item.reason,
            "order_code": None, "created_at": None, "text": None, "ticket": None, "findings": []}


def last_drafts_location(sessions_dir: Path, max_logs: int = 200) -> tuple[str, str] | None:
    """(drafts folder, session id) of the most recent session log that saved a draft (else that
    named a drafts folder), from the newest ``max_logs`` logs; None when there is none."""

    try:
        names = sorted((e.name for e in os.scandir(sessions_dir)
                        if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False)),
                       reverse=True)[:max_logs]
    except OSError:
        return None
    fallback: tuple[str, str] | None = None
    for name in names:
        folder: str | None = None
        saved: str | None = None
        try:
            for ev in read_events(Path(sessions_dir) / name):
                if ev.get("type") == "session_start" and isinstance(ev.get("drafts_dir"), str):
                    folder = ev["drafts_dir"]
                elif ev.get("type") == "draft_saved" and isinstance(ev.get("path"), str):
                    saved = str(Path(ev["path"]).parent)
        except OSError:
            continue
        if saved:
            return saved, name[:-6]
        if folder and fallback is None:
            fallback = (folder, name[:-6])
    return fallback


def resolve_draft_id(store: DraftsBackend, token: str) -> str:
    """A full draft id, or a unique prefix of one (``d-3f2a``); UsageError (exit 2) otherwise."""
    t = (token or "").strip()
    if t.endswith(".md"):
        t = Path(t).name[:-3]
    if not t.startswith("d-") and re.fullmatch(r"[0-9a-f]{4,12}", t):
        t = "d-" + t
    if not _ID_PREFIX_RE.match(t):
        raise UsageError(f"not a draft id: {token!r} (ids look like d-3f2a9c1b7e04; "
                         "see `agentcli drafts list`)")
    where = one_line(store.location, 200)
    matches = sorted(store.resolve_id(t))
    if len(t) == 14 and not matches:
        raise UsageError(f"no draft {t} in {where} (see `agentcli drafts list`)")
    if not matches:
        raise UsageError(f"no draft matching {t} in {where} (see `agentcli drafts list`)")
    if len(matches) > 1:
        raise UsageError(f"{t} matches {len(matches)} drafts ({', '.join(matches[:4])}"
                         f"{', …' if len(matches) > 4 else ''}): give more of the id")
    return matches[0]


def reviewer() -> str:
    """Who is reviewing: AGENTCLI_REVIEWER, else ``reviewer`` in agentcli.toml, else the login
    name (cleaned of control characters, at most 64 characters)."""

    return resolve_reviewer(reviewer_setting())


@dataclasses.dataclass
class ReviewOutcome:
    draft: Draft
    changed: bool
    previous: str | None


def check_version(version: str | None) -> str | None:
    """A draft version given by a person or a script (``--version``: what ``drafts show``
    printed), or None."""
    if version is None:
        return None
    v = version.strip().lower()
    if not VERSION_RE.match(v):
        raise UsageError(f"--version {one_line(version, 40)!r} is not a draft version (`drafts "
                         "show ID` prints it: 10 hex digits)")
    return v


def check_reason(reason: str | None) -> str | None:
    if reason is None:
        return None
    reason = reason.strip()
    if len(reason) > MAX_REASON_CHARS:
        raise UsageError(f"--reason is too long ({len(reason)} characters; the limit is "
                         f"{MAX_REASON_CHARS})")
    return reason or None


def review(store: DraftsBackend, token: str, status: str, *, reason: str | None = None,
           who: str | None = None, force: bool = False,
           expect: str | None = None) -> ReviewOutcome:
    """Approve or reject a draft in place (atomic, under the store's lock), at the version
    ``expect`` the person was shown (``DraftChanged`` when it is no longer). Nothing is sent."""
    status = normalise_status(status) or ""
    reason = check_reason(reason)
    did = resolve_draft_id(store, token)
    previous = store.get(did).meta.get("status")
    # ``changed`` is decided under the store's lock: of two concurrent approvals exactly one
    # changes the file. ``previous`` (read before the lock) is only used for a note.
    draft, changed = store.set_status(did, status, reviewer=who or reviewer(), reason=reason,
                                      force=force, expect=expect)
    return ReviewOutcome(draft, changed, previous)


def provenance(draft: Draft, sessions_dir: Path) -> dict[str, Any]:
    """Where a draft came from: the question and the tool calls/results before it was saved.

    Returns ``{"found": bool, "session_id", "log", "question", "customer", "tool_calls": [...],
    "original_text", "answer", "note", "warnings"}``; ``found`` is False (with a ``note``) when
    the session log is missing or does not record this draft.
    """

    sid = draft.meta.get("session_id")
    prov: dict[str, Any] = {"found": False, "session_id": sid, "log": None, "question": None,
                            "customer": None, "tool_calls": [], "original_text": None,
                            "answer": None, "note": None, "warnings": []}
    if not isinstance(sid, str) or not SESSION_ID_RE.match(sid):
        prov["note"] = "the draft names no session, so its provenance is unknown"
        return prov
    path = Path(sessions_dir) / f"{sid}.jsonl"
    prov["log"] = str(path)
    if not path.is_file():
        prov["note"] = (f"session log {sid} is not in {sessions_dir} (written on another machine, "
                        "or deleted)")
        return prov
    question: dict[str, Any] | None = None
    calls: list[dict[str, Any]] = []
    order: dict[Any, int] = {}  # tool_use id -> position in the model's request (results log in completion order)
    hit = False
    after_answer = False
    warnings: list[str] = prov["warnings"]
    try:
        events = list(read_events(path, warnings))
    except OSError as e:
        prov["note"] = f"cannot read session log {path.name}: {e.strerror}"
        return prov
    for ev in events:
        t = ev.get("type")
        if not hit:
            if t == "question":
                question, calls, order = ev, [], {}
            elif t == "model_response":
                for tc in ev.get("tool_calls") or []:
                    if isinstance(tc, dict) and tc.get("id") not in order:
                        order[tc.get("id")] = len(order)
            elif t == "tool_result":
                rec = CallRecord.from_dict(ev)
                if rec is None:
                    continue
                if rec.draft_id == draft.id:
                    if prov["original_text"] is None:
                        prov["original_text"] = rec.draft_text
                    continue
                calls.append(rec.to_dict())
            elif t == "draft_saved" and ev.get("id") == draft.id:
                hit = True
        elif t == "turn_finished" and not after_answer:
            prov["answer"] = ev.get("answer")
            after_answer = True
        elif t == "question":
            break
    if not hit:
        prov["note"] = f"session log {sid} does not record saving this draft"
        return prov
    calls.sort(key=lambda c: order.get(c.get("id"), len(order)))  # stable: unknown ids keep log order
    prov.update(found=True, tool_calls=calls,
                question=(question or {}).get("text"), customer=(question or {}).get("customer"))
    return prov


# =========================================================================== for the commands

def store_for(flag: Any, url_flag: Any = None) -> DraftsBackend:
    """The drafts store, resolved like every command's (flag > env > agentcli.toml): the
    queue of ``--drafts-url`` when one is set, else the folder."""
    url = resolve_drafts_url(url_flag, flag)
    if url:
        return open_drafts(url=url, folder=None)
    folder = resolve_drafts_dir(flag)
    return open_drafts(url=None, folder=folder, create_parents=is_default_drafts_dir(folder))


def query(status, order, customer, since, ticket, flagged, all_, pushed=None):
    return Query(status=normalise_status(status), order=order_arg(order), customer=customer,
                 since=parse_since(since), ticket=ticket_arg(ticket), flagged=flagged, all=all_,
                 pushed=pushed)


def require_folder(store) -> None:
    """A missing drafts folder is a configuration error (exit 3), never an empty queue: say
    where the session logs say the most recent drafts were written."""
    if store.exists():
        return
    if store.kind != "folder":
        raise ConfigError(store.missing_message())
    where = one_line(store.location, 200)
    msg = f"the drafts folder {where} does not exist"
    last = last_drafts_location(sessions_dir())
    if last is not None:
        msg += (f"; the most recent drafts were written to {one_line(last[0], 200)} (session "
                f"{one_line(last[1], 40)}): use --drafts-dir, AGENTCLI_DRAFTS_DIR or drafts_dir in "
                "agentcli.toml")
    else:
        msg += f"; point {where_set('drafts_dir', store.location)} at the team's drafts folder"
    raise ConfigError(msg)
