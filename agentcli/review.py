"""Human review and audit: the drafts queue and session replay (no CLI, no heavy imports).

Drafts queue
    ``list_drafts`` filters and orders the draft files (newest first); ``provenance`` finds, in the
    draft's session log, the question and the tool calls/results that preceded its
    ``draft_saved`` event; ``review`` changes a status through ``DraftStore.set_status`` (which
    locks and replaces the file atomically). A hand-edited draft keeps its edit: the status
    change rewrites the header around the text as it is on disk.

Session replay
    ``list_sessions`` summarises every log (newest first); ``open_session`` resolves an id, a
    unique prefix, ``last`` or a path; ``rebuild`` turns logged dicts back into event objects so
    ``agentcli log show`` re-renders through the same ``TraceRenderer`` as a live session. A
    damaged log line is skipped with a warning (``sessions.read_events``), never fatal.

Only the standard library and agentcli's light modules are imported here: ``drafts list`` and
``log list`` must start fast.
"""

from __future__ import annotations

import dataclasses
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable

from .drafts import STATUSES, Draft, DraftStore
from .errors import UsageError
from .sessions import read_events

STATUS_ALIASES = {"pending": "pending_review", "pending_review": "pending_review",
                  "approved": "approved", "approve": "approved",
                  "rejected": "rejected", "reject": "rejected"}
_ID_PREFIX_RE = re.compile(r"^d-[0-9a-f]{4,12}$")
_SESSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_REL_RE = re.compile(r"^(\d+)\s*([mhdw])$")
MAX_REASON_CHARS = 2000


# =========================================================================== drafts queue

def normalise_status(value: str | None) -> str | None:
    if value is None:
        return None
    s = STATUS_ALIASES.get(value.strip().lower())
    if s is None:
        raise UsageError(f"unknown status {value!r}: use one of {', '.join(STATUSES)} (or pending)")
    return s


def parse_since(value: str | None, *, now: datetime | None = None) -> datetime | None:
    """``2026-11-30``, an ISO time, or a relative age ``30m`` / ``12h`` / ``7d`` / ``2w``."""
    if value is None or not value.strip():
        return None
    v = value.strip()
    now = now or datetime.now(timezone.utc)
    m = _REL_RE.match(v.lower())
    if m:
        n, unit = int(m.group(1)), m.group(2)
        delta = {"m": timedelta(minutes=n), "h": timedelta(hours=n), "d": timedelta(days=n),
                 "w": timedelta(weeks=n)}[unit]
        return now - delta
    try:
        dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since {value!r}: use a date (2026-11-30), an ISO time "
                         "(2026-11-30T09:00) or an age (30m, 12h, 7d, 2w)") from None
    if dt.tzinfo is None:
        dt = dt.astimezone()  # a local date/time, as a person means it
    return dt


def _created(d: Draft) -> datetime | None:
    raw = d.meta.get("created_at")
    if not isinstance(raw, str):
        return None
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def list_drafts(store: DraftStore, *, status: str | None = None, order: str | None = None,
                customer: str | None = None, since: datetime | None = None,
                limit: int | None = None,
                warnings: list[str] | None = None) -> list[Draft]:
    """Drafts newest first, filtered; damaged files are reported in ``warnings`` and skipped."""
    status = normalise_status(status)
    order_n = order.strip().upper() if order else None
    cust_n = customer.strip().lower() if customer else None
    out: list[Draft] = []
    for item in store.iter():
        if not isinstance(item, Draft):
            path, why = item
            if warnings is not None:
                warnings.append(f"skipped damaged draft file {path.name} ({why})")
            continue
        d = item
        if "id" not in d.meta:
            if warnings is not None:
                warnings.append(f"skipped draft file {d.path.name} (no id in its header)")
            continue
        if status and d.meta.get("status") != status:
            continue
        if order_n and str(d.meta.get("order_code") or "").upper() != order_n:
            continue
        if cust_n and str(d.meta.get("customer") or "").lower() != cust_n:
            continue
        if since is not None:
            c = _created(d)
            if c is None or c < since:
                continue
        out.append(d)
    out.sort(key=lambda d: (d.meta.get("created_at") or "", d.id), reverse=True)
    return out[:limit] if limit else out


