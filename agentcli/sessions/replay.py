"""Session replay: ``agentcli log list`` and ``log show`` (no CLI, no heavy imports).

``list_sessions`` summarises every log (newest first); ``open_session`` resolves an id, a unique
prefix, ``last`` or a path; ``rebuild`` turns logged dicts back into event objects so ``agentcli
log show`` re-renders through the same ``TraceRenderer`` as a live session. A damaged log line is
skipped with a warning (``sessions.read_events``), never fatal.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from .. import events as E
from ..errors import UsageError
from ..redact import one_line
from ..vocab import CallRecord, OrderCode, ToolName, parse_time, ticket_key
from .log import MAX_INDEX_BYTES, SESSION_ID_RE, TICKETS, read_events


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
    origin: str | None = None  # "eval" for `agentcli eval` runs (hidden from list/last unless --all)
    drafts_deleted: bool = False  # its drafts went to a temporary folder that no longer exists
    ticket: str | None = None     # the helpdesk ticket (--ticket), else the session id is it
    orders: list[str] = dataclasses.field(default_factory=list)  # order codes looked up

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "started_at": self.started_at, "question": self.question,
                "questions": self.questions, "provider": self.provider, "model": self.model,
                "customer": self.customer, "tool_calls": self.tool_calls,
                "tool_errors": self.tool_errors, "tools": self.tools, "drafts": len(self.drafts),
                "draft_ids": self.drafts, "status": self.status, "usage": self.usage,
                "damaged_lines": self.damaged_lines, "origin": self.origin,
                "drafts_deleted": self.drafts_deleted, "ticket": self.ticket or self.id,
                "orders": self.orders, "path": str(self.path)}

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


def token_count(v: Any) -> int:
    """A logged token count as a number to add up: 0 for anything that is not one (-5, 1e300,
    true, "lots", a 4000-digit number from a hand-edited or foreign log)."""
    return v if type(v) is int and 0 <= v < 2**53 else 0


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
            s.origin = _origin(ev)
            s.drafts_deleted = ev.get("drafts_temporary") is True
            s.ticket = ev.get("ticket") if isinstance(ev.get("ticket"), str) else None
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
            rec = CallRecord.from_dict(ev)
            code = rec.order_code if rec is not None and rec.is_lookup else None
            if code is not None and code not in s.orders and len(s.orders) < 100:
                s.orders.append(code)
        elif t == "draft_saved":
            did = ev.get("id")
            if isinstance(did, str) and did not in s.drafts:
                s.drafts.append(did)
        elif t == "error":
            s.errors += 1
        elif t == "cancelled":
            mark("cancelled")
            open_question = False
        elif t in ("checked", "session_end"):  # the grounding checks' verdict on a question or
            st = ev.get("status")                # a draft; how a session of no question ended
            if isinstance(st, str) and st in _SEVERITY:
                mark(st)
        elif t == "turn_finished":
            st = ev.get("status")
            mark(st if isinstance(st, str) and st in _SEVERITY else "error")
            open_question = False
            u = ev.get("usage")
            if isinstance(u, dict):
                for k in usage:
                    usage[k] += token_count(u.get(k))
    if open_question:
        mark("unfinished")
    s.status = worst
    s.usage = usage
    if s.started_at is None:
        s.started_at = first_ts
    return s


EVAL = "eval"
_ORIGIN_RE = re.compile(r"^[a-z_]{1,20}$")


def _origin(ev: dict[str, Any]) -> str | None:
    o = ev.get("origin")
    return o if isinstance(o, str) and _ORIGIN_RE.match(o) else None


def session_meta(path: Path, warnings: list[str] | None = None) -> dict[str, Any] | None:
    """A log's ``session_start`` record (its first line, read bounded), or None; a log that
    cannot be read is said in ``warnings`` when given (a damaged first line is no session)."""
    try:
        with open(path, "rb") as f:
            first = f.readline(65536)
    except OSError as e:
        if warnings is not None:
            warnings.append(f"{path.name}: cannot read it ({e.strerror or e})")
        return None
    try:
        ev = json.loads(first.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None
    return ev if isinstance(ev, dict) and ev.get("type") == "session_start" else None


def session_origin(path: Path) -> str | None:
    """The ``origin`` of a log's ``session_start`` record."""
    meta = session_meta(path)
    return _origin(meta) if meta is not None else None


