"""Drafts storage: one human-readable Markdown file per draft, for a person to review.

File format (``<drafts-dir>/<id>.md``)::

    ---
    id: "d-3f2a9c1b7e04"
    status: "pending_review"
    created_at: "2026-11-30T12:00:00+00:00"
    ...                      (one ``key: <JSON value>`` per line)
    ---
    <the reply text, verbatim>

Guarantees:
- the file name is derived by our code from a hash, never from model input, so nothing the
  model sends can place a file outside the drafts directory;
- the id is a hash of (conversation id, text): the same text in the same conversation is the
  same draft, so a retried tool call never duplicates it, even across processes;
- writes are atomic: a temp file in the same directory, fsynced, then ``os.link`` (create, never
  clobber) or ``os.replace`` (status change, under an exclusive lock) — a reader never sees half
  a draft and concurrent writers never lose each other's drafts;
- files are created owner-only (0600).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from .errors import UsageError

STATUSES = ("pending_review", "approved", "rejected")
MAX_DRAFT_CHARS = 20_000
_ID_RE = re.compile(r"^d-[0-9a-f]{12}$")
_META_ORDER = ("id", "status", "created_at", "order_code", "customer", "question", "model",
               "provider", "session_id", "conversation_id", "text_sha256", "reviewed_by",
               "reviewed_at", "review_reason")


def now_iso() -> str:
    # Microseconds: drafts saved within one second still sort by time.
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


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


def draft_id(conversation_id: str, text: str) -> str:
    h = hashlib.sha256(f"{conversation_id}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
    return "d-" + h[:12]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Draft:
    meta: dict[str, Any]
    text: str
    path: Path

    @property
    def id(self) -> str:
        return self.meta["id"]

    @property
    def edited(self) -> bool:
        h = self.meta.get("text_sha256")
        return bool(h) and h != text_hash(self.text)

    def record(self) -> dict[str, Any]:
        rec = {k: self.meta.get(k) for k in _META_ORDER if k in self.meta}
        rec.update(path=str(self.path), text=self.text, edited=self.edited)
        return rec


def render(meta: dict[str, Any], text: str) -> str:
    lines = ["---"]
    keys = [k for k in _META_ORDER if k in meta] + sorted(k for k in meta if k not in _META_ORDER)
    for k in keys:
        lines.append(f"{k}: {json.dumps(meta[k], ensure_ascii=False)}")
    lines.append("---")
    return "\n".join(lines) + "\n" + text


def parse(raw: str, path: Path) -> Draft:
    if not raw.startswith("---\n"):
        raise ValueError("no metadata header")
    end = raw.find("\n---\n", 3)
    if end < 0:
        raise ValueError("unterminated metadata header")
    meta: dict[str, Any] = {}
    for line in raw[4:end].splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition(": ")
        if not sep:
            raise ValueError(f"bad metadata line {line[:40]!r}")
        meta[key.strip()] = json.loads(value)
    _check_meta(meta, path)
    return Draft(meta=meta, text=raw[end + 5:], path=path)


def _check_meta(meta: dict[str, Any], path: Path) -> None:
    """A hand-edited header must still be one we can show and sort: the id of its file name, a
    known status, and text (or null) wherever we wrote text."""
    did = meta.get("id")
    if not isinstance(did, str) or not _ID_RE.match(did) or did != path.stem:
        raise ValueError(f"its id is not {path.stem!r}")
    if meta.get("status") not in STATUSES:
        raise ValueError(f"its status is not one of {', '.join(STATUSES)}")
    for k in _META_ORDER:
        if meta.get(k) is not None and not isinstance(meta[k], str):
            raise ValueError(f"{k!r} is not text")


class DraftStore:
    def __init__(self, directory: Path | str):
        self.dir = Path(directory)

    def _ensure_dir(self) -> None:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OSError(f"cannot create drafts directory: {e.strerror}") from None

    def path_for(self, did: str) -> Path:
        if not _ID_RE.match(did):
            raise UsageError(f"not a draft id: {did!r} (ids look like d-3f2a9c1b7e04)")
        return self.dir / f"{did}.md"

    def _write_temp(self, content: str) -> str:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".md", dir=self.dir)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(content)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return tmp

    def save(self, *, text: str, conversation_id: str, order_code: str | None = None,
             customer: str | None = None, question: str | None = None, model: str | None = None,
             provider: str | None = None, session_id: str | None = None) -> tuple[Draft, bool]:
        """Save a draft; returns (draft, created). An identical draft of this conversation is reused."""
        self._ensure_dir()
        did = draft_id(conversation_id, text)
        path = self.dir / f"{did}.md"
        if path.exists():
            return self.get(did), False
        meta = {
            "id": did, "status": "pending_review", "created_at": now_iso(),
            "order_code": order_code, "customer": customer, "question": question,
            "model": model, "provider": provider, "session_id": session_id,
            "conversation_id": conversation_id, "text_sha256": text_hash(text),
        }
        tmp = self._write_temp(render(meta, text))
        try:
            os.link(tmp, path)  # atomic create that never overwrites
            created = True
            _fsync_dir(self.dir)  # the new name survives a power loss too
        except FileExistsError:
            created = False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return (self.get(did), created)

    def get(self, did: str) -> Draft:
        path = self.path_for(did)
        try:
            raw = path.read_text(encoding="utf-8", errors="surrogateescape")
        except FileNotFoundError:
            raise UsageError(f"no draft {did} in {self.dir}") from None
        except OSError as e:
            raise UsageError(f"cannot read draft file {path} ({e.strerror or e})") from None
        try:
            return parse(raw, path)
        except (ValueError, json.JSONDecodeError) as e:
            raise UsageError(f"draft file {path} is damaged ({e}); fix its header by hand") from None

    def iter(self) -> Iterator[Draft | tuple[Path, str]]:
        """Every draft in the directory; unreadable files come out as (path, reason)."""
        if not self.dir.is_dir():
            return
        for path in self.dir.glob("d-*.md"):
            try:
                yield parse(path.read_text(encoding="utf-8", errors="surrogateescape"), path)
            except (OSError, ValueError) as e:
                yield (path, str(e))

    def list(self) -> list[Draft]:
        drafts = [d for d in self.iter() if isinstance(d, Draft)]
        drafts.sort(key=lambda d: (d.meta.get("created_at") or "", d.id), reverse=True)
        return drafts

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._ensure_dir()
        fd = os.open(self.dir / ".lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def set_status(self, did: str, status: str, *, reviewer: str | None,
                   reason: str | None = None) -> tuple[Draft, bool]:
        """Change a draft's status in place. Returns (draft, changed)."""
        if status not in STATUSES:
            raise UsageError(f"unknown status {status!r}")
        with self._locked():
            d = self.get(did)
            if d.meta.get("status") == status:
                return d, False
            d.meta["status"] = status
            d.meta["reviewed_by"] = reviewer
            d.meta["reviewed_at"] = now_iso()
            if reason is not None:
                d.meta["review_reason"] = reason
            else:
                d.meta.pop("review_reason", None)  # a reason belongs to the decision it explained
            tmp = self._write_temp(render(d.meta, d.text))
            os.replace(tmp, d.path)
            _fsync_dir(self.dir)
            return d, True
