"""Drafts storage: one human-readable Markdown file per draft, for a person to review.

The file format is in ``drafts_format`` (re-exported here). Guarantees:
- the file name is derived by our code from a hash, never from model input;
- the id is a hash of (ticket, text): the same reply in the same ticket is one draft, whichever
  session wrote it, so a retried tool call or a ``batch --resume`` never duplicates it;
- one live draft per ticket: a new draft marks the ticket's earlier pending drafts ``superseded``
  (with ``superseded_by``), under the folder's lock;
- every status change is appended to the draft's ``history``; an approved, rejected or
  superseded draft changes again only with ``force``; a hand edit after approval reads as
  pending_review again (the approved text is kept in ``approved_text``);
- writes are atomic: a temp file in the same directory, fsynced, then ``os.link`` (create, never
  clobber) or ``os.replace`` (under the lock); a reader never sees half a draft;
- a shared folder is hostile ground: only regular files up to ``MAX_FILE_BYTES`` are read
  (``O_NOFOLLOW | O_NONBLOCK``: a symlink or a FIFO is a damaged entry, never followed or waited
  on); the lock is never followed through a symlink; the lock wait is bounded;
- modes: owner-only 0600; in a group-writable folder (a setgid team folder) 0660 with the
  folder's group, set with fchmod/fchown after creation (umask-independent), never world access.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pwd
import re
import stat
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from ..errors import ConfigError, UsageError
from ..redact import redact, redact_obj
from .format import (
    MAX_DRAFT_CHARS,
    MAX_FILE_BYTES,
    MAX_TICKET_CHARS,
    STATUSES,
    Damaged,
    Draft,
    bounded,
    draft_id,
    dump_value,
    fit_provenance,
    no_surrogates,
    now_iso,
    parse,
    read_regular,
    render,
    safe_ticket,
    text_hash,
)

__all__ = ["STATUSES", "MAX_DRAFT_CHARS", "MAX_FILE_BYTES", "MAX_TICKET_CHARS", "Damaged",
           "Draft", "DraftStore", "DraftsFolderError", "ReviewConflict", "draft_id", "now_iso",
           "parse", "render", "resolve_reviewer", "text_hash"]

FINAL = ("approved", "rejected", "superseded")   # changing these again needs force=True
LOCK_TIMEOUT = 10.0                               # seconds to wait for the folder's lock
MAX_HISTORY = 500
_NAME_CLEAN = re.compile("[\x00-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069\u200b-\u200f\ufeff]")


class DraftsFolderError(ConfigError, OSError):
    """The drafts folder cannot be used safely (a symlinked or odd lock, a damaged file in the
    way, a lock held too long). Exit 3; an ``OSError`` too, so the draft tool reports it."""


class ReviewConflict(UsageError):
    """A status change that needs ``force`` (the draft was already decided)."""


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


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class DraftStore:
    def __init__(self, directory: Path | str):
        self.dir = Path(directory)

    # ----------------------------------------------------------------- files

    def _ensure_dir(self) -> None:
        try:
            self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # ours: private
        except OSError as e:
            raise OSError(f"cannot create drafts directory: {e.strerror}") from None

    def path_for(self, did: str) -> Path:
        if not isinstance(did, str) or not re.match(r"^d-[0-9a-f]{12}$", did):
            raise UsageError(f"not a draft id: {did!r} (ids look like d-3f2a9c1b7e04)")
        return self.dir / f"{did}.md"

    def _sharing(self) -> tuple[int, int | None]:
        """(mode, group) for new files: 0660 + the folder's group when the folder is
        group-writable (and not world-writable), else 0600 and no group change."""
        st = os.stat(self.dir)
        # a world-writable folder is nobody's team folder: stay owner-only there
        if st.st_mode & stat.S_IWGRP and not st.st_mode & stat.S_IWOTH:
            return 0o660, st.st_gid
        return 0o600, None

    def _own(self, fd: int) -> None:
        mode, gid = self._sharing()
        if gid is not None and os.fstat(fd).st_gid != gid:
            with contextlib.suppress(OSError):  # not a member of that group: keep ours
                os.fchown(fd, -1, gid)
        os.fchmod(fd, mode)  # after chown (which may clear mode bits); umask plays no part

    def _write_temp(self, content: str) -> str:
        data = content.encode("utf-8", "surrogateescape")
        if len(data) > MAX_FILE_BYTES:
            raise UsageError(f"the draft would be larger than {MAX_FILE_BYTES} bytes")
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".md", dir=self.dir)
        try:
            self._own(fd)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return tmp

    def _rewrite(self, d: Draft) -> None:
        """Replace a draft's file atomically (callers hold the lock)."""
        tmp = self._write_temp(render(d.meta, d.text))
        try:
            os.replace(tmp, d.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(self.dir)

    def _load(self, path: Path) -> Draft:
        """ValueError (damaged), FileNotFoundError (missing)."""
        return parse(read_regular(path), path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._ensure_dir()
        lock = self.dir / ".lock"
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            try:
                fd = os.open(lock, flags | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    self._own(fd)
                except BaseException:
                    os.close(fd)
                    raise
            except FileExistsError:
                try:
                    fd = os.open(lock, flags)
                except PermissionError:  # a teammate's owner-only lock: flock needs no write
                    fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as e:
            why = "is a symbolic link" if e.errno == errno.ELOOP else f"cannot be opened ({e.strerror})"
            raise DraftsFolderError(f"the drafts lock {lock} {why}; remove it and try again") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise DraftsFolderError(f"the drafts lock {lock} is not a regular file; remove it")
            deadline = time.monotonic() + LOCK_TIMEOUT
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise DraftsFolderError(
                            f"the drafts folder {self.dir} stayed locked by another process for "
                            f"{LOCK_TIMEOUT:g} s; try again") from None
                    time.sleep(0.02)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # ----------------------------------------------------------------- reading

    def get(self, did: str) -> Draft:
        path = self.path_for(did)
        try:
            return self._load(path)
        except FileNotFoundError:
            raise UsageError(f"no draft {did} in {self.dir}") from None
        except ValueError as e:
            raise UsageError(f"draft file {path} is damaged ({e}); fix it by hand") from None

    def iter(self) -> Iterator[Draft | Damaged]:
        """Every file named like a draft: a ``Draft``, or ``Damaged(path, reason)`` (which
        unpacks as ``(path, reason)``) for one that cannot be read as a draft."""
        try:
            names = sorted(e.name for e in os.scandir(self.dir))
        except (FileNotFoundError, NotADirectoryError):
            return
        for name in names:
            if not (name.startswith("d-") and name.endswith(".md")):
                continue
            path = self.dir / name
            try:
                yield self._load(path)
            except FileNotFoundError:
                continue  # removed since the listing
            except ValueError as e:
                yield Damaged(path, str(e))

    def in_ticket(self, ticket: str) -> list[Draft]:
        """The drafts of one ticket, oldest first (a cheap text match before parsing)."""
        needle = dump_value(ticket)
        out = []
        for name in (self._names()):
            path = self.dir / name
            try:
                raw = read_regular(path)
                if needle not in raw:
                    continue
                d = parse(raw, path)
            except (OSError, ValueError):
                continue
            if d.ticket == ticket:
                out.append(d)
        out.sort(key=lambda d: (d.meta.get("created_at") or "", d.id))
        return out

    def _names(self) -> list[str]:
        try:
            return sorted(e.name for e in os.scandir(self.dir)
                          if e.name.startswith("d-") and e.name.endswith(".md"))
        except (FileNotFoundError, NotADirectoryError):
            return []

    # ----------------------------------------------------------------- writing

    def save(self, *, text: str, ticket: str | None = None, order_code: str | None = None,
             customer: str | None = None, question: str | None = None,
             questions: list[str] | None = None, lookups: list[dict[str, Any]] | None = None,
             findings: list[dict[str, Any]] | None = None, model: str | None = None,
             provider: str | None = None, session_id: str | None = None) -> tuple[Draft, bool]:
        """Save a draft of ``ticket``; returns (draft, created). The same text in the same ticket
        is the same draft (``created`` False; a superseded one becomes the live one again). A new
        draft supersedes the ticket's earlier pending ones. ``ticket`` defaults to ``session_id``."""
        ticket = ticket if ticket is not None else (session_id or "")
        if not isinstance(ticket, str) or len(ticket) > MAX_TICKET_CHARS:
            raise UsageError(f"a ticket id is text of at most {MAX_TICKET_CHARS} characters")
        ticket = safe_ticket(no_surrogates(ticket))
        # The draft writer is a sink: whatever the model, the database or a question put in it,
        # no secret is written (``redact``); the id is the hash of the text as stored.
        meta: dict[str, Any] = {
            "order_code": order_code, "customer": customer, "question": question,
            "model": model, "provider": provider, "session_id": session_id,
            "questions": [no_surrogates(str(q)) for q in (questions or [])],
            "lookups": [bounded(x) for x in (lookups or [])],
            "findings": [bounded(x) for x in (findings or [])], "history": [],
        }
        for k in ("order_code", "customer", "question", "model", "provider", "session_id"):
            if isinstance(meta[k], str):
                meta[k] = no_surrogates(meta[k])
        self._ensure_dir()
        with self._locked():
            return self._put(ticket, redact(no_surrogates(text)), redact_obj(meta))

    def _put(self, ticket: str, text: str, fields: dict[str, Any]) -> tuple[Draft, bool]:
        """Under the lock: the draft (ticket, text), created with ``fields`` unless it exists;
        either way the ticket's live draft from now on."""
        did = draft_id(ticket, text)
        path = self.dir / f"{did}.md"
        try:
            existing = self._load(path)
            if existing.meta.get("status") == "superseded":
                # saved again: the latest save of a ticket is its live draft
                _record(existing, "agentcli", "pending_review", "saved again in its ticket")
                existing.meta.pop("superseded_by", None)
                self._rewrite(existing)
                self._supersede(ticket, did)
                existing = self._load(path)
            return existing, False
        except FileNotFoundError:
            pass
        except ValueError as e:
            raise DraftsFolderError(f"draft file {path} is in the way ({e}); move it "
                                    "aside and try again") from None
        meta = {"id": did, "status": "pending_review", "created_at": now_iso(), "ticket": ticket,
                **fields, "text_sha256": text_hash(text)}
        content = fit_provenance(meta, text)
        tmp = self._write_temp(content)
        try:
            os.link(tmp, path)  # atomic create that never overwrites
            created = True
            _fsync_dir(self.dir)
        except FileExistsError:  # a writer that does not take the lock (an older agentcli)
            created = False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if created:
            self._supersede(ticket, did)
        return self._load(path), created

    def move(self, did: str, ticket: str, *, who: str) -> Draft | None:
        """Move a pending draft into ``ticket`` (``/ticket ID`` after a draft): the same text
        becomes that ticket's live draft (its id is a hash of ticket and text, so a new id), with
        the old draft's provenance and findings, and the old one is superseded by it. None when
        the draft is no longer pending (nothing to move)."""
        ticket = safe_ticket(no_surrogates(ticket))
        with self._locked():
            d = self.get(did)
            _reopen(d)
            if d.meta.get("status") != "pending_review":
                return None
            if d.ticket == ticket:
                return d
            fields = {k: v for k, v in d.meta.items() if k not in (
                "id", "status", "created_at", "ticket", "text_sha256", "history", "reviewed_by",
                "reviewed_at", "review_reason", "superseded_by", "approved_sha256", "approved_text")}
            fields["history"] = [{"who": who, "when": now_iso(), "from": None, "to": "pending_review",
                                  "reason": f"moved from ticket {d.ticket} (draft {d.id})"}]
            moved, _ = self._put(ticket, d.text, fields)
            _record(d, who, "superseded", f"moved to ticket {ticket} as draft {moved.id}")
            d.meta["superseded_by"] = moved.id
            self._rewrite(d)
            return moved

    def _supersede(self, ticket: str, newer: str) -> None:
        for d in self.in_ticket(ticket):
            if d.id == newer or d.meta.get("status") != "pending_review":
                continue
            _reopen(d)
            _record(d, "agentcli", "superseded", f"replaced by the newer draft {newer}")
            d.meta["superseded_by"] = newer
            self._rewrite(d)

    def set_status(self, did: str, status: str, *, reviewer: str | None,
                   reason: str | None = None, force: bool = False) -> tuple[Draft, bool]:
        """Change a draft's status in place, atomically under the lock. Returns (draft, changed);
        the same status again is a no-op (changed False). An approved, rejected or superseded
        draft changes only with ``force`` (else ReviewConflict, exit 2)."""
        if status not in STATUSES:
            raise UsageError(f"unknown status {status!r}")
        who = redact(reviewer if reviewer is not None else resolve_reviewer())
        reason = redact(reason) if reason is not None else None
        with self._locked():
            d = self.get(did)
            current = d.meta.get("status")
            if current == status and not d.reopened:
                return d, False
            _reopen(d)
            if current in FINAL and current != status and not force:
                by = d.meta.get("reviewed_by")
                extra = (f" by {d.meta['superseded_by']}" if current == "superseded"
                         else f" by {by}" if by else "")
                raise ReviewConflict(f"draft {did} is already {current}{extra}; use --force "
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
            self._rewrite(d)
            return self._load(d.path), True

    def set_text(self, did: str, text: str, *, reviewer: str | None = None) -> tuple[Draft, bool]:
        """Replace a draft's reply text (``drafts edit``, ``review``'s edit), under the lock;
        recorded in its history. Like a hand edit, an edit of an approved draft puts it back to
        pending_review (``approved_text`` keeps what was approved). Returns (draft, changed)."""
        text = redact(no_surrogates(text))  # a key pasted into the editor is not written either
        if len(text) > MAX_DRAFT_CHARS:
            raise UsageError(f"the edited text is too long ({len(text)} characters; the limit is "
                             f"{MAX_DRAFT_CHARS})")
        who = reviewer if reviewer is not None else resolve_reviewer()
        with self._locked():
            d = self.get(did)
            _reopen(d)
            if text == d.text:
                return d, False
            d.text = text
            st = d.meta.get("status")
            if st == "approved":
                _record(d, who, "pending_review", "the text was edited after approval")
            else:
                _record(d, who, st, "edited the text")
            self._rewrite(d)
            return self._load(d.path), True

    def set_findings(self, did: str, findings: list[dict[str, Any]]) -> Draft:
        """Store the grounding findings of a draft (replacing earlier ones), under the lock."""
        with self._locked():
            d = self.get(did)
            _reopen(d)
            d.meta["findings"] = [bounded(x) for x in redact_obj(findings)]
            self._rewrite(d)
            return self._load(d.path)


def _reopen(d: Draft) -> None:
    """Persist what reading found: a hand edit after approval made the draft pending again."""
    if d.reopened:
        d.meta["status"] = "approved"  # what the file says
        _record(d, "(hand edit)", "pending_review", "the text was edited after approval")
        d.reopened = False


def _record(d: Draft, who: str, to: str, reason: str | None) -> None:
    """Append a review action; what a person typed (a reason, a reviewer's name) is redacted as
    the model's text is."""
    hist = list(d.meta.get("history") or [])
    hist.append({"who": redact(who), "when": now_iso(), "from": d.meta.get("status"), "to": to,
                 "reason": redact(reason) if reason is not None else None})
    d.meta["history"] = hist[-MAX_HISTORY:]
    d.meta["status"] = to