MAX_TICKET_SCAN = 10_000  # newest session logs looked at to resume a ticket


def ticket_sessions(directory: Path, ticket: str, warnings: list[str] | None = None) -> list[Path]:
    """The session logs of ``ticket``, oldest first: every log whose ``session_start`` names it
    (a log without a ticket is the ticket of its own session id), and the logs those go on from:
    the one each ``continues`` (``/ticket ID`` moves a conversation into a ticket in a new log
    that continues the old) and the ones it was ``resumed_from`` (a resumed conversation moved
    by ``/ticket ID`` carries its earlier days along). A log that cannot be read may be one of
    them: it is said in ``warnings`` (once), never skipped silently."""
    every = session_files(directory)  # not a regular file: no one's history
    by_id = {p.stem: p for p in every}
    files = every[:MAX_TICKET_SCAN]
    # the ticket's index names its logs among any number; the newest are searched as well
    named = [by_id[x] for x in _indexed(Path(directory), ticket) if x in by_id]
    if ticket in by_id:
        named.append(by_id[ticket])  # a log without a ticket is the ticket of its own session id
    seen = {p.stem for p in files}
    files += [p for p in dict.fromkeys(named) if p.stem not in seen]
    metas: dict[str, dict[str, Any] | None] = {}
    found: dict[str, Path] = {}
    todo: list[str] = []
    named_ids = {p.stem for p in named}
    for p in files:
        unread: list[str] = []
        meta = metas[p.stem] = session_meta(p, unread)
        for w in unread:  # it cannot be read at all
            _warn_once(warnings, w)
        if meta is None and not unread and p.stem in named_ids:  # the ticket's own, its first line damaged
            _warn_once(warnings, f"{p.name}: its first line (the session's start) is damaged; "
                                 "the questions and lookups in it were not read")
        if meta is None or _origin(meta) == EVAL:
            continue
        t = meta.get("ticket")
        if (t if isinstance(t, str) else p.stem) == ticket:
            found[p.stem] = p
            todo.append(p.stem)
    if not found and len(every) > MAX_TICKET_SCAN and warnings is not None:
        warnings.append(f"no log of ticket {one_line(ticket, 60)} among the newest {MAX_TICKET_SCAN:,} of "
                        f"{len(every):,} session logs, and the ticket index names none (logs from before the "
                        "index were not searched)")
    while todo:  # follow the chain of logs each one goes on from
        meta = metas.get(todo.pop())
        if meta is None:
            continue
        earlier = meta.get("resumed_from")
        before = [meta.get("continues"), *(earlier if isinstance(earlier, list) else [])]
        for prev in before:
            if isinstance(prev, str) and prev in by_id and prev not in found:
                found[prev] = by_id[prev]
                todo.append(prev)
    return sorted(found.values(), key=lambda p: (p.stem[:15], p.stem))