def resolve_draft_id(store: DraftStore, token: str) -> str:
    """A full draft id, or a unique prefix of one (``d-3f2a``); UsageError (exit 2) otherwise."""
    t = (token or "").strip()
    if t.endswith(".md"):
        t = Path(t).name[:-3]
    if not t.startswith("d-") and re.fullmatch(r"[0-9a-f]{4,12}", t):
        t = "d-" + t
    if not _ID_PREFIX_RE.match(t):
        raise UsageError(f"not a draft id: {token!r} (ids look like d-3f2a9c1b7e04; "
                         "see `agentcli drafts list`)")
    if len(t) == 14:
        if not (store.dir / f"{t}.md").exists():
            raise UsageError(f"no draft {t} in {store.dir} (see `agentcli drafts list`)")
        return t
    matches = sorted(p.name[:-3] for p in store.dir.glob(f"{t}*.md")) if store.dir.is_dir() else []
    if not matches:
        raise UsageError(f"no draft matching {t} in {store.dir} (see `agentcli drafts list`)")
    if len(matches) > 1:
        raise UsageError(f"{t} matches {len(matches)} drafts ({', '.join(matches[:4])}"
                         f"{', …' if len(matches) > 4 else ''}): give more of the id")
    return matches[0]


def reviewer() -> str:
    """Who is reviewing: ``$USER`` (then ``$LOGNAME``, then the login name)."""
    name = os.environ.get("USER") or os.environ.get("LOGNAME")
    if not name:
        try:
            import getpass

            name = getpass.getuser()
        except Exception:
            name = "unknown"
    name = re.sub(r"[\x00-\x1f\x7f-\x9f]", "", name).strip()[:64]
    return name or "unknown"


@dataclasses.dataclass
class ReviewOutcome:
    draft: Draft
    changed: bool
    previous: str | None


def review(store: DraftStore, token: str, status: str, *, reason: str | None = None,
           who: str | None = None) -> ReviewOutcome:
    """Approve or reject a draft in place (atomic, under the store's lock). Nothing is sent."""
    status = normalise_status(status) or ""
    if reason is not None:
        reason = reason.strip()
        if len(reason) > MAX_REASON_CHARS:
            raise UsageError(f"--reason is too long ({len(reason)} characters; the limit is "
                             f"{MAX_REASON_CHARS})")
        reason = reason or None
    did = resolve_draft_id(store, token)
    previous = store.get(did).meta.get("status")
    # ``changed`` is decided under the store's lock: of two concurrent approvals exactly one
    # changes the file. ``previous`` (read before the lock) is only used for a note.
    draft, changed = store.set_status(did, status, reviewer=who or reviewer(), reason=reason)
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
    if not isinstance(sid, str) or not _SESSION_RE.match(sid):
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
                res = ev.get("result")
                if ev.get("name") == "draft_reply" and isinstance(res, dict) \
                        and res.get("draft_id") == draft.id:
                    inp = ev.get("input")
                    if prov["original_text"] is None and isinstance(inp, dict):
                        prov["original_text"] = inp.get("text")
                    continue
                calls.append({k: ev.get(k) for k in ("id", "name", "input", "result", "is_error",
                                                     "duration_ms", "outcome")})
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


# =========================================================================== session replay

@dataclasses.dataclass
class SessionSummary:
    id: str
    path: Path
    started_at: str | None = None
    question: str | None = None
    questions: int = 0
    provider: str | None = None
    model: str | None = None
    customer: str | None = None
    tool_calls: int = 0
    tool_errors: int = 0
    tools: list[str] = dataclasses.field(default_factory=list)
    drafts: list[str] = dataclasses.field(default_factory=list)
    status: str = "empty"
    errors: int = 0
    usage: dict[str, int] = dataclasses.field(default_factory=dict)
    damaged_lines: int = 0

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "started_at": self.started_at, "question": self.question,
                "questions": self.questions, "provider": self.provider, "model": self.model,
                "customer": self.customer, "tool_calls": self.tool_calls,
                "tool_errors": self.tool_errors, "tools": self.tools, "drafts": len(self.drafts),
                "draft_ids": self.drafts, "status": self.status, "usage": self.usage,
                "damaged_lines": self.damaged_lines, "path": str(self.path)}

    @property
    def has_errors(self) -> bool:
        return self.tool_errors > 0 or self.errors > 0 or self.status not in ("ok", "empty")


