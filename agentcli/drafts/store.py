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
import grp
import json
import os
import pwd
import re
import socket
import stat
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

from ..errors import ConfigError, UsageError
from ..redact import redact, redact_obj
from .format import (
    MAX_DRAFT_CHARS,
    MAX_FILE_BYTES,
    MAX_TICKET_CHARS,
    REMOTE_FIELDS,
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
    same_text,
    text_hash,
    text_key,
    version_of,
)

__all__ = ["STATUSES", "MAX_DRAFT_CHARS", "MAX_FILE_BYTES", "MAX_TICKET_CHARS", "Damaged",
           "Draft", "DraftChanged", "DraftStore", "DraftsFolderError", "Probe", "ReviewConflict",
           "SaveFailed", "draft_id", "now_iso", "parse", "render", "require_version",
           "resolve_reviewer", "text_hash"]

FINAL = ("approved", "rejected", "superseded")   # changing these again needs force=True
LOCK_TIMEOUT = 10.0                               # seconds to wait for the folder's lock
LOCK_NOTICE_AFTER = 0.3                           # a wait this long is said (on_wait)
MAX_HISTORY = 500
ANY = object()                                    # DraftStore.remote: no compare-and-set
_NAME_CLEAN = re.compile("[\x00-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069\u200b-\u200f\ufeff]")


class DraftsFolderError(ConfigError, OSError):
    """The drafts folder cannot be used safely (a symlinked or odd lock, a damaged file in the
    way, a lock held too long). Exit 3; an ``OSError`` too, so the draft tool reports it."""


class SaveFailed(DraftsFolderError):
    """A draft file could not be written; the message says why in a person's words (the
    folder is locked by pid N, the disk is full, permission denied, a read-only file system).
    ``errno`` is the system's error number (``EAGAIN`` for a lock held too long)."""

    def __init__(self, code: int | None, message: str):
        super().__init__(message)
        self.errno = code


class ReviewConflict(UsageError):
    """A status change that needs ``force`` (the draft was already decided)."""


class DraftChanged(ReviewConflict):
    """An action carried the version the person was shown, and the draft is no longer at it:
    nothing was changed. ``draft`` is the draft as it is now, ``seen`` the version shown,
    ``text_changed`` whether its text differs from the one shown (else only its status)."""

    def __init__(self, draft: "Draft", seen: str, text_changed: bool):
        self.draft, self.seen, self.text_changed = draft, seen, text_changed
        super().__init__(changed_message(draft, seen, text_changed))


class Probe(NamedTuple):
    """One thing ``DraftStore.probe`` tried in the folder (for ``doctor``)."""
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


def _login() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except (KeyError, OSError):
        return f"uid {os.getuid()}"


def _owner(path: Path) -> str:
    """", owned by root, mode 0600" for a file we cannot open ("" when it cannot be told)."""
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    try:
        who = pwd.getpwuid(st.st_uid).pw_name
    except (KeyError, OSError):
        who = f"uid {st.st_uid}"
    return f", owned by {who}, mode {stat.S_IMODE(st.st_mode):04o}"


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except (KeyError, OSError):
        return f"gid {gid}"


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


def _holder() -> bytes:
    """What the lock file says while we hold the lock: who and what, for a teammate who waits."""
    words = [w for w in sys.argv[1:3] if re.fullmatch(r"[a-z]{2,12}", w)]
    rec = {"pid": os.getpid(), "user": resolve_reviewer(None), "host": socket.gethostname()[:64],
           "command": " ".join(["agentcli", *words]), "since": now_iso()}
    return (json.dumps(rec) + "\n").encode()