def _indexed(directory: Path, ticket: str) -> list[str]:
    """The session ids the ticket index names for ``ticket`` (none without an index)."""
    index = directory / TICKETS
    try:
        if index.is_symlink():
            return []
        fd = os.open(index / ticket_key(ticket), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        raw = os.read(fd, MAX_INDEX_BYTES)
    except OSError:
        return []
    finally:
        os.close(fd)
    ids = raw.decode("ascii", "replace").split("\n")
    return list(dict.fromkeys(x for x in ids if SESSION_ID_RE.match(x)))


def ticket_events(directory: Path, ticket: str,
                  warnings: list[str] | None = None) -> Iterable[tuple[str, list[dict[str, Any]]]]:
    """(session id, its events) for each session log of ``ticket``, oldest first; a log that
    cannot be read is said in ``warnings``."""
    for p in ticket_sessions(directory, ticket, warnings):
        damaged: list[str] = []
        try:
            events = list(read_events(p, damaged))
        except OSError as e:
            _warn_once(warnings, f"{p.name}: cannot read it ({e.strerror or e})")
            continue
        if damaged:  # a line skipped may have been a question or a lookup of the ticket
            more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
            _warn_once(warnings, f"{p.name}: {damaged[0]}{more}")
        yield p.stem, events


def _warn_once(warnings: list[str] | None, message: str) -> None:
    """``message`` added to ``warnings`` unless it is there already: a log that cannot be read
    is found unreadable by the ticket search and again when it is read."""
    if warnings is not None and message not in warnings:
        warnings.append(message)


def session_files(directory: Path, warnings: list[str] | None = None) -> list[Path]:
    """Session logs, newest first (ids start with their UTC start time). Only regular files: a
    FIFO or a device named like a log is not a session (reading it would block); it is skipped,
    with a warning when ``warnings`` is given."""
    d = Path(directory)
    if not d.is_dir():
        return []
    files = []
    for p in d.glob("*.jsonl"):
        if not SESSION_ID_RE.match(p.stem):
            continue
        if p.is_file():
            files.append(p)
        elif warnings is not None:
            warnings.append(f"{p.name}: not a regular file; skipped")
    files.sort(key=_newest_first, reverse=True)
    return files


def _newest_first(p: Path) -> tuple[str, float, str]:
    """The sort key of session logs (reversed: newest first). A log removed since it was listed
    (a teammate's cleanup) sorts as the oldest of its second: one stat, no test before it that
    the removal can fall between."""
    try:
        mtime = p.stat().st_mtime
    except OSError:
        mtime = 0.0
    return p.stem[:15], mtime, p.stem


def list_sessions(directory: Path, *, tool: str | None = None, errors_only: bool = False,
                  limit: int | None = 20, warnings: list[str] | None = None,
                  include_eval: bool = False, ticket: str | None = None,
                  order: OrderCode | None = None, since: datetime | None = None) -> list[SessionSummary]:
    """Summaries of the session logs, newest first, that pass every filter given."""
    out: list[SessionSummary] = []
    # a ticket's logs are found by its search (which lists the folder once); else every log
    paths = (sorted(ticket_sessions(directory, ticket, warnings), key=_newest_first, reverse=True)
             if ticket is not None else session_files(directory, warnings))
    for path in paths:
        local: list[str] = []
        try:
            events = list(read_events(path, local))
        except OSError as e:
            _warn_once(warnings, f"{path.name}: cannot read it ({e.strerror or e})")
            continue
        s = summarise(path.stem, events, path)
        s.damaged_lines = len(local)
        if warnings is not None:
            warnings.extend(local)
        if s.origin == EVAL and not include_eval:
            continue
        if tool and tool not in s.tools:
            continue
        if errors_only and not s.has_errors:
            continue
        if order is not None and order not in s.orders:
            continue
        if since is not None:
            started = parse_time(s.started_at)
            if started is not None and started < since:
                break  # newest first: every later log started earlier still
            if started is None:
                continue
        out.append(s)
        if limit and len(out) >= limit:
            break
    return out


def open_session(directory: Path, token: str, *, include_eval: bool = False) -> Path:
    """A session log from an id, a unique id prefix, ``last`` / ``latest``, or a .jsonl path.
    ``last`` skips `agentcli eval` sessions unless ``include_eval`` (an id always opens)."""
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
        for f in files:
            if include_eval or session_origin(f) != EVAL:
                return f
        raise UsageError(f"only `agentcli eval` sessions are recorded in {d}: use --all to see them")
    if t.endswith(".jsonl"):
        t = t[:-6]
    if not SESSION_ID_RE.match(t):
        raise UsageError(f"not a session id: {token!r} (see `agentcli log list`)")
    exact = d / f"{t}.jsonl"
    if exact.is_file():
        return exact
    if os.path.lexists(exact):  # a FIFO, a device or a dangling link named like a log
        raise UsageError(f"{exact.name} in {d} is not a regular file; it is not a session log")
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
            return not errors_only and (not tool or tool == ToolName.DRAFT)
        return True

    return [ev for ev in events if keep(ev)]


def _event_classes() -> dict[str, type]:
    return {"question": E.Question, "model_request": E.ModelRequest, "text_delta": E.TextDelta,
            "model_response": E.ModelResponse, "retry": E.Retry, "tool_call": E.ToolCallStarted,
            "tool_result": E.ToolResult, "draft_saved": E.DraftSaved,
            "turn_finished": E.TurnFinished, "error": E.Error, "checked": E.Checked,
            "repair": E.Repair}


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