_SEVERITY = {"empty": 0, "ok": 1, "incomplete": 2, "unfinished": 3, "cancelled": 4, "error": 5}


def _iso_from_ts(ts: Any) -> str | None:
    if isinstance(ts, (int, float)):
        try:
            return datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _iso_from_id(sid: str) -> str | None:
    m = re.match(r"^(\d{8}-\d{6})", sid)
    if not m:
        return None
    try:
        return datetime.strptime(m.group(1), "%Y%m%d-%H%M%S").replace(
            tzinfo=timezone.utc).isoformat(timespec="seconds")
    except ValueError:
        return None


def summarise(sid: str, events: Iterable[dict[str, Any]], path: Path) -> SessionSummary:
    s = SessionSummary(id=sid, path=path, started_at=_iso_from_id(sid))
    first_ts: str | None = None
    open_question = False
    worst = "empty"
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0,
             "cache_creation_input_tokens": 0}

    def mark(status: str) -> None:
        nonlocal worst
        if _SEVERITY.get(status, 5) > _SEVERITY.get(worst, 0):
            worst = status

    for ev in events:
        t = ev.get("type")
        if first_ts is None:
            first_ts = _iso_from_ts(ev.get("ts"))
        if t == "session_start":
            s.provider = ev.get("provider") if isinstance(ev.get("provider"), str) else None
            s.model = ev.get("model") if isinstance(ev.get("model"), str) else None
            s.customer = ev.get("customer") if isinstance(ev.get("customer"), str) else None
        elif t == "question":
            s.questions += 1
            if s.question is None and isinstance(ev.get("text"), str):
                s.question = ev["text"]
            if open_question:
                mark("unfinished")
            open_question = True
        elif t == "tool_result":
            s.tool_calls += 1
            name = ev.get("name")
            if isinstance(name, str) and name not in s.tools:
                s.tools.append(name)
            if ev.get("is_error"):
                s.tool_errors += 1
        elif t == "draft_saved":
            did = ev.get("id")
            if isinstance(did, str) and did not in s.drafts:
                s.drafts.append(did)
        elif t == "error":
            s.errors += 1
        elif t == "cancelled":
            mark("cancelled")
            open_question = False
        elif t == "turn_finished":
            st = ev.get("status")
            mark(st if isinstance(st, str) and st in _SEVERITY else "error")
            open_question = False
            u = ev.get("usage")
            if isinstance(u, dict):
                for k in usage:
                    v = u.get(k)
                    if isinstance(v, (int, float)):
                        usage[k] += int(v)
    if open_question:
        mark("unfinished")
    s.status = worst
    s.usage = usage
    if s.started_at is None:
        s.started_at = first_ts
    return s


def session_files(directory: Path) -> list[Path]:
    """Session logs, newest first (ids start with their UTC start time)."""
    d = Path(directory)
    if not d.is_dir():
        return []
    files = [p for p in d.glob("*.jsonl") if _SESSION_RE.match(p.stem)]
    files.sort(key=lambda p: (p.stem[:15], p.stat().st_mtime if p.exists() else 0, p.stem),
               reverse=True)
    return files


