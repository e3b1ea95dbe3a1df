"""``drafts push``: each selected draft into the helpdesk once, and recorded.

Per draft (``push_one``), working through ``DraftStore.remote`` (a compare-and-set under the
drafts folder's lock) so that a rerun, a crash or two teammates at once never make a second note:

1. **Claim.** A *pending* push record (``meta["push"]``: helpdesk, ticket, a fresh ``key``, who,
   when, pid and host) is written before anything is sent, only if the draft has no push record
   (``expect=None``). A draft already pushed (``done``) is not sent again.
2. **Someone else's pending record** is a push in progress (a teammate now: its process is alive,
   or on another host and younger than :data:`STALE_S`) and is left alone; or a push that ended
   without its record (its process is gone: a crash, SIGKILL, a power cut; or older than
   :data:`STALE_S`). Then the helpdesk is asked first (``Helpdesk.check``: its notes or drafts
   of the ticket, looking for our marker or the draft's words): found, the done record is
   written with the id found and nothing is sent; not found, the push is taken over
   (``expect=`` the old key: of two takers one wins) and sent.
3. **Send**, through ``send.Sender`` (the guard on every request). An answer that may hide a
   note made (a timeout, a dropped connection, a 5xx, an unreadable 2xx) is followed by the
   same check before any retry; an answer that says nothing was made (429, refused connection)
   is retried after its wait; 401/403, 404 and other 4xx end that draft at once (after a 401 the
   run sends nothing more to that helpdesk: the token is wrong for all).
4. **Record.** Done: the record with when, by whom, where (helpdesk and ticket; never the URL)
   and the helpdesk's id, and a history entry saying so. Failed for sure: the pending record is
   removed (a rerun tries again) and the failure is in the history. Not known (the check could
   not be made): the pending record stays, so the next run asks the helpdesk again.

Exit status (``exit_code``): 0 when every selected draft is in the helpdesk (pushed now or
before); 4 when any request failed at the helpdesk or could not be confirmed; else 1 when some
draft was skipped (no helpdesk ticket, a push in progress elsewhere).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from ..drafts.base import DraftsBackend
from ..drafts.format import Draft, now_iso, text_hash
from ..errors import EXIT_API, EXIT_INCOMPLETE, EXIT_OK
from ..providers.retry import BASE_DELAY, Attempts
from ..redact import redact
from .export import plan, pushed
from .rules import Helpdesk
from .send import MAX_WAIT_S, Answer, Sender

RETRIES = 3            # further attempts after a timeout, a 5xx or no connection
BACKOFF_BASE_S = BASE_DELAY  # our own wait before a draft's first retry (doubling, jittered), when
                             # the helpdesk names none; read when a Pusher is made
MAX_LIMITED = 6        # 429 answers one draft may wait out
DRAFT_DEADLINE_S = 600.0  # no new attempt at a draft after this long (so STALE_S holds)
STALE_S = 1800.0       # a pending record older than this (on another host) is a push that ended


@dataclass
class Outcome:
    """What became of one draft: ``status`` is pushed, already, skipped, busy (a push in
    progress elsewhere), failed or unknown (it may be in the helpdesk: run again)."""
    draft: str
    ticket: str | None
    status: str
    message: str
    remote_id: str | None = None

    def record(self, helpdesk: str) -> dict[str, Any]:
        return {"draft": self.draft, "helpdesk": helpdesk, "ticket": self.ticket,
                "status": self.status, "id": self.remote_id, "message": self.message}


def exit_code(outcomes: list[Outcome]) -> int:
    st = {o.status for o in outcomes}
    if st & {"failed", "unknown"}:
        return EXIT_API
    if st & {"skipped", "busy"}:
        return EXIT_INCOMPLETE
    return EXIT_OK


def _host() -> str:
    return socket.gethostname()[:64]


def _alive(rec: dict[str, Any]) -> bool:
    """Is the push of this pending record still going on?"""
    try:
        age = (datetime.now(timezone.utc) - datetime.fromisoformat(str(rec.get("when")))).total_seconds()
    except (TypeError, ValueError):
        age = STALE_S + 1  # a record we cannot date is no live push
    if age > STALE_S or age < -300:  # old, or dated in the future (a clock or a hand gone wrong)
        return False
    if rec.get("host") != _host():
        return True  # another machine: only its age tells
    try:
        pid = int(rec.get("pid"))
    except (TypeError, ValueError):
        return False
    if pid <= 0 or pid == os.getpid():  # ours: this run handles each draft once, so it ended
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Pusher:
    """One run of ``drafts push --to HELPDESK``: ``push_one`` per draft, in order."""

    def __init__(self, store: DraftsBackend, hd: Helpdesk, sender: Sender, who: str,
                 say: Callable[[str], None] = lambda s: None) -> None:
        self.store, self.hd, self.sender, self.who, self.say = store, hd, sender, who, say
        self.auth_failed: str | None = None
        self.attempts = Attempts(RETRIES, BACKOFF_BASE_S)

    # -- the records ----------------------------------------------------------------------
    def _claim(self, d: Draft, ticket: str, expect: Any) -> tuple[Draft, bool, str]:
        key = "p-" + uuid.uuid4().hex[:16]
        rec = {"state": "pending", "key": key, "helpdesk": self.hd.name, "ticket": ticket,
               "who": self.who, "when": now_iso(), "pid": os.getpid(), "host": _host()}
        d2, ok = self.store.remote(d.id, "push", rec, who=self.who, expect=expect,
                                   reason=f"pushing to {self.hd.title} ticket {ticket}")
        return d2, ok, key

    def _done(self, d: Draft, ticket: str, key: str, rid: str | None, how: str) -> Outcome:
        rec = {"state": "done", "key": key, "helpdesk": self.hd.name, "ticket": ticket,
               "id": rid, "what": self.hd.what, "who": self.who, "when": now_iso(),
               "text_sha256": text_hash(d.text)}  # the text as pushed (an edit later is not)
        what = f"{self.hd.what} {rid}" if rid else self.hd.what
        _, ok = self.store.remote(d.id, "push", rec, who=self.who, expect=key,
                                  reason=f"pushed to {self.hd.title} ticket {ticket} as {what}{how}")
        if not ok:  # taken over meanwhile (we were thought gone): the other's record stands
            return Outcome(d.id, ticket, "already", f"in {self.hd.title} ticket {ticket} "
                           "(another push recorded it meanwhile)", rid)
        return Outcome(d.id, ticket, "pushed", f"{self.hd.title} ticket {ticket}: {what}{how}", rid)

    def _failed(self, d: Draft, ticket: str, key: str, why: str, *, keep: bool = False) -> Outcome:
        if keep:  # it may be there: the pending record stays, the next run asks the helpdesk
            self.store.remote(d.id, "push", {**(pushed(self.store.get(d.id)) or {}), "said": why},
                              who=self.who, expect=key,
                              reason=f"push to {self.hd.title} ticket {ticket} not confirmed: {why}")
            return Outcome(d.id, ticket, "unknown", f"{why}; it "
                           "may have arrived: run the push again to check (nothing is sent twice)")
        self.store.remote(d.id, "push", None, who=self.who, expect=key,
                          reason=f"push to {self.hd.title} ticket {ticket} failed: {why}")
        return Outcome(d.id, ticket, "failed", f"ticket {ticket}: {why}")

    # -- the helpdesk ---------------------------------------------------------------------
    def _check(self, d: Draft, ticket: str) -> tuple[str | None, str | None]:
        """(the id of our note or draft already in the ticket, None), (None, None) when it is
        not there, or (None, why) when the helpdesk could not be asked."""
        for _ in range(MAX_LIMITED):
            a = self.sender.send(self.hd.check, ticket, None)
            if a.kind == "ok":
                found = self.hd.find(a.data, d.id, redact(d.text))  # the words as sent
                return (found or None), None
            if a.kind != "limited" or (a.wait or 0) > MAX_WAIT_S:
                return None, f"could not check the ticket: {_why(self.hd, a, ticket)}"
        return None, "could not check the ticket: rate-limited"

    def push_one(self, d: Draft) -> Outcome:
        p = plan(d, self.hd.name)
        if p.record is None:
            return Outcome(d.id, None, "skipped", p.skipped or "")
        ticket = p.record["ticket"]
        cur = pushed(d)
        if cur is None and self.auth_failed:  # nothing claimed, nothing recorded: not tried
            return Outcome(d.id, ticket, "failed", f"ticket {ticket}: not sent: {self.auth_failed}")
        if cur is None:
            now, ok, key = self._claim(d, ticket, None)
            if ok:
                return self._send_same(d, now, ticket, key, p.record["body"])
            d, cur = now, pushed(now)
        if cur is None:  # removed meanwhile: a teammate's push failed; next run
            return Outcome(d.id, ticket, "busy", "a teammate's push of it just ended; run again")
        if cur.get("state") == "done":
            where = f"{cur.get('helpdesk')} ticket {cur.get('ticket')}"
            return Outcome(d.id, ticket, "already", f"already pushed to {where} by "
                           f"{cur.get('who')} at {cur.get('when')}", cur.get("id"))
        if cur.get("helpdesk") != self.hd.name:
            return Outcome(d.id, ticket, "skipped", f"a push of it to "
                           f"{cur.get('helpdesk')} was interrupted: finish it with `drafts push "
                           f"--to {cur.get('helpdesk')}`")
        if _alive(cur):
            return Outcome(d.id, ticket, "busy", f"being pushed by {cur.get('who')} (pid "
                           f"{cur.get('pid')} on {cur.get('host')}) since {cur.get('when')}; "
                           "nothing sent")
        # a push that ended without its record: is the note there?
        if self.auth_failed:
            return Outcome(d.id, ticket, "unknown", f"not checked: {self.auth_failed}")
        found, why = self._check(d, ticket)
        if why:
            return Outcome(d.id, ticket, "unknown", f"ticket {ticket}: an earlier "
                           f"push was interrupted and {why}; nothing sent, run again")
        old = cur.get("key")
        if found:
            return self._done(d, ticket, old, found, " (found in the helpdesk: an earlier push "
                                                     "was interrupted before its record; not sent again)")
        now, ok, key = self._claim(d, ticket, old)
        if not ok:
            return Outcome(d.id, ticket, "busy", "a teammate took the interrupted push over; nothing sent")
        return self._send_same(d, now, ticket, key, p.record["body"])

    def _send_same(self, seen: Draft, now: Draft, ticket: str, key: str,
                   body: dict[str, Any]) -> Outcome:
        """Send, if the draft claimed (``now``, read under the lock) is still the one selected
        (``seen``): approved, at the same version; else the claim is taken back, nothing sent."""
        if now.version != seen.version or now.meta.get("status") != "approved":
            self.store.remote(seen.id, "push", None, who=self.who, expect=key,
                              reason="not pushed: it changed since the push started")
            return Outcome(seen.id, ticket, "skipped", f"it changed since the push "
                           f"started (now {now.meta.get('status')}, version {now.version})")
        return self._send(now, ticket, key, body)

    def _send(self, d: Draft, ticket: str, key: str, body: dict[str, Any]) -> Outcome:
        if self.auth_failed:
            return self._failed(d, ticket, key, f"not sent: {self.auth_failed}")
        start = time.monotonic()
        tries = limited = 0
        while True:
            a = self.sender.send(self.hd.write, ticket, body)
            if a.kind == "ok":
                rid = self.hd.created_id(a.headers, a.data)
                return self._done(d, ticket, key, rid, "")
            if a.kind == "limited":
                limited += 1
                if (a.wait or 0) > MAX_WAIT_S or limited > MAX_LIMITED:
                    return self._failed(d, ticket, key, _why(self.hd, a, ticket))
                self.say(f"{d.id}: {self.hd.title} is rate-limiting: waiting {a.wait:.1f} s")
                continue
            if a.may_have_arrived:
                found, why = self._check(d, ticket)
                if found:
                    return self._done(d, ticket, key, found, " (its answer was lost or unreadable; found in "
                                                             "the helpdesk, not sent again)")
                if why:
                    return self._failed(d, ticket, key, f"{_why(self.hd, a, ticket)}, and it {why}",
                                        keep=True)
                if a.kind == "broken":  # a 2xx says it was made, but it is not to be found
                    return self._done(d, ticket, key, None, " (the helpdesk said it was made; "
                                                            "its answer could not be read)")
            elif a.kind != "unreachable":  # 401, 404, another 4xx, a redirect: final
                why = _why(self.hd, a, ticket)
                if a.kind == "auth":
                    self.auth_failed = f"{self.hd.title} refused the token ({a.status}): check {self.hd.env_token}"
                return self._failed(d, ticket, key, why)
            tries += 1
            if tries > RETRIES or time.monotonic() - start > DRAFT_DEADLINE_S:
                return self._failed(d, ticket, key, f"{_why(self.hd, a, ticket)} (tried {tries} times)")
            wait = a.wait if a.wait else self.attempts.backoff(tries)
            self.say(f"{d.id}: {_why(self.hd, a, ticket)}; trying again in {wait:.1f} s")
            time.sleep(wait)


def _why(hd: Helpdesk, a: Answer, ticket: str) -> str:
    """One line for a failed answer, in the helpdesk's terms (never the URL or the token)."""
    said = f" ({a.said})" if a.said else ""
    if a.kind == "auth":
        return f"{hd.title} refused the token ({a.status}{said}): check {hd.env_token}"
    if a.kind == "missing":
        return f"{hd.title} has no such ticket (404)"
    if a.kind == "limited":
        return f"{hd.title} is rate-limiting: it asks to wait {a.wait:.0f} s; run again later"
    if a.kind == "redirect":
        return (f"{hd.title} answered with a redirect ({a.status}), which agentcli does not "
                f"follow: check {hd.env_url}")
    if a.kind == "server":
        return f"{hd.title} failed ({a.status}){said}"
    if a.kind == "refused":
        return f"{hd.title} refused the request ({a.status}){said}"
    if a.kind == "timeout":
        return f"{hd.title} did not answer: {a.said}"
    if a.kind == "unreachable":
        return f"{hd.title} cannot be reached: {a.said}"
    if a.kind == "broken":
        return f"{hd.title}'s answer could not be read: {a.said}"
    return f"{hd.title}: the connection broke ({a.said})"
