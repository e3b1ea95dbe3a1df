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
import secrets
import socket
import stat
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from ..config import where_set
from ..errors import UsageError, fsync_folder, replace_file, signals_held, write_temp
from ..redact import one_line, redact, redact_obj
from ..vocab import parse_time, ticket_key
from .base import (
    _NAME_CLEAN,
    ANY,
    CLAIM_TTL_S,
    FINAL,
    MAX_HISTORY,
    Claim,
    DraftChanged,
    DraftsFolderError,
    Probe,
    ReviewConflict,
    SaveFailed,
    _record,
    _reopen,
    _short_time,
    apply_findings,
    apply_remote,
    apply_status,
    apply_text,
    changed_message,
    claim_holder,
    clean_findings,
    clean_text,
    one_live,
    require_version,
    resolve_reviewer,
    same_customer,
)
from .format import (
    ID_RE,
    MAX_DRAFT_CHARS,
    MAX_FILE_BYTES,
    MAX_TICKET_CHARS,
    REMOTE_FIELDS,
    STATUSES,
    Damaged,
    Draft,
    Unreadable,
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

__all__ = ["STATUSES", "FINAL", "MAX_HISTORY", "MAX_DRAFT_CHARS", "MAX_FILE_BYTES",
           "MAX_TICKET_CHARS", "Damaged", "Draft", "DraftChanged", "DraftStore",
           "DraftsFolderError", "Probe", "ReviewConflict", "SaveFailed", "changed_message",
           "draft_id", "now_iso", "parse", "render", "require_version", "resolve_reviewer",
           "same_text", "text_hash", "version_of"]

LOCK_TIMEOUT = 10.0                               # seconds to wait for the folder's lock
LOCK_NOTICE_AFTER = 0.3                           # a wait this long is said (on_wait)
TAIL_CHUNK = 64 * 1024                            # the index is read backwards this much at a time
# 2: damaged files are indexed too (a version-1 index left them out, and the first page of
# `drafts list`, read from the index alone, never showed them): an older state means "index again"
STATE_VERSION = 2


_fsync_dir = fsync_folder


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


def not_a_folder(where: Path) -> Path | None:
    """The nearest of ``where`` and its parents that exists, when it is not a folder (a file or
    a device in the way: ``/etc/passwd`` of ``/etc/passwd/drafts``); None otherwise."""
    p = Path(where)
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return None if os.path.isdir(p) else p


def _fix_folder(where: Path, what: str = "at a folder") -> str:
    return f"point {where_set('drafts_dir', where)} {what}"


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
        if os.path.isdir(where):  # there, but nothing can be made in it (/proc, /sys)
            return f"{where} cannot hold files (it is not an ordinary folder)"
        in_the_way = not_a_folder(where)
        if in_the_way is not None:  # AGENTCLI_HOME=/dev/null: it exists, it is no folder
            return f"{in_the_way} is not a folder"
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
        self.token = secrets.token_hex(8)  # this store's claims are its own
        self._cursor: list[str] | None = None  # claim_next: the ids still to look at
        self._seen_mtime: int | None = None     # wait_for_new: the folder as last seen

    # ----------------------------------------------------------------- files

    def _ensure_dir(self) -> None:
        if self.dir.is_dir():
            return
        parent = self.dir.parent
        if not self.create_parents and not parent.is_dir():
            in_the_way = not_a_folder(parent)
            why = (f"{in_the_way} is not a folder" if in_the_way is not None
                   else f"neither does {parent}")
            raise DraftsFolderError(
                f"the drafts folder {self.dir} does not exist, and {why}: check the path "
                f"({where_set('drafts_dir', self.dir)}); agentcli creates a drafts folder only "
                "inside a folder that exists")
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

    @staticmethod
    def _data(content: str) -> bytes:
        data = content.encode("utf-8", "surrogateescape")
        if len(data) > MAX_FILE_BYTES:
            raise UsageError(f"the draft would be larger than {MAX_FILE_BYTES} bytes")
        return data

    def _write_temp(self, content: str) -> str:
        """A temporary file in the folder holding ``content`` (fsynced): its name, for the
        caller to rename into place or remove. Callers hold the signals (``_locked`` does) from
        here until the file is renamed or removed."""
        return write_temp(self.dir, self._data(content), prefix=".tmp-", suffix=".md", on_fd=self._own)

    def _replace(self, path: Path, content: str) -> None:
        """Replace ``path`` with ``content`` atomically (callers hold the lock): written whole
        beside it, then renamed; the temporary file is removed when the rename fails. The
        folder's fsync is the caller's (some replace several files, then sync once)."""
        replace_file(path, self._data(content), prefix=".tmp-", suffix=".md", on_fd=self._own,
                     sync_folder=False)

    def _rewrite(self, d: Draft) -> None:
        """Replace a draft's file atomically (callers hold the lock)."""
        with self._writing():
            self._replace(d.path, render(d.meta, d.text))
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
                        if not self._held_by_us(fd):  # another thread of ours (a batch): no news
                            with contextlib.suppress(Exception):  # a notice never breaks a save
                                self.on_wait(self._holder_of(fd))
                    time.sleep(0.02)
            # Held from here to the release: a save (the new draft, the indexes, the ticket's
            # older drafts superseded) is done whole or not begun, and no temporary file of it
            # is left behind; a Ctrl-C, SIGTERM or SIGHUP meanwhile takes effect after.
            with signals_held():
                if writable:  # who holds it, for a teammate who waits (best effort)
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, 0)
                        os.pwrite(fd, _holder(), 0)
                try:
                    if writable:
                        self._check_index()
                    yield
                finally:
                    if writable:
                        self._write_state()
                        with contextlib.suppress(OSError):
                            os.ftruncate(fd, 0)
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    @staticmethod
    def _held_by_us(fd: int) -> bool:
        """Does the lock file name this very process as its holder?"""
        try:
            rec = json.loads(os.pread(fd, 4096, 0).decode("utf-8", "replace") or "null")
        except (OSError, ValueError, RecursionError):
            return False
        return isinstance(rec, dict) and rec.get("pid") == os.getpid() and \
            rec.get("host") == socket.gethostname()[:64]

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
                              _fix_folder(self.dir))]
            if not self.create_parents and not self.dir.parent.is_dir():
                in_the_way = not_a_folder(self.dir.parent)
                why = (f"{in_the_way} is not a folder" if in_the_way is not None
                       else f"neither does {self.dir.parent}")
                return [Probe("drafts folder", False, f"{self.dir} does not exist, and {why}",
                              f"check {where_set('drafts_dir', self.dir)}: agentcli creates a "
                              "drafts folder only inside a folder that exists")]
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
                              _fix_folder(self.dir, "at a folder you can write"))]
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
            with signals_held():  # the probe file is removed, whatever comes meanwhile
                tmp = self._write_temp("probe\n")
                try:
                    st = os.stat(tmp)
                    os.replace(tmp, tmp + ".replaced")  # drafts are rewritten by rename
                    tmp += ".replaced"
                    # drafts are read back and the folder listed (a write-only 0333 folder
                    # takes the write and refuses both)
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

    # ----------------------------------------------------------------- the index
    #
    # A save must not read the whole folder (20,000 drafts made one take 1.3 s). Two caches,
    # written under the lock and never trusted alone:
    # - ``.index``: one line a draft, appended when it is created: created_at, id, ticket key
    #   (``drafts list`` reads its tail for the first page, newest first);
    # - ``.tickets/KEY``: the ids of one ticket (its earlier drafts, to supersede), KEY a hash
    #   of the ticket.
    # ``.index-state`` holds the folder's mtime as our last writer left it: a folder changed by
    # anything else (a person copying files in, an older agentcli) is indexed again, once,
    # under the lock. A listed id whose file is gone, or whose ticket is not the one asked, is
    # skipped; a file the index does not name is still listed (``_unindexed``).

    INDEX, TICKETS, STATE = ".index", ".tickets", ".index-state"
    ticket_key = staticmethod(ticket_key)  # one key for the folder's and the logs' ticket indexes

    def _append(self, path: Path, line: str) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            if os.fstat(fd).st_size == 0:
                self._own(fd)
            os.write(fd, line.encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)

    def _index_add(self, did: str, created: Any, ticket: str) -> None:
        """Under the lock: a new draft in both indexes (best effort: a failure only costs a
        re-index later, never the draft)."""
        key = self.ticket_key(ticket)
        created = str(created or "").replace("\t", " ").replace("\n", " ")
        with contextlib.suppress(OSError):
            self._append(self.dir / self.INDEX, f"{created}\t{did}\t{key}\n")
        self._index_add_ticket(did, ticket)

    def _index_add_ticket(self, did: str, ticket: str) -> None:
        key = self.ticket_key(ticket)
        with contextlib.suppress(OSError):
            tickets = self._subdir(self.TICKETS)
            self._append(tickets / key, did + "\n")

    def _subdir(self, name: str) -> Path:
        """A folder of the store's own (``.tickets``, ``.claims``), made like its files: the
        team's group and group access in a team folder, owner-only elsewhere."""
        path = self.dir / name
        if path.is_symlink():
            # followed, it would put our files wherever it points (another person's folder):
            # refused like a linked .lock (the ticket index is a cache and does without it)
            raise OSError(errno.ELOOP, f"{name} is a symbolic link, not a folder of agentcli's; "
                          f"remove {path} (agentcli makes a new one)")
        if not path.is_dir():
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, 0o700)
            mode, gid = self._sharing()
            if gid is not None:
                with contextlib.suppress(OSError):
                    os.chown(path, -1, gid)
                    os.chmod(path, 0o2770)
        return path

    def _folder_mtime(self) -> int:
        try:
            return os.stat(self.dir).st_mtime_ns
        except OSError:
            return -1

    def _read_state(self) -> int | None:
        try:
            raw = read_regular(self.dir / self.STATE, 4096)
            rec = json.loads(raw)
            return int(rec["mtime_ns"]) if rec.get("version") == STATE_VERSION else None
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None

    def _write_state(self) -> None:
        """Under the lock, at its release: the folder as we leave it. Written in place (a new
        file would change the folder's mtime again)."""
        path = self.dir / self.STATE
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
            try:
                data = json.dumps({"version": STATE_VERSION, "mtime_ns": self._folder_mtime()}).encode()
                os.pwrite(fd, data.ljust(64), 0)
            finally:
                os.close(fd)

    def _check_index(self) -> None:
        """Under the lock: index again when the folder changed behind our back."""
        if self._read_state() == self._folder_mtime():
            return
        state = self.dir / self.STATE
        if not state.exists():
            with contextlib.suppress(OSError):
                fd = os.open(state, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                try:
                    self._own(fd)
                finally:
                    os.close(fd)
        entries = self._index_entries()
        indexed = {e[1] for e in entries}
        added = []
        for name in self._names():
            did = name[:-3]
            if did in indexed:
                continue
            try:
                d = self._load(self.dir / name)
            except ValueError:
                # damaged: indexed all the same (at the time the file was last written), or the
                # first page, which reads only the index, would never list it as damaged
                try:
                    when = os.lstat(self.dir / name).st_mtime
                except OSError:
                    continue
                created = datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="microseconds")
                added.append((created, did, self.ticket_key("")))
                continue
            except OSError:
                continue
            created = str(d.meta.get("created_at") or "").replace("\t", " ").replace("\n", " ")
            added.append((created, d.id, self.ticket_key(d.ticket or "")))
            self._index_add_ticket(d.id, d.ticket or "")
        if added:
            # the index is in created order (the first page reads its end): written whole again
            merged = sorted({e[1]: e for e in entries + added}.values())
            with contextlib.suppress(OSError, UsageError):
                self._replace(self.dir / self.INDEX, "".join(f"{c}\t{i}\t{k}\n" for c, i, k in merged))

    def _index_entries(self) -> list[tuple[str, str, str]]:
        """(created_at, id, ticket key) of every indexed draft, in the order written."""
        try:
            raw = read_regular(self.dir / self.INDEX, 1 << 30)
        except (OSError, ValueError):
            return []
        out = []
        for line in raw.split("\n"):
            parts = line.split("\t")
            if len(parts) == 3 and ID_RE.match(parts[1]):
                out.append((parts[0], parts[1], parts[2]))
        return out

    def _ticket_ids(self, ticket: str) -> list[str] | None:
        """The ids the ticket index names for ``ticket`` (None: no index yet)."""
        tickets = self.dir / self.TICKETS
        if tickets.is_symlink() or not tickets.is_dir():
            return None  # no index (a linked one is not ours to read: the folder is read instead)
        try:
            raw = read_regular(self.dir / self.TICKETS / self.ticket_key(ticket), 1 << 24)
        except FileNotFoundError:
            return []
        except (OSError, ValueError):
            return None
        return list(dict.fromkeys(x for x in raw.split("\n") if ID_RE.match(x)))

    # ----------------------------------------------------------------- reading

    kind = "folder"

    @property
    def location(self) -> str:
        return str(self.dir)

    def exists(self) -> bool:
        return self.dir.is_dir()

    def close(self) -> None:
        pass

    def get(self, did: str) -> Draft:
        path = self.path_for(did)
        try:
            return self._load(path)
        except FileNotFoundError:
            raise UsageError(f"no draft {did} in {self.dir}") from None
        except ValueError as e:
            raise UsageError(f"draft file {path} is damaged ({e}); fix it by hand") from None

    def resolve_id(self, prefix: str) -> list[str]:
        """The ids of the drafts whose id starts with ``prefix`` (``d-3f2a``), sorted."""
        if len(prefix) == 14:
            # lexists: a dangling or looping link named like the draft is listed (damaged);
            # its id must name it here too, not read as "no draft"
            return [prefix] if os.path.lexists(self.dir / f"{prefix}.md") else []
        return [n[:-3] for n in self._names() if n.startswith(prefix)]

    def iter(self) -> Iterator[Draft | Damaged]:
        """Every file named like a draft: a ``Draft``, or ``Damaged(path, reason)`` (which
        unpacks as ``(path, reason)``) for one that cannot be read as a draft."""
        for name in self._names():
            path = self.dir / name
            try:
                yield self._load(path)
            except FileNotFoundError:
                continue  # removed since the listing
            except ValueError as e:
                yield Damaged(path, str(e))

    def newest(self, status: str | None = None, ticket: str | None = None,
               since: datetime | None = None) -> Iterator[Draft | Damaged]:
        """Drafts newest first, read one at a time (the first page of ``drafts list`` reads
        only its own files): those the index names by created time, then any file it does not
        name (copied in by hand, written by an older agentcli) in their place. ``status``,
        ``ticket`` and ``since`` are hints (the caller still filters)."""
        if ticket is None and self._read_state() == self._folder_mtime():
            # the index names every draft (no writer but ours since): newest first from its end
            yield from self._from_tail(since)
            return
        names = set(self._names())
        if ticket is not None:
            ids = self._ticket_ids(ticket)
            drafts = [x for x in (self.iter() if ids is None else self._loaded(ids, names))]
            yield from sorted(drafts, key=_newest_key, reverse=True)
            return
        entries = sorted({e[1]: e for e in self._index_entries() if f"{e[1]}.md" in names}.values(),
                         reverse=True)
        stray = names - {f"{e[1]}.md" for e in entries}
        extra = sorted(self._loaded([n[:-3] for n in stray], names), key=_newest_key, reverse=True)
        for created, did, _ in entries:
            while extra and _newest_key(extra[0]) > (created, did):
                yield extra.pop(0)
            try:
                yield self._load(self.dir / f"{did}.md")
            except FileNotFoundError:
                continue
            except ValueError as e:
                yield Damaged(self.dir / f"{did}.md", str(e))
        yield from extra

    def _from_tail(self, since: datetime | None) -> Iterator[Draft | Damaged]:
        """The index read backwards, a chunk at a time: the newest drafts without reading the
        rest (an id listed twice, or whose file is gone, is skipped)."""
        seen: set[str] = set()
        try:
            fd = os.open(self.dir / self.INDEX, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return
            pos = os.fstat(fd).st_size
            rest = b""
            while pos > 0:
                step = min(TAIL_CHUNK, pos)
                pos -= step
                chunk = os.pread(fd, step, pos) + rest
                lines = chunk.split(b"\n")
                rest = lines[0] if pos > 0 else b""
                for raw in reversed(lines[1:] if pos > 0 else lines):
                    parts = raw.decode("utf-8", "replace").split("\t")
                    if len(parts) != 3 or not ID_RE.match(parts[1]) or parts[1] in seen:
                        continue
                    seen.add(parts[1])
                    if since is not None:
                        t = parse_time(parts[0])
                        if t is not None and t < since:
                            return  # created order: all that follows is older still
                    path = self.dir / f"{parts[1]}.md"
                    try:
                        yield self._load(path)
                    except FileNotFoundError:
                        continue
                    except ValueError as e:
                        yield Damaged(path, str(e))
        finally:
            os.close(fd)

    def _loaded(self, ids: list[str], names: set[str]) -> list[Draft | Damaged]:
        out: list[Draft | Damaged] = []
        for did in ids:
            if f"{did}.md" not in names:
                continue
            path = self.dir / f"{did}.md"
            try:
                out.append(self._load(path))
            except FileNotFoundError:
                continue
            except ValueError as e:
                out.append(Damaged(path, str(e)))
        return out

    def in_ticket(self, ticket: str, *, strict: bool = False) -> list[Draft]:
        """The drafts of one ticket, oldest first: those its index names (a whole-folder
        search, a cheap text match before parsing, only where no index exists yet). ``strict``:
        a draft of the ticket that cannot be read (its permissions, the disk) is a
        ``DraftsFolderError``, not skipped: it may be the ticket's live draft."""
        ids = self._ticket_ids(ticket)
        if ids is not None:
            out = []
            for did in ids:
                path = self.dir / f"{did}.md"
                try:
                    d = self._load(path)
                except FileNotFoundError:
                    continue
                except (OSError, Unreadable) as e:
                    if strict:
                        raise DraftsFolderError(
                            f"draft file {path} of ticket {one_line(ticket, 80)}: {e}; it may be the "
                            "ticket's live draft, and a new one would make two: fix its permissions "
                            "and try again") from None
                    continue
                except ValueError:
                    continue
                if d.ticket == ticket:
                    out.append(d)
            out.sort(key=lambda d: (d.meta.get("created_at") or "", d.id))
            return out
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

    def missing_message(self) -> str:
        return f"the drafts folder {self.dir} does not exist"

    # ----------------------------------------------------------------- claims

    def _claim_path(self, did: str) -> Path:
        self.path_for(did)  # a draft id, never a path from input
        return self.dir / ".claims" / did

    def claim(self, did: str, who: str, ttl_s: float = CLAIM_TTL_S) -> Claim | None:
        """Claim ``did`` for review by ``who`` until ``ttl_s`` from now (renewed by claiming
        again). The teammate's claim that is in the way, or None: the draft is ours. A claim
        nobody renews expires (a closed terminal frees its draft)."""
        path = self._claim_path(did)
        now = time.time()
        with self._locked():
            theirs = _read_claim(path)
            if theirs is not None and theirs[0] != self.token and theirs[1] > now:
                return theirs[2]
            until = datetime.fromtimestamp(now + ttl_s, timezone.utc).isoformat(timespec="seconds")
            rec = {"token": self.token, "expires": now + ttl_s,
                   "who": redact(who), "holder": claim_holder(), "expires_at": until}
            with self._writing():
                self._subdir(".claims")
                self._replace(path, json.dumps(rec))
        return None

    def claim_next(self, who: str, ttl_s: float = CLAIM_TTL_S) -> Draft | None:
        """The oldest pending draft nobody holds, claimed for ``who`` (None: none is free).
        Walks the index oldest first from where this store's last claim was found."""
        if self._cursor is None:
            entries = sorted({e[1]: e for e in self._index_entries()}.values())
            self._cursor = [e[1] for e in entries]
        while self._cursor:
            did = self._cursor[0]
            try:
                d = self._load(self.dir / f"{did}.md")
            except (OSError, ValueError):
                self._cursor.pop(0)
                continue
            if d.meta.get("status") != "pending_review" or self.claim(did, who, ttl_s) is not None:
                self._cursor.pop(0)
                continue
            return d
        self._cursor = None
        return None

    def release(self, did: str, who: str) -> None:
        path = self._claim_path(did)
        if not path.exists():
            return
        with self._locked():
            theirs = _read_claim(path)
            if theirs is not None and theirs[0] == self.token:
                with contextlib.suppress(OSError):
                    os.unlink(path)

    def wait_for_new(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the folder to change (a new draft); True if it did."""
        if self._seen_mtime is None:
            self._seen_mtime = self._folder_mtime()
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            now = self._folder_mtime()
            if now != self._seen_mtime:  # changed since the last look, even between two waits
                self._seen_mtime = now
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(0.25, left))

    # ----------------------------------------------------------------- writing

    def save(self, *, text: str, ticket: str | None = None, order_code: str | None = None,
             customer: str | None = None, question: str | None = None,
             questions: list[str] | None = None, lookups: list[dict[str, Any]] | None = None,
             findings: list[dict[str, Any]] | None = None, model: str | None = None,
             provider: str | None = None, session_id: str | None = None,
             prompt_version: str | None = None, mode: str | None = None) -> tuple[Draft, bool]:
        """Save a draft of ``ticket``; returns (draft, created). The same text in the same ticket
        is the same draft (``created`` False; a superseded one becomes the live one again). A new
        draft supersedes the ticket's earlier pending ones. ``ticket`` defaults to ``session_id``."""
        ticket, stored, meta = save_fields(text=text, ticket=ticket, order_code=order_code,
                                           customer=customer, question=question,
                                           questions=questions, lookups=lookups,
                                           findings=findings, model=model, provider=provider,
                                           session_id=session_id, prompt_version=prompt_version,
                                           mode=mode)
        with self._locked():
            return self._put(ticket, stored, meta)

    def _put(self, ticket: str, text: str, fields: dict[str, Any]) -> tuple[Draft, bool]:
        """Under the lock: the draft (ticket, text), created with ``fields`` unless it exists;
        either way the ticket's live draft from now on."""
        did = draft_id(ticket, text)
        path = self.dir / f"{did}.md"
        try:
            existing = self._load(path)
            if existing.meta.get("status") == "superseded":
                drafts = self._same_customer(ticket, did, fields.get("customer") or existing.meta.get("customer"))
                # saved again: the latest save of a ticket is its live draft
                _record(existing, "agentcli", "pending_review", "saved again in its ticket")
                existing.meta.pop("superseded_by", None)
                self._rewrite(existing)
                self._supersede(ticket, did, drafts)
                existing = self._load(path)
            return existing, False
        except FileNotFoundError:
            pass
        except ValueError as e:
            raise DraftsFolderError(f"draft file {path} is in the way ({e}); move it "
                                    "aside and try again") from None
        drafts = self._same_customer(ticket, did, fields.get("customer"))  # every draft of it, read once
        meta = {"id": did, "status": "pending_review", "created_at": now_iso(), "ticket": ticket,
                **fields, "text_sha256": text_hash(text)}
        content = fit_provenance(meta, text)
        created = self._create(path, content)
        if created:
            self._index_add(did, meta["created_at"], ticket)
            self._supersede(ticket, did, drafts)
        return self._load(path), created

    def _same_customer(self, ticket: str, did: str, customer: Any) -> list[Draft]:
        """Under the lock: no draft of ``ticket`` but a rejected one is another customer's than
        ``customer`` (``same_customer``). Every draft of the ticket is read, strictly: a live
        draft unread would stay live beside the new one. Returns them (for ``_supersede``)."""
        drafts = self.in_ticket(ticket, strict=True)
        same_customer(ticket, customer, [(d.id, d.meta.get("customer")) for d in drafts
                                         if d.id != did and d.meta.get("status") != "rejected"])
        return drafts

    def _create(self, path: Path, content: str) -> bool:
        """Write a new draft file atomically, never over one that exists: False when it does."""
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
        return created

    def import_draft(self, d: Draft) -> bool:
        """``drafts migrate``: write ``d`` as it is (its id, status, history, findings, text
        byte for byte); False when a draft of that id is already here (nothing changed)."""
        path = self.path_for(d.id)
        meta = dict(d.meta)
        if d.reopened:
            meta["status"] = "approved"  # what its source says; read back as reopened again
        with self._locked():
            created = self._create(path, render(meta, d.text))
            if created:
                self._index_add(d.id, meta.get("created_at"), d.ticket or "")
        return created

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
            moved, _ = self._put(ticket, d.text, moved_fields(d, who))
            _record(d, who, "superseded", f"moved to ticket {ticket} as draft {moved.id}")
            d.meta["superseded_by"] = moved.id
            self._rewrite(d)
            return moved

    def _supersede(self, ticket: str, newer: str, drafts: list[Draft] | None = None) -> None:
        """The ticket's pending drafts but ``newer`` superseded by it (``drafts``: the ticket's,
        as read under this lock already)."""
        for d in self.in_ticket(ticket) if drafts is None else drafts:
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
            if not apply_status(d, status, who, reason, force=force, expect=expect):
                return d, False
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
        text = clean_text(text)
        who = reviewer if reviewer is not None else resolve_reviewer()
        with self._locked():
            d = self.get(did)
            was = d.meta.get("status")
            if not apply_text(d, text, who, expect):
                return d, False
            if was == "approved" and d.meta.get("status") == "pending_review":
                one_live(d, [x.id for x in self.in_ticket(d.ticket, strict=True)
                             if x.id != d.id and x.meta.get("status") == "pending_review"])
            self._rewrite(d)
            return self._load(d.path), True

    def set_findings(self, did: str, findings: list[dict[str, Any]], *, text: str) -> bool:
        """Store the grounding findings computed for ``text`` (replacing earlier ones), under
        the lock; False (nothing stored) when the draft's text is no longer ``text``: findings
        belong to the text they were computed for. A re-check of an edited text is recorded in
        the history; the same findings for the same text again write nothing."""
        text = redact(no_surrogates(text))  # the form the text was stored in
        clean = clean_findings(findings)
        with self._locked():
            d = self.get(did)
            done = apply_findings(d, clean, text)
            if done is None:
                return False
            if done:
                self._rewrite(d)
            return True


    def remote(self, did: str, field: str, value: dict[str, Any] | None, *, who: str,
               reason: str, expect: Any = ANY) -> tuple[Draft, bool]:
        """What the helpdesk side did with a draft (``helpdesk.push`` / ``export``), recorded
        under the lock (``base.apply_remote``: a compare-and-set of ``meta[field]`` and a
        history entry; "exported" is one record per format). Returns (draft as it is now, changed)."""
        if field not in REMOTE_FIELDS:
            raise ValueError(f"not a remote field: {field!r}")
        value = redact_obj(bounded(value)) if value is not None else None
        with self._locked():
            d = self.get(did)
            if not apply_remote(d, field, value, who=who, reason=reason, expect=expect):
                return d, False
            self._rewrite(d)
            return self._load(d.path), True


def save_fields(*, text: str, ticket: str | None, order_code: str | None, customer: str | None,
                question: str | None, questions: list[str] | None,
                lookups: list[dict[str, Any]] | None, findings: list[dict[str, Any]] | None,
                model: str | None, provider: str | None, session_id: str | None,
                prompt_version: str | None = None,
                mode: str | None = None) -> tuple[str, str, dict[str, Any]]:
    """(ticket, text, fields) of a draft as every backend stores it. The draft writer is a sink:
    whatever the model, the database or a question put in it, no secret is written
    (``redact``); the id is the hash of the text as stored."""
    ticket = ticket if ticket is not None else (session_id or "")
    if not isinstance(ticket, str) or len(ticket) > MAX_TICKET_CHARS:
        raise UsageError(f"a ticket id is text of at most {MAX_TICKET_CHARS} characters")
    ticket = safe_ticket(no_surrogates(ticket))
    meta: dict[str, Any] = {
        "order_code": order_code, "customer": customer, "question": question,
        "model": model, "provider": provider, "session_id": session_id,
        "questions": [no_surrogates(str(q)) for q in (questions or [])],
        "lookups": [bounded(x) for x in (lookups or [])],
        "findings": [bounded(x) for x in (findings or [])], "history": [],
        # the findings belong to this text; None: its checks have not run yet
        "findings_sha256": None,
    }
    if prompt_version is not None:
        meta["prompt_version"] = prompt_version
    if mode is not None:
        meta["mode"] = mode
    for k in ("order_code", "customer", "question", "model", "provider", "session_id",
              "prompt_version", "mode"):
        if isinstance(meta.get(k), str):
            meta[k] = no_surrogates(meta[k])
    stored = redact(no_surrogates(text))
    if findings is not None:
        meta["findings_sha256"] = text_key(stored)
    return ticket, stored, redact_obj(meta)


def moved_fields(d: Draft, who: str) -> dict[str, Any]:
    """The fields a moved draft keeps (its provenance and findings), with a history entry."""
    fields = {k: v for k, v in d.meta.items() if k not in (
        "id", "status", "created_at", "ticket", "text_sha256", "history", "reviewed_by",
        "reviewed_at", "review_reason", "superseded_by", "approved_sha256", "approved_text",
        "push", "exported")}
    fields["history"] = [{"who": who, "when": now_iso(), "from": None, "to": "pending_review",
                          "reason": f"moved from ticket {d.ticket} (draft {d.id})"}]
    return fields


def _newest_key(d: Any) -> tuple[str, str]:
    if isinstance(d, Draft):
        return (str(d.meta.get("created_at") or ""), d.id)
    return ("", d.id)


def _read_claim(path: Path) -> tuple[str, float, Claim] | None:
    """(token, expires, claim) of a claim file, or None (absent or unreadable: no claim)."""
    try:
        rec = json.loads(read_regular(path, 8192))
        return (str(rec["token"]), float(rec["expires"]),
                Claim(str(rec.get("who") or "someone")[:64], str(rec.get("holder") or "")[:128],
                      str(rec.get("expires_at") or "")[:40]))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