def list_sessions(directory: Path, *, tool: str | None = None, errors_only: bool = False,
                  limit: int | None = 20, warnings: list[str] | None = None) -> list[SessionSummary]:
    out: list[SessionSummary] = []
    for path in session_files(directory):
        local: list[str] = []
        try:
            events = list(read_events(path, local))
        except OSError as e:
            if warnings is not None:
                warnings.append(f"{path.name}: cannot read it ({e.strerror})")
            continue
        s = summarise(path.stem, events, path)
        s.damaged_lines = len(local)
        if warnings is not None:
            warnings.extend(local)
        if tool and tool not in s.tools:
            continue
        if errors_only and not s.has_errors:
            continue
        out.append(s)
        if limit and len(out) >= limit:
            break
    return out


def open_session(directory: Path, token: str) -> Path:
    """A session log from an id, a unique id prefix, ``last`` / ``latest``, or a .jsonl path."""
    t = (token or "").strip()
    if not t:
        raise UsageError("no session given: pass an id from `agentcli log list` (or `last`)")
    if t.endswith(".jsonl") and Path(t).is_file():
        return Path(t)  # a log copied from elsewhere (only .jsonl files: never an arbitrary file)
    d = Path(directory)
    if t.lower() in ("last", "latest"):
        files = session_files(d)
        if not files:
            raise UsageError(f"no sessions recorded yet in {d}")
        return files[0]
    if t.endswith(".jsonl"):
        t = t[:-6]
    if not _SESSION_RE.match(t):
        raise UsageError(f"not a session id: {token!r} (see `agentcli log list`)")
    exact = d / f"{t}.jsonl"
    if exact.is_file():
        return exact
    matches = [p for p in session_files(d) if p.stem.startswith(t)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise UsageError(f"{t} matches {len(matches)} sessions "
                         f"({', '.join(p.stem for p in matches[:3])}, …): give more of the id")
    raise UsageError(f"no session {t} in {d} (see `agentcli log list`)")


def filter_events(events: list[dict[str, Any]], *, tool: str | None = None,
                  errors_only: bool = False) -> list[dict[str, Any]]:
    """Keep questions, answers and stops; keep only the tool events the filters select."""
    if not tool and not errors_only:
        return events
    error_ids = {ev.get("id") for ev in events
                 if ev.get("type") == "tool_result" and ev.get("is_error")}
    draft_ids_by_call = {}
    for ev in events:
        if ev.get("type") == "tool_result" and isinstance(ev.get("result"), dict):
            draft_ids_by_call[ev["result"].get("draft_id")] = ev.get("name")

    def keep(ev: dict[str, Any]) -> bool:
        t = ev.get("type")
        if t in ("tool_call", "tool_result"):
            if tool and ev.get("name") != tool:
                return False
            if errors_only and ev.get("id") not in error_ids:
                return False
            return True
        if t == "draft_saved":
            return not errors_only and (not tool or tool == "draft_reply")
        return True

    return [ev for ev in events if keep(ev)]


def _event_classes() -> dict[str, type]:
    from . import events as E

    return {"question": E.Question, "model_request": E.ModelRequest, "text_delta": E.TextDelta,
            "model_response": E.ModelResponse, "retry": E.Retry, "tool_call": E.ToolCallStarted,
            "tool_result": E.ToolResult, "draft_saved": E.DraftSaved,
            "turn_finished": E.TurnFinished, "error": E.Error}


def rebuild(d: dict[str, Any]) -> Any:
    """The event object a logged dict came from (None for records that are not loop events).

    Raises ValueError when the dict lacks a field the event needs.
    """
    cls = _event_classes().get(d.get("type"))  # type: ignore[arg-type]
    if cls is None:
        return None
    names = {f.name for f in dataclasses.fields(cls)}
    try:
        return cls(**{k: v for k, v in d.items() if k in names})
    except TypeError as e:
        raise ValueError(f"{d.get('type')} record is incomplete ({e})") from None


def format_time(iso: str | None) -> str:
    """An ISO UTC time as local ``YYYY-MM-DD HH:MM`` for tables."""
    if not iso:
        return "?"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


def one_line(text: Any, limit: int = 60) -> str:
    from .redact import clean_for_terminal

    s = " ".join(("" if text is None else str(text)).split())
    s = clean_for_terminal(s)
    return s if len(s) <= limit else s[: limit - 1] + "…"
