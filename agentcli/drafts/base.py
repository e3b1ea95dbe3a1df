"""The drafts-store protocol: what the CLI, the App and the tools ask of a drafts backend, the
errors and the review rules both backends share, and ``open_drafts``, the one place a backend is
chosen.

Two backends implement ``DraftsBackend``: the folder (``store.DraftStore``: one file per draft,
the default, one machine) and the PostgreSQL queue (``postgres.PgDraftStore``: a team on several
machines; imported only for a ``postgresql://`` drafts URL). The meaning of every operation is
decided here once, on a ``Draft`` in memory (``apply_status``, ``apply_text``,
``apply_findings``: the version check, ``force``, the history entry): a backend loads the
draft under its lock or in its transaction, applies the rule, and writes what changed.

Light: the standard library only (``drafts list`` must start fast).
"""

from __future__ import annotations

import os
import pwd
import re
import socket
from datetime import datetime
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Protocol

from ..errors import ConfigError, UsageError
from ..redact import one_line, redact, redact_obj
from ..vocab import customer_address
from .format import (
    MAX_DRAFT_CHARS,
    STATUSES,
    Damaged,
    Draft,
    bounded,
    no_surrogates,
    now_iso,
    same_text,
    text_hash,
    text_key,
    version_of,
)

FINAL = ("approved", "rejected", "superseded")   # changing these again needs force=True
MAX_HISTORY = 500
_NAME_CLEAN = re.compile("[\x00-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069\u200b-\u200f\ufeff]")


CLAIM_TTL_S = 600.0                               # a claim nobody renews is free again after this


class DraftsFolderError(ConfigError, OSError):
    """The drafts folder or queue cannot be used safely (a symlinked or odd lock, a damaged file
    in the way, a lock held too long, a queue without its schema or a grant). Exit 3; an
    ``OSError`` too, so the draft tool reports it."""


class SaveFailed(DraftsFolderError):
    """A draft file could not be written; the message says why in a person's words (the
    folder is locked by pid N, the disk is full, permission denied, a read-only file system).
    ``errno`` is the system's error number (``EAGAIN`` for a lock held too long)."""

    def __init__(self, code: int | None, message: str):
        super().__init__(message)
        self.errno = code


class OtherCustomersTicket(UsageError, OSError):
    """A draft for one customer saved (or moved) into a ticket whose live draft is another
    customer's: refused, nothing changed (one ticket is one customer's, and a reply never mixes
    two). Exit 2; an ``OSError`` too, so the draft tool reports it as any save that failed."""


def customer_key(v: Any) -> str:
    """A customer as two drafts are compared by: the address alone (``Ana <ana@x.com>`` is
    ``ana@x.com``), without the characters that show as nothing, in one case."""
    if not isinstance(v, str) or not v.strip():
        return ""
    try:
        return customer_address(v).casefold()
    except ValueError:
        return " ".join(v.split()).casefold()


def same_customer(ticket: str, customer: Any, others: Iterable[tuple[str, Any]]) -> None:
    """Under the backend's lock (or in its transaction), before a draft for ``customer`` becomes
    ``ticket``'s live draft: ``others`` holds (id, customer) of the ticket's other drafts that
    are not rejected (pending, approved, superseded: a ticket is the customer's its replies were
    for, whether a person approved one or a reply with no customer came after). One for another
    customer refuses the save (``OtherCustomersTicket``); a draft without a customer, on either
    side, is no one customer's, and a rejected one (a wrong reply) no one's either."""
    ours = customer_key(customer)
    if not ours:
        return
    for did, theirs in others:
        if customer_key(theirs) not in ("", ours):
            raise OtherCustomersTicket(
                f"ticket {one_line(ticket, 80)}'s draft {did} is for {one_line(theirs, 120)}, "
                f"and this reply is for {one_line(customer, 120)}: one ticket is one customer's (use "
                f"another ticket for {one_line(customer, 120)})")


class ReviewConflict(UsageError):
    """A status change that needs ``force`` (the draft was already decided)."""


def one_live(d: "Draft", live: Iterable[str]) -> None:
    """An approved draft an edit would put back to pending_review, beside the ticket's newer
    live drafts (``live``: their ids): refused, nothing changed (two live drafts in one ticket)."""
    live = list(live)
    if live:
        raise ReviewConflict(
            f"{d.id} was approved, and ticket {one_line(d.ticket, 80)}'s live draft is now {live[0]}: an "
            f"edit would put {d.id} back for review beside it (two live drafts in one ticket); edit "
            f"{live[0]} instead, or reject it first")