def holder_text(raw: bytes) -> str | None:
    """The holder of a lock, from the lock file's contents: "pid 4242 (kim, agentcli drafts edit,
    since 14:03:05)"; None when it names nobody (an older agentcli, or an empty file)."""
    try:
        rec = json.loads(raw.decode("utf-8", "replace") or "null")
        pid = int(rec["pid"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    parts = [str(rec.get(k))[:64] for k in ("user", "command") if rec.get(k)]
    if rec.get("host") and rec.get("host") != socket.gethostname()[:64]:
        parts.append(f"on {str(rec['host'])[:64]}")
    if rec.get("since"):
        parts.append(f"since {_short_time(rec['since'])}")
    text = f"pid {pid}" + (f" ({', '.join(parts)})" if parts else "")
    return _NAME_CLEAN.sub("", text)


def why_not_written(e: OSError, where: Path) -> str:
    """A failed write in a person's words."""
    n = e.errno
    if n in (errno.ENOSPC, getattr(errno, "EDQUOT", -1)):
        return f"the disk holding {where} is full (or your quota is used up)"
    if n == errno.EROFS:
        return f"{where} is on a read-only file system"
    if n in (errno.EACCES, errno.EPERM):
        return f"permission denied: {_login()} may not write in {where}"
    if n in (errno.ENOENT, errno.ENOTDIR):
        return f"{where} no longer exists"
    return f"{e.strerror or type(e).__name__} in {where}"


class DraftStore:
    """One folder of drafts. ``create_parents``: the folder may be created with its missing
    parents (the default folder, under agentcli's own home); a folder someone named is created
    only inside a folder that exists. ``on_wait(holder)`` is called once when an operation has
    waited ``LOCK_NOTICE_AFTER`` seconds for the folder's lock (``holder``: who holds it, or
    None)."""

    def __init__(self, directory: Path | str, *, create_parents: bool = False,
                 on_wait: Callable[[str | None], None] | None = None):
        self.dir = Path(directory)
        self.create_parents = create_parents
        self.on_wait = on_wait

    # ----------------------------------------------------------------- files

    def _ensure_dir(self) -> None:
        if self.dir.is_dir():
            return
        parent = self.dir.parent
        if not self.create_parents and not parent.is_dir():
            raise DraftsFolderError(
                f"the drafts folder {self.dir} does not exist, and neither does {parent}: check "
                "the path (--drafts-dir, AGENTCLI_DRAFTS_DIR or drafts_dir in agentcli.toml); "
                "agentcli creates a drafts folder only inside a folder that exists")
        try:
            self.dir.mkdir(mode=0o700, parents=self.create_parents, exist_ok=True)  # private
        except OSError as e:
            raise SaveFailed(e.errno, f"cannot create the drafts folder: "
                                      f"{why_not_written(e, self.dir)}") from None

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A failed write says why, in a person's words (``SaveFailed``)."""
        try:
            yield
        except DraftsFolderError:
            raise
        except OSError as e:
            raise SaveFailed(e.errno, why_not_written(e, self.dir)) from None

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
        with self._writing():
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

    def _open_lock(self) -> tuple[int, bool]:
        """The folder's lock file, opened the way every writer opens it: (fd, writable)."""
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
                return fd, True
            except FileExistsError:
                try:
                    return os.open(lock, flags), True
                except OSError as e:  # a teammate's owner-only lock, a read-only file system:
                    if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):  # flock needs no write
                        raise
                    return os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC), False
        except OSError as e:
            if not os.path.lexists(lock):  # no lock yet, and none can be made: the folder's fault
                raise SaveFailed(e.errno, why_not_written(e, self.dir)) from None
            if e.errno == errno.ELOOP:
                why = "is a symbolic link; remove it and try again"
            elif e.errno in (errno.EACCES, errno.EPERM):
                why = (f"cannot be opened by {_login()} ({e.strerror}{_owner(lock)}), "
                       "so no draft can be saved here: ask its owner to remove it (or make it "
                       "group-readable)")
            else:
                why = f"cannot be opened ({e.strerror}); remove it and try again"
            raise DraftsFolderError(f"the drafts lock {lock} {why}") from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._ensure_dir()
        lock = self.dir / ".lock"
        fd, writable = self._open_lock()
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise DraftsFolderError(f"the drafts lock {lock} is not a regular file; remove it")
            start = time.monotonic()
            told = False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    waited = time.monotonic() - start
                    if waited > LOCK_TIMEOUT:
                        who = self._holder_of(fd)
                        raise SaveFailed(errno.EAGAIN, (
                            f"the drafts folder {self.dir} stayed locked by "
                            f"{who or 'another process'} for more than {LOCK_TIMEOUT:g} s; "
                            "try again when it is done")) from None
                    if not told and waited >= LOCK_NOTICE_AFTER and self.on_wait is not None:
                        told = True
                        with contextlib.suppress(Exception):  # a notice never breaks a save
                            self.on_wait(self._holder_of(fd))
                    time.sleep(0.02)
            if writable:  # who holds it, for a teammate who waits (best effort)
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, _holder(), 0)
            try:
                yield
            finally:
                if writable:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    @staticmethod
    def _holder_of(fd: int) -> str | None:
        try:
            return holder_text(os.pread(fd, 4096, 0))
        except OSError:
            return None

    def lock_holder(self) -> str | None:
        """Who holds the folder's lock now ("pid 4242 (kim, agentcli drafts edit, …)"), or None."""
        try:
            fd = os.open(self.dir / ".lock", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return None  # nobody holds it
            except BlockingIOError:
                return self._holder_of(fd) or "another process"
        finally:
            os.close(fd)

    def probe(self) -> list[Probe]:
        """What every save needs, tried for real without changing a draft: the folder (it exists,
        or can be created where it is), the lock (it opens the way every writer opens it and can
        be taken: a root-owned 0600 ``.lock`` makes every save fail), and a file written and
        replaced the way drafts are (with the team's group and mode in a team folder)."""
        out: list[Probe] = []
        if not self.dir.is_dir():
            if self.dir.exists() or self.dir.is_symlink():
                return [Probe("drafts folder", False, f"{self.dir} is not a folder",
                              "point --drafts-dir (or AGENTCLI_DRAFTS_DIR) at a folder")]
            if not self.create_parents and not self.dir.parent.is_dir():
                return [Probe("drafts folder", False, f"{self.dir} does not exist, and neither "
                              f"does {self.dir.parent}", "check --drafts-dir (or "
                              "AGENTCLI_DRAFTS_DIR, or drafts_dir in agentcli.toml): agentcli "
                              "creates a drafts folder only inside a folder that exists")]
            made: list[Path] = []  # created only to be sure it can be, then removed
            try:
                p = self.dir
                while not p.exists() and not p.is_symlink() and p != p.parent:
                    made.append(p)
                    p = p.parent
                for d in reversed(made):
                    os.mkdir(d, 0o700)
            except OSError as e:
                return [Probe("drafts folder", False, f"{self.dir} cannot be created: "
                              f"{why_not_written(e, self.dir.parent)}",
                              "point --drafts-dir (or AGENTCLI_DRAFTS_DIR) at a folder you can write")]
            finally:
                for d in made:
                    with contextlib.suppress(OSError):
                        os.rmdir(d)
            return [Probe("drafts folder", True, f"{self.dir} will be created on the first save")]
        out.append(Probe("drafts folder", True, f"{self.dir}"))
        try:
            fd, writable = self._open_lock()
        except DraftsFolderError as e:
            out.append(Probe("drafts lock", False, e.message, None))
            return out
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                out.append(Probe("drafts lock", True, "can be taken"
                                 + ("" if writable else " (a teammate's lock file, read-only: fine)")))
            except BlockingIOError:
                out.append(Probe("drafts lock", True, f"held now by {self._holder_of(fd) or 'another process'}"
                                 "; saves wait for it (up to 10 s)"))
            except OSError as e:
                out.append(Probe("drafts lock", False, f"cannot be taken ({e.strerror})",
                                 "remove the .lock file; the next save makes a new one"))
        finally:
            os.close(fd)
        try:
            tmp = self._write_temp("probe\n")
            try:
                st = os.stat(tmp)
                os.replace(tmp, tmp + ".replaced")  # drafts are rewritten by rename
                tmp += ".replaced"
                # drafts are read back and the folder listed (a write-only 0333 folder takes
                # the write and refuses both)
                with open(tmp, "rb") as f:
                    f.read()
                if os.path.basename(tmp) not in os.listdir(self.dir):
                    raise OSError(errno.EIO, "a file written there is not in its listing")
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            mode, gid = self._sharing()
            if gid is not None and st.st_gid != gid:
                grp = _group_name(gid)
                out.append(Probe("drafts files", False, f"new drafts would belong to your group, "
                                 f"not the folder's ({grp}): teammates could not read them",
                                 f"join the group {grp} (then log in again)"))
            else:
                out.append(Probe("drafts files", True, "a draft can be written and replaced"
                                 + (" (group-readable for the team)" if gid is not None else "")))
        except (OSError, UsageError) as e:
            why = why_not_written(e, self.dir) if isinstance(e, OSError) else str(e)
            out.append(Probe("drafts files", False, f"no draft can be written: {why}", None))
        return out

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
            # the findings belong to this text; None: its checks have not run yet
            "findings_sha256": None,
        }
        for k in ("order_code", "customer", "question", "model", "provider", "session_id"):
            if isinstance(meta[k], str):
                meta[k] = no_surrogates(meta[k])
        stored = redact(no_surrogates(text))
        if findings is not None:
            meta["findings_sha256"] = text_key(stored)
        with self._locked():
            return self._put(ticket, stored, redact_obj(meta))

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
        with self._writing():
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
                "reviewed_at", "review_reason", "superseded_by", "approved_sha256", "approved_text",
                "push", "exported")}
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
                   reason: str | None = None, force: bool = False,
                   expect: str | None = None) -> tuple[Draft, bool]:
        """Change a draft's status in place, atomically under the lock. Returns (draft, changed);
        the same status again is a no-op (changed False). An approved, rejected or superseded
        draft changes only with ``force`` (else ReviewConflict, exit 2). ``expect``: the version
        the person was shown (``Draft.version``); a draft no longer at it is not changed
        (``DraftChanged``, saying what changed), unless only its status moved, already to
        ``status`` (a teammate did the same: a no-op)."""
        if status not in STATUSES:
            raise UsageError(f"unknown status {status!r}")
        who = redact(reviewer if reviewer is not None else resolve_reviewer())
        reason = redact(reason) if reason is not None else None
        with self._locked():
            d = self.get(did)
            current = d.meta.get("status")
            require_version(d, expect, status)
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

    def set_text(self, did: str, text: str, *, reviewer: str | None = None,
                 expect: str | None = None) -> tuple[Draft, bool]:
        """Replace a draft's reply text (``drafts edit``, ``review``'s edit), under the lock;
        recorded in its history. Like a hand edit, an edit of an approved draft puts it back to
        pending_review (``approved_text`` keeps what was approved). Returns (draft, changed): a
        text that differs only in trailing whitespace or a final newline is no edit (nothing is
        written or recorded). ``expect``: the version the editor was opened on; a draft no
        longer at it is not changed (``DraftChanged``): the other edit or decision is kept."""
        text = redact(no_surrogates(text))  # a key pasted into the editor is not written either
        if len(text) > MAX_DRAFT_CHARS:
            raise UsageError(f"the edited text is too long ({len(text)} characters; the limit is "
                             f"{MAX_DRAFT_CHARS})")
        who = reviewer if reviewer is not None else resolve_reviewer()
        with self._locked():
            d = self.get(did)
            if same_text(text, d.text):
                return d, False
            require_version(d, expect)
            _reopen(d)
            d.text = text
            st = d.meta.get("status")
            if st == "approved":
                _record(d, who, "pending_review", "the text was edited after approval")
            else:
                _record(d, who, st, "edited the text")
            self._rewrite(d)
            return self._load(d.path), True

    def set_findings(self, did: str, findings: list[dict[str, Any]], *, text: str) -> bool:
        """Store the grounding findings computed for ``text`` (replacing earlier ones), under
        the lock; False (nothing stored) when the draft's text is no longer ``text``: findings
        belong to the text they were computed for. A re-check of an edited text is recorded in
        the history; the same findings for the same text again write nothing."""
        text = redact(no_surrogates(text))  # the form the text was stored in
        clean = [bounded(x) for x in redact_obj(findings)]
        with self._locked():
            d = self.get(did)
            if not same_text(text, d.text):
                return False
            if d.findings_current and (d.meta.get("findings") or []) == clean:
                return True
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
            self._rewrite(d)
            return True


    def remote(self, did: str, field: str, value: dict[str, Any] | None, *, who: str,
               reason: str, expect: Any = ANY) -> tuple[Draft, bool]:
        """What the helpdesk side did with a draft (``helpdesk.push`` / ``export``), recorded
        under the lock: ``value`` becomes ``meta[field]`` (``field``: "push" or "exported";
        None removes it) and ``reason`` a history entry (status unchanged) that also holds
        ``value``. A compare-and-set: with ``expect`` (a key, or None for "no record") the
        change is made only while ``meta[field]`` is a record with that ``"key"`` (or absent,
        for None). Returns (draft as it is now, changed). This is how a push is claimed once
        (pending, with its key), taken over after a crash, and closed (done, or removed after a
        failure), whatever teammates do at the same time."""
        if field not in REMOTE_FIELDS:
            raise ValueError(f"not a remote field: {field!r}")
        value = redact_obj(bounded(value)) if value is not None else None
        with self._locked():
            d = self.get(did)
            current = d.meta.get(field)
            if expect is not ANY:
                have = current.get("key") if isinstance(current, dict) else None
                if have != expect or (expect is None and current is not None):
                    return d, False
            _reopen(d)
            if value is None:
                d.meta.pop(field, None)
            else:
                d.meta[field] = value
            _record(d, who, d.meta.get("status"), reason)
            d.meta["history"][-1][field] = value
            self._rewrite(d)
            return self._load(d.path), True


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
        _record(d, "(hand edit)", "pending_review", "the text was edited after approval")
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
