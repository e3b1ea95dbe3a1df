"""The draft file format: a header of ``key: <JSON value>`` lines between ``---`` lines, then the
reply text verbatim.

    ---
    id: "d-3f2a9c1b7e04"
    status: "pending_review"
    ticket: "T-1042"
    ...
    ---
    <the reply text, verbatim>

Writing: every value is JSON on ONE line. ``json.dumps`` already escapes C0 controls; we also
escape every other character that some reader treats as a line break or hides (DEL, C1 controls
incl. U+0085, U+2028/U+2029, bidi controls, zero-width characters, a BOM), so any string round-trips
and ``str.splitlines`` cannot cut a value. Lone surrogates (not text) become U+FFFD.

Reading is lenient about what a person's editor does: a UTF-8 BOM, CRLF line endings,
``key:value`` without a space, a bare unquoted word for a text field (``status: approved``).
Anything else wrong (an unknown status, a value nested too deeply, a wrong type) raises
``ValueError`` with a short reason: the store lists that file as damaged, never drops it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, NamedTuple

from ..redact import redact

STATUSES = ("pending_review", "approved", "rejected", "superseded")
MAX_DRAFT_CHARS = 20_000
MAX_FILE_BYTES = 2 * 1024 * 1024   # a draft file larger than this is not read (damaged)
MAX_DEPTH = 64                     # nesting of a header value (lookups are tool results)
MAX_TICKET_CHARS = 256
PROVENANCE_ROOM = 256 * 1024     # left free at save for history and the approved text
VERSION_CHARS = 10
VERSION_RE = re.compile(r"^[0-9a-f]{6,64}$")

ID_RE = re.compile(r"^d-[0-9a-f]{12}$")
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TEXT_FIELDS = ("id", "status", "created_at", "ticket", "order_code", "customer", "question",
               "model", "provider", "session_id", "conversation_id", "text_sha256",
               "reviewed_by", "reviewed_at", "review_reason", "superseded_by",
               "approved_sha256", "approved_text", "findings_sha256", "prompt_version", "mode",
               "original_text")
LIST_FIELDS = {"questions": str, "lookups": dict, "findings": dict, "history": dict}
# What the helpdesk side recorded (``DraftStore.remote``): an object, or absent. A value of
# another type is damage (listed, never read as "not pushed": that could push a second note).
REMOTE_FIELDS = ("push", "exported")
META_ORDER = TEXT_FIELDS[:15] + ("prompt_version", "mode", "superseded_by", "questions",
                                 "lookups", "findings", "findings_sha256", "history",
                                 "approved_sha256", "approved_text", "original_text")
_UNSAFE = re.compile("[\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                     "\ufeff\ufff9-\ufffb\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def now_iso() -> str:
    # Microseconds: drafts saved within one second still sort by time.
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def draft_id(ticket: str, text: str) -> str:
    """The id of a draft: a hash of (ticket, text). The same reply in the same ticket is the same
    draft, whichever session wrote it (``batch --resume`` reuses it)."""
    h = hashlib.sha256(f"{ticket}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
    return "d-" + h[:12]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def normal_text(text: str) -> str:
    """The text as a reader sees it: line endings as LF, no whitespace at the end of a line, no
    blank lines at the end. An editor that adds a final newline (vim's ``:wq``) or strips
    trailing spaces changes the bytes, not the reply: such a save is not an edit."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(ln.rstrip() for ln in lines).rstrip("\n")


def same_text(a: str, b: str) -> bool:
    return a == b or normal_text(a) == normal_text(b)


def text_key(text: str) -> str:
    """The hash a text is known by in ``findings_sha256`` (its normal form)."""
    return text_hash(normal_text(text))


def text_matches(h: Any, text: str) -> bool:
    """Does the stored hash ``h`` (of the exact text, or of its normal form) name ``text``?"""
    return isinstance(h, str) and bool(h) and h in (text_hash(text), text_key(text))


def version_of(status: Any, text: str) -> str:
    """What a person was shown, as a short hash of the status and the text (its normal form):
    every review action carries it, and the store refuses the action when the draft is no
    longer at it."""
    h = hashlib.sha256(f"{status}\0{normal_text(text)}".encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:VERSION_CHARS]


def no_surrogates(s: str) -> str:
    return _SURROGATE.sub("\ufffd", s)


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return "\\ufffd" if "\ud800" <= c <= "\udfff" else f"\\u{ord(c):04x}"


def dump_value(value: Any) -> str:
    """One line of JSON for a header value; raises ValueError for NaN/inf, RecursionError for a
    value nested beyond the interpreter's limit (callers check depth first)."""
    return _UNSAFE.sub(_escape, json.dumps(value, ensure_ascii=False, allow_nan=False))


def depth_ok(value: Any, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests lists/dicts at most ``limit`` deep (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            if d > limit:
                return False
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return True


def render(meta: dict[str, Any], text: str) -> str:
    lines = ["---"]
    keys = [k for k in META_ORDER if k in meta] + sorted(k for k in meta if k not in META_ORDER)
    for k in keys:
        lines.append(f"{k}: {dump_value(meta[k])}")
    lines.append("---")
    return "\n".join(lines) + "\n" + text


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a value")


def _load_value(key: str, value: str) -> Any:
    try:
        v = json.loads(value, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError(f"{key!r} is nested too deeply") from None
    except ValueError:
        # A person wrote ``status: approved``: a bare word for a text field is that text.
        if key in TEXT_FIELDS and value and value[0] not in "\"[{":
            return value
        raise ValueError(f"{key!r} is not a JSON value") from None
    if not depth_ok(v):
        raise ValueError(f"{key!r} is nested too deeply")
    return v


_CREATED_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:\+00:00|Z)?", re.ASCII)
MAX_CLOCK_AHEAD = timedelta(days=1)  # a teammate's clock may be ahead; a draft from 9999 is no draft


def check_meta(meta: dict[str, Any], stem: str) -> None:
    """A header must be one we can show and sort: the id of its file name, a known status, text
    (or null) in text fields, lists of the right items in list fields."""
    did = meta.get("id")
    if not isinstance(did, str) or not ID_RE.match(did) or did != stem:
        raise ValueError(f"its id is not {stem!r}")
    if meta.get("status") not in STATUSES:
        raise ValueError(f"its status is not one of {', '.join(STATUSES)}")
    for k in TEXT_FIELDS:
        if meta.get(k) is not None and not isinstance(meta[k], str):
            raise ValueError(f"{k!r} is not text")
    for k, item in LIST_FIELDS.items():
        v = meta.get(k)
        if v is not None and not (isinstance(v, list) and all(isinstance(x, item) for x in v)):
            raise ValueError(f"{k!r} is not a list of {'text' if item is str else 'objects'}")
    for k in REMOTE_FIELDS:
        if meta.get(k) is not None and not isinstance(meta[k], dict):
            raise ValueError(f"{k!r} is not an object")
    created = meta.get("created_at")
    if created is not None:  # the queue's order ("last", oldest first, by the text): a UTC time as saved, not ahead
        if not isinstance(created, str) or not _CREATED_RE.fullmatch(created):
            raise ValueError("its created_at is not a time as drafts are saved (2026-12-08T09:30:00+00:00)")
        try:
            when = datetime.fromisoformat(created.replace("Z", "+00:00"))
            if when.tzinfo is None:
                when = when.replace(tzinfo=timezone.utc)
        except ValueError:
            raise ValueError("its created_at is not a time (ISO 8601)") from None
        if when > datetime.now(timezone.utc) + MAX_CLOCK_AHEAD:
            raise ValueError(f"its created_at {created} is in the future")


@dataclass
class Draft:
    meta: dict[str, Any]
    text: str
    path: Path
    # The file says approved, but its text is not the text that was approved (a hand edit after
    # approval), or no approval is on record (the status edited by hand): ``meta["status"]``
    # reads pending_review and the next status change records it (``reopen_reason``).
    reopened: bool = field(default=False)
    # a queue's row version (PostgreSQL: changed at every write); None for a file
    rev: Any = field(default=None, compare=False, repr=False)

    @property
    def id(self) -> str:
        return self.meta["id"]

    @property
    def ticket(self) -> str | None:
        """The ticket; drafts written before tickets existed belong to their conversation."""
        return self.meta.get("ticket") or self.meta.get("conversation_id")

    @property
    def edited(self) -> bool:
        """The text is not the one saved (a hand edit, ``drafts edit``); a change of trailing
        whitespace or final newline alone is no edit."""
        h = self.meta.get("text_sha256")
        return bool(h) and not text_matches(h, self.text)

    @property
    def version(self) -> str:
        return version_of(self.meta.get("status"), self.text)

    @property
    def reopen_reason(self) -> str:
        """Why a draft the file says is approved reads as pending_review (``reopened``)."""
        if self.meta.get("approved_sha256"):
            return "the text was edited after approval"
        return "the file says approved, but no approval is on record (the status was edited by hand)"

    @property
    def findings_for(self) -> str | None:
        """The hash of the text the stored findings were computed for; None: not checked yet
        (saved, and the checks of its question have not run). Drafts saved before
        ``findings_sha256`` existed: the text they were saved with."""
        if "findings_sha256" in self.meta:
            return self.meta["findings_sha256"] or None
        return self.meta.get("text_sha256")

    @property
    def findings_current(self) -> bool:
        """Were the stored findings computed for the text as it is now?"""
        return text_matches(self.findings_for, self.text)

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The error-level findings of the text as it is now (stale ones do not count here: a
        caller checks ``findings_current`` and has the text checked again)."""
        if not self.findings_current:
            return []
        return [f for f in self.meta.get("findings") or []
                if isinstance(f, dict) and f.get("severity") == "error"]

    def record(self) -> dict[str, Any]:
        rec = {k: self.meta.get(k) for k in META_ORDER if k in self.meta}
        rec.update(ticket=self.ticket, path=str(self.path), text=self.text, edited=self.edited,
                   findings=self.meta.get("findings") or [], history=self.meta.get("history") or [],
                   edited_after_approval=self.reopened, version=self.version,
                   findings_current=self.findings_current,
                   push=self.meta.get("push"), exported=self.meta.get("exported") or {})
        return rec


class Damaged(NamedTuple):
    """A file named like a draft that cannot be shown as one (listed as damaged, never dropped).
    Unpacks as ``(path, reason)``."""

    path: Path
    reason: str

    @property
    def id(self) -> str:
        return self.path.name[:-3] if self.path.name.endswith(".md") else self.path.name


# What ``read_regular`` (surrogateescape) makes of bytes that are not UTF-8: U+DC80..U+DCFF.
_NOT_UTF8_RE = re.compile("[\udc80-\udcff]")


def not_utf8(text: str) -> int | None:
    """The line (from 1) of ``text`` that held bytes that are not UTF-8 when it was read with
    ``surrogateescape``, or None."""
    bad = _NOT_UTF8_RE.search(text)
    return None if bad is None else text.count("\n", 0, bad.start()) + 1


def parse(raw: str, path: Path) -> Draft:
    if raw.startswith("\ufeff"):
        raw = raw[1:]
    bad = not_utf8(raw)
    if bad is not None:
        # an editor that saved the file in Latin-1 or Windows-1252 ("J\xfcrgen"): read as text,
        # the reply would be approved, exported and pushed with those bytes as lone surrogates
        # (garbage or a refused request at the helpdesk), and `show --text` could not print it
        raise ValueError(f"line {bad} holds bytes that are not UTF-8 (saved in another "
                         "encoding?); save the file as UTF-8")
    nl = raw.find("\n")
    if nl < 0 or raw[:nl].rstrip("\r").strip() != "---":
        raise ValueError("no metadata header")
    pos = nl + 1
    meta: dict[str, Any] = {}
    while True:
        nl = raw.find("\n", pos)
        line = raw[pos:] if nl < 0 else raw[pos:nl]
        if line.endswith("\r"):
            line = line[:-1]
        if line.strip() == "---":
            pos = len(raw) if nl < 0 else nl + 1
            break
        if nl < 0:
            raise ValueError("unterminated metadata header")
        pos = nl + 1
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        key = key.strip().lstrip("\ufeff")
        if not sep or not _KEY_RE.match(key):
            raise ValueError(f"bad metadata line {line[:40]!r}")
        if key in meta:
            raise ValueError(f"{key!r} appears twice")
        meta[key] = _load_value(key, value.strip())
    check_meta(meta, path.name[:-3] if path.name.endswith(".md") else path.name)
    return reopen_check(Draft(meta=meta, text=raw[pos:], path=path))


def reopen_check(d: Draft) -> Draft:
    """A draft whose status says approved but whose text is not the approved one (a hand edit
    after approval) reads as pending_review, ``reopened``; so does one that says approved with
    no approval on record (``approved_sha256``, written with every approval): a status edited by
    hand, or a file put into the folder, is not a person's approval. ``approved_text`` (the
    approved text itself, for an editor that changed only line ends or trailing spaces) counts
    only while it is the text ``approved_sha256`` names: a ``sed`` over the whole file changes
    the reply and ``approved_text`` alike. A draft approved before approvals were recorded (no
    history, a reviewer named: what older versions wrote, in a folder or a queue) keeps the
    status it says. None of this stops a forger who writes the file: the hashes are no secret."""
    meta = d.meta
    if meta["status"] != "approved":
        return d
    approved = meta.get("approved_sha256")
    if approved:
        if text_matches(approved, d.text):
            return d
        kept = meta.get("approved_text")
        if isinstance(kept, str) and text_matches(approved, kept) and same_text(kept, d.text):
            return d
    elif not meta.get("history") and isinstance(meta.get("reviewed_by"), str) and meta["reviewed_by"].strip():
        return d  # approved before approvals were recorded: a reviewer named, no history kept
    meta["status"] = "pending_review"
    d.reopened = True
    return d


class Unreadable(ValueError):
    """A draft file that is there but cannot be read (its permissions, the disk): not damaged,
    and perhaps some ticket's live draft."""


def read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The text of ``path`` if it is a regular file (not through a symlink) of at most ``limit``
    bytes; ValueError with the reason otherwise. Never blocks on a FIFO or a device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ValueError("it is a symbolic link, not a draft file") from None
        if e.errno == errno.ENOENT:
            raise
        raise Unreadable(f"cannot read it ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("it is not a regular file")
        if st.st_size > limit:
            raise ValueError(f"it is larger than {limit} bytes")
        chunks, total = [], 0
        while total <= limit:
            b = os.read(fd, min(1 << 20, limit + 1 - total))
            if not b:
                break
            chunks.append(b)
            total += len(b)
        if total > limit:
            raise ValueError(f"it is larger than {limit} bytes")
    except OSError as e:
        raise ValueError(f"cannot read it ({e.strerror})") from None
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "surrogateescape")


def bounded(value: Any) -> Any:
    """A provenance value we can always write and read back: JSON-able, finite, not too deep."""
    if not depth_ok(value, MAX_DEPTH - 2):
        return {"omitted": "nested too deeply to store"}
    try:
        dump_value(value)
    except (TypeError, ValueError, RecursionError):
        return {"omitted": "not a JSON value"}
    return value


def fit_provenance(meta: dict[str, Any], text: str) -> str:
    """Render, dropping the oldest lookups then the oldest questions until the file leaves room
    for its review history (``provenance_truncated`` says so)."""
    room = MAX_FILE_BYTES - PROVENANCE_ROOM - 2 * len(text.encode("utf-8", "surrogateescape"))
    content = render(meta, text)
    while len(content.encode("utf-8", "surrogateescape")) > room:
        if meta["lookups"]:
            meta["lookups"] = meta["lookups"][1:]
        elif len(meta["questions"]) > 1:
            meta["questions"] = meta["questions"][1:]
        elif meta["findings"]:
            meta["findings"] = meta["findings"][1:]
        else:
            break
        meta["provenance_truncated"] = True
        content = render(meta, text)
    return content


def safe_ticket(ticket: str) -> str:
    """The ticket as stored: one that holds a secret (an API key pasted as ``--ticket``, a batch
    line whose ``id`` is a key) becomes ``id-<hash>``, stable and distinct per ticket, so no key
    lands in a draft file and two such tickets never supersede each other's drafts."""

    if redact(ticket) == ticket:
        return ticket

    return "id-" + hashlib.sha256(ticket.encode("utf-8", "surrogatepass")).hexdigest()[:24]