class DraftChanged(ReviewConflict):
    """An action carried the version the person was shown, and the draft is no longer at it:
    nothing was changed. ``draft`` is the draft as it is now, ``seen`` the version shown,
    ``text_changed`` whether its text differs from the one shown (else only its status)."""

    def __init__(self, draft: "Draft", seen: str, text_changed: bool):
        self.draft, self.seen, self.text_changed = draft, seen, text_changed
        super().__init__(changed_message(draft, seen, text_changed))


class Probe(NamedTuple):
    """One thing a store's ``probe`` tried (for ``doctor``)."""
    name: str
    ok: bool
    detail: str
    fix: str | None = None


def resolve_reviewer(explicit: str | None = None) -> str:
    """Who is reviewing: ``explicit`` (the caller passes ``AGENTCLI_REVIEWER`` or ``reviewer``
    from agentcli.toml) when it has any text, else the login name. Controls and line breaks are
    removed, at most 64 characters; "unknown" when nothing is left."""
    for cand in (explicit, os.environ.get("USER"), os.environ.get("LOGNAME")):
        name = _NAME_CLEAN.sub("", cand or "").strip()[:64]
        if name:
            return name
    try:

        name = _NAME_CLEAN.sub("", pwd.getpwuid(os.getuid()).pw_name).strip()[:64]
    except (KeyError, ImportError, OSError):
        name = ""
    return name or "unknown"


def _short_time(iso: Any) -> str:
    try:
        return datetime.fromisoformat(str(iso)).astimezone().strftime("%H:%M:%S")
    except (TypeError, ValueError, OverflowError):
        return "?"


_VERBS = {"approved": "approved it", "rejected": "rejected it",
          "superseded": "it was replaced by a newer draft", "pending_review": "put it back to review"}


def _action(h: dict[str, Any]) -> str:
    """One history entry in words: "kim approved it at 14:03:05"."""
    who = _NAME_CLEAN.sub("", str(h.get("who") or "someone"))[:64]
    to, frm = h.get("to"), h.get("from")
    reason = _NAME_CLEAN.sub(" ", str(h.get("reason") or ""))[:120]
    if to == frm:
        what = reason or "changed it"
    elif to == "superseded":
        return f"it was replaced by a newer draft at {_short_time(h.get('when'))}"
    else:
        what = _VERBS.get(str(to), f"set it to {to}")
        if to == "pending_review" and reason:
            what = reason
    return f"{who} {what} at {_short_time(h.get('when'))}"


def changed_message(d: "Draft", seen: str, text_changed: bool) -> str:
    """What happened to a draft since a person was shown version ``seen``: the actions its
    history records after that version (or the last ones, when the version is not in it)."""
    hist = [h for h in d.meta.get("history") or [] if isinstance(h, dict)]
    at = next((i for i in range(len(hist) - 1, -1, -1) if hist[i].get("version") == seen), None)
    since = hist[at + 1:] if at is not None else hist[-3:]
    said = "; ".join(_action(h) for h in since[-3:])
    if text_changed:
        what = ("its text was changed" + f" ({said})" if said else
                "its text or status is not the one you were shown")
    else:
        what = said or f"it is now {d.meta.get('status')}"
    return (f"draft {d.id} changed since it was shown to you (version {seen}, now {d.version}): "
            f"{what}; nothing was changed")



def require_version(d: Draft, expect: str | None, status: str | None = None) -> None:
    """Refuse an action on ``d`` that carries a version it is no longer at (``DraftChanged``),
    except when only its status moved, already to ``status`` (someone did the same action)."""
    if expect is None or d.version == expect:
        return
    was = next((s for s in STATUSES if version_of(s, d.text) == expect), None)
    if status is not None and was is not None and d.meta.get("status") == status and not d.reopened:
        return
    raise DraftChanged(d, expect, text_changed=was is None)


def _reopen(d: Draft) -> None:
    """Persist what reading found: a hand edit after approval made the draft pending again."""
    if d.reopened:
        d.meta["status"] = "approved"  # what the file says
        _record(d, "(hand edit)", "pending_review", d.reopen_reason)
        d.reopened = False


def _record(d: Draft, who: str, to: str, reason: str | None) -> None:
    """Append a review action, with the version the draft is at after it (what a later action
    that carries an older version is told happened since); what a person typed (a reason, a
    reviewer's name) is redacted as the model's text is."""
    hist = list(d.meta.get("history") or [])
    hist.append({"who": redact(who), "when": now_iso(), "from": d.meta.get("status"), "to": to,
                 "reason": redact(reason) if reason is not None else None,
                 "version": version_of(to, d.text)})
    d.meta["history"] = hist[-MAX_HISTORY:]
    d.meta["status"] = to


# =========================================================================== the rules, once

def apply_status(d: Draft, status: str, who: str, reason: str | None, *, force: bool,
                 expect: str | None) -> bool:
    """Change ``d`` (loaded under the store's lock or in its transaction) to ``status``: the
    version check, ``force`` for a decided draft, the history entry, the reviewer and the
    approved text. False: nothing to change (the same status again, or a teammate did the
    same). The caller writes ``d`` when True."""
    current = d.meta.get("status")
    require_version(d, expect, status)
    if current == status and not d.reopened:
        return False
    _reopen(d)
    if current in FINAL and current != status and not force:
        by = d.meta.get("reviewed_by")
        extra = (f" by {d.meta['superseded_by']}" if current == "superseded"
                 else f" by {by}" if by else "")
        raise ReviewConflict(f"draft {d.id} is already {current}{extra}; use --force "
                             "to change it")
    if current != status:
        _record(d, who, status, reason)
        if status != "superseded":
            d.meta["reviewed_by"] = who
            d.meta["reviewed_at"] = d.meta["history"][-1]["when"]
            if reason is not None:
                d.meta["review_reason"] = reason
            else:
                d.meta.pop("review_reason", None)  # a reason belongs to its decision
        if status == "approved":
            d.meta["approved_sha256"] = text_hash(d.text)
            d.meta["approved_text"] = d.text
    return True


def clean_text(text: str) -> str:
    """An edited text as it is stored (a key pasted into the editor is not written either)."""
    text = redact(no_surrogates(text))
    if len(text) > MAX_DRAFT_CHARS:
        raise UsageError(f"the edited text is too long ({len(text)} characters; the limit is "
                         f"{MAX_DRAFT_CHARS})")
    return text


def apply_text(d: Draft, text: str, who: str, expect: str | None) -> bool:
    """Replace ``d``'s text (``text`` from ``clean_text``); False when it is the same text
    (trailing whitespace and final newlines aside: no edit, nothing recorded). An edit of an
    approved draft puts it back to pending_review."""
    if same_text(text, d.text):
        return False
    require_version(d, expect)
    _reopen(d)
    if "original_text" not in d.meta:
        d.meta["original_text"] = d.text  # the text as saved, for the edit size (drafts stats)
    d.text = text
    st = d.meta.get("status")
    if st == "approved":
        _record(d, who, "pending_review", "the text was edited after approval")
    else:
        _record(d, who, st, "edited the text")
    return True


def clean_findings(findings: list[dict[str, Any]]) -> list[Any]:
    return [bounded(x) for x in redact_obj(findings)]


def apply_findings(d: Draft, clean: list[Any], text: str) -> bool | None:
    """Store findings computed for ``text`` on ``d``: None when ``d``'s text is no longer
    ``text`` (nothing stored), False when they are already stored (nothing to write), True when
    the caller must write ``d``. A re-check of an edited text is recorded in the history."""
    if not same_text(text, d.text):
        return None
    if d.findings_current and (d.meta.get("findings") or []) == clean:
        return False
    rechecked = d.findings_for is not None and not d.findings_current
    _reopen(d)
    d.meta["findings"] = clean
    d.meta["findings_sha256"] = text_key(d.text)
    if rechecked:
        errors = [f for f in clean if isinstance(f, dict) and f.get("severity") == "error"]
        kinds = ", ".join(dict.fromkeys(str(f.get("kind")) for f in errors))
        _record(d, "agentcli", d.meta.get("status"),
                "grounding checks run again for the edited text: " +
                (f"{len(errors)} error-level ({kinds})" if errors else
                 f"{len(clean)} warning(s)" if clean else "no findings"))
    return True


ANY = object()  # remote(): no compare-and-set


def apply_remote(d: Draft, field: str, value: dict[str, Any] | None, *, who: str, reason: str,
                 expect: Any = ANY) -> bool:
    """What the helpdesk side did with ``d`` (``helpdesk.push`` / ``export``): ``value``
    becomes ``meta[field]`` ("push" or "exported"; None removes it) and ``reason`` a history
    entry (status unchanged) that also holds ``value``. A compare-and-set: with ``expect`` (a
    key, or None for "no record") the change is made only while ``meta[field]`` is a record with
    that ``"key"`` (or absent, for None); False: nothing changed. This is how a push is claimed
    once (pending, with its key), taken over after a crash, and closed (done, or removed after
    a failure), whatever teammates do at the same time. "exported" is one record per format:
    ``value`` is merged into the record there."""
    current = d.meta.get(field)
    if expect is not ANY:
        have = current.get("key") if isinstance(current, dict) else None
        if have != expect or (expect is None and current is not None):
            return False
    if field == "exported" and value is not None and isinstance(current, dict):
        value = {**current, **value}  # one record per format: merged here, under the lock
    _reopen(d)
    if value is None:
        d.meta.pop(field, None)
    else:
        d.meta[field] = value
    _record(d, who, d.meta.get("status"), reason)
    d.meta["history"][-1][field] = value
    return True


def new_entries(before: list[Any], d: Draft) -> list[dict[str, Any]]:
    """The history entries ``apply_*`` appended to ``d`` (``before``: its history as loaded)."""
    seen = {id(h) for h in before}
    return [h for h in d.meta.get("history") or [] if id(h) not in seen]


class Claim(NamedTuple):
    """Who is reviewing a draft now: ``who`` (the reviewer), ``holder`` (pid, host), until when."""
    who: str
    holder: str
    expires_at: str


# =========================================================================== the protocol

class DraftsBackend(Protocol):
    """What the CLI, the App and the tools ask of a drafts store (see DEVELOPING.md, "The drafts
    store's operations"). Every method is synchronous (the tools call ``save`` in a thread);
    failures are ``SaveFailed`` / ``DraftsFolderError`` (exit 3, an ``OSError``),
    ``UsageError`` (a missing draft, a bad id), ``ReviewConflict`` / ``DraftChanged``."""

    kind: str                    # "folder" or "postgresql"
    location: str                # for messages: the folder, or the queue's URL without password
    on_wait: Callable[[str | None], None] | None

    def exists(self) -> bool: ...
    def missing_message(self) -> str: ...
    def save(self, *, text: str, ticket: str | None = None, order_code: str | None = None,
             customer: str | None = None, question: str | None = None,
             questions: list[str] | None = None, lookups: list[dict[str, Any]] | None = None,
             findings: list[dict[str, Any]] | None = None, model: str | None = None,
             provider: str | None = None, session_id: str | None = None,
             prompt_version: str | None = None, mode: str | None = None) -> tuple[Draft, bool]: ...
    def get(self, did: str) -> Draft: ...
    def resolve_id(self, prefix: str) -> list[str]: ...
    def iter(self) -> Iterator[Draft | Damaged]: ...
    def newest(self, status: str | None = None, ticket: str | None = None,
               since: datetime | None = None) -> Iterator[Draft | Damaged]: ...
    def in_ticket(self, ticket: str) -> list[Draft]: ...
    def move(self, did: str, ticket: str, *, who: str) -> Draft | None: ...
    def set_status(self, did: str, status: str, *, reviewer: str | None,
                   reason: str | None = None, force: bool = False,
                   expect: str | None = None) -> tuple[Draft, bool]: ...
    def set_text(self, did: str, text: str, *, reviewer: str | None = None,
                 expect: str | None = None) -> tuple[Draft, bool]: ...
    def set_findings(self, did: str, findings: list[dict[str, Any]], *, text: str) -> bool: ...
    def claim(self, did: str, who: str, ttl_s: float = CLAIM_TTL_S) -> Claim | None: ...
    def claim_next(self, who: str, ttl_s: float = CLAIM_TTL_S) -> Draft | None: ...
    def release(self, did: str, who: str) -> None: ...
    def wait_for_new(self, timeout_s: float) -> bool: ...
    def import_draft(self, d: Draft) -> bool: ...
    def remote(self, did: str, field: str, value: dict[str, Any] | None, *, who: str,
               reason: str, expect: Any = ANY) -> tuple[Draft, bool]: ...
    def probe(self) -> list[Probe]: ...
    def lock_holder(self) -> str | None: ...
    def close(self) -> None: ...


def claim_holder() -> str:
    """Who holds a claim, for a teammate's screen: "pid 4242 on laptop-kim"."""
    return f"pid {os.getpid()} on {socket.gethostname()[:64]}"
