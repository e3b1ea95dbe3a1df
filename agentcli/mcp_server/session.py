"""One MCP session: one agentcli session on one ticket, by the loop's rules (no SDK here).

An MCP client (Claude Desktop, Claude Code, ...) is the model's side of the loop: it asks for
tools, agentcli runs them. ``McpSession.call(name, arguments)`` runs one call the way the loop's
tool-turn runner does (``loop.run_call``: the same schemas, validation, timeouts and results),
records the same events in the session log (``tool_call``, ``tool_result``, ``draft_saved``,
``checked``) and applies them to the ticket, so ``agentcli log show`` replays the session and a
later ``--ticket ID`` resumes it. What differs is what "read" means:

- a result is read once it is returned to the client (``Ticket.delivered`` for that call only):
  a lookup whose request the client cancelled, or that finished after the client left, is in
  the log but not in any draft's provenance;
- a draft asked for while a lookup of this session is still running (or finished, not yet
  returned) was written before that result existed: it is refused, as the loop refuses a draft
  asked for beside other calls (``loop.unread_beside``). A repeat of a lookup already returned
  does not count;
- drafts run one at a time, in the order they came; lookups run side by side (at most
  ``MAX_IN_FLIGHT`` calls at once).

Each saved draft is checked at once (``App.check``): the findings are stored on the draft (the
review queue shows them), recorded (``checked``) and returned to the client with the result.

A call runs in a task of its own: when the client cancels the request or goes away, the call
still finishes within its timeout and is recorded (a draft half-saved is never the question);
only a signal (SIGTERM, SIGINT) cancels running calls, and each is recorded as cancelled.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Callable

from ..app import App
from ..errors import ConfigError
from ..events import Checked, Event, ToolCallStarted
from ..loop import result_events, run_call, unread_beside
from ..providers import ToolCall
from ..redact import one_line, redact_obj
from ..ticket import Ticket
from ..tools import DRAFT, MAX_TOOL_INPUT_BYTES, CallOutcome
from ..vocab import GROUNDING, Outcome, Status

MAX_IN_FLIGHT = 16        # calls of one session running at once
MAX_PROTOCOL_ERRORS = 100  # recorded one by one; more are counted
MAX_NAME = 64


@dataclass
class ClientSide:
    """The provider, as ``App`` sees it, of an MCP session: the client runs its own model; its
    name (from ``initialize``) is the drafts' and the log's ``model``."""
    name: str = "mcp"
    model: str | None = None

    async def aclose(self) -> None:
        return None


@dataclass(frozen=True)
class Reply:
    """What one call gives the client: the outcome (as the loop's model would get it) and, for a
    saved draft, its grounding findings (None: the checks could not run)."""
    outcome: CallOutcome
    checks: list[dict[str, Any]] | None = None


def _kept_input(value: Any) -> Any:
    try:
        size = len(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return {"omitted": "an input that is not JSON"}
    return value if size <= MAX_TOOL_INPUT_BYTES else {"omitted": f"an input of {size} bytes"}


def premature_message(unread: list[ToolCall]) -> str:
    """The result of a draft refused because lookups of the session had not been returned yet
    (the loop's ``premature_draft_message``, in the terms of an MCP client)."""
    names = ", ".join(sorted({c.name for c in unread}))
    return (f"not saved: this draft was asked for while {names} was still running, before its "
            "result was returned, so it cannot rest on it. Wait for the result, then call "
            "draft_reply again with a reply that states only what the lookups returned.")


class SessionFailed(Exception):
    """The session cannot go on (its log cannot be written): no call runs any more."""


class McpSession:
    def __init__(self, app: App, ticket: Ticket, *, on_fatal: Callable[[], None] = lambda: None):
        self.app = app
        self.ticket = ticket
        self.timeout = float(app.settings.tool_timeout)
        self.on_fatal = on_fatal  # the server stops taking messages
        self.failure: ConfigError | None = None
        self.calls = 0
        self.protocol_errors = 0
        self.client: dict[str, Any] | None = None
        self._pending: dict[str, ToolCall] = {}  # started, not yet returned to the client
        self._tasks: set[asyncio.Task] = set()
        self._drafts = asyncio.Lock()            # FIFO: drafts one at a time, in order
        self._log: Any = None
        self._cancelled = 0

    # -- the session log ----------------------------------------------------------------
    def record(self, ev: Event | dict[str, Any]) -> None:
        """Log ``ev`` (opening the log on first use); a log that cannot be written ends the
        session (``failure``), since a call nobody can replay must not run."""
        if self.failure is not None:
            return
        try:
            if self._log is None:
                self._log = self.app.open_log(self.ticket, {"origin": "mcp"})
            if isinstance(ev, dict):
                self._log.record(ev)
            else:
                self._log(ev)
        except ConfigError as e:
            self.failure = e
            self.on_fatal()

    def apply(self, ev: Event) -> None:
        self.ticket.apply(ev)
        self.record(ev)

    @property
    def log_path(self) -> str | None:
        return str(self._log.path) if self._log is not None else None

    def client_seen(self, name: Any, version: Any, protocol: Any) -> None:
        """The client named itself (``initialize``): recorded once; its name is the model."""
        if self.client is not None:
            return
        self.client = {"name": one_line(name, MAX_NAME) if isinstance(name, str) else None,
                       "version": one_line(version, MAX_NAME) if isinstance(version, str) else None,
                       "protocol_version": one_line(protocol, 40) if isinstance(protocol, str) else None}
        self.app.provider.model = self.client["name"]
        self.record({"type": "mcp_client", "session_id": self.ticket.session_id, **self.client})

    def protocol_error(self, code: int, message: str, request_id: Any) -> None:
        """A message answered with a JSON-RPC error before it reached a tool."""
        self.protocol_errors += 1
        if self.protocol_errors <= MAX_PROTOCOL_ERRORS:
            rid = request_id if isinstance(request_id, int) else (
                one_line(request_id, MAX_NAME) if isinstance(request_id, str) else None)
            self.record({"type": "mcp_protocol_error", "session_id": self.ticket.session_id,
                         "code": code, "message": message, "request_id": rid})

    # -- one call -----------------------------------------------------------------------
    async def call(self, name: Any, arguments: Any) -> Reply:
        """Run one ``tools/call``: recorded, run by the loop's rules, returned. Raises
        SessionFailed when the session log cannot be written."""
        if self.failure is not None:
            raise SessionFailed(self.failure.message)
        self.calls += 1
        shown = name if isinstance(name, str) and len(name) <= MAX_NAME else one_line(name, MAX_NAME)
        call = ToolCall(f"mcp-{self.calls}", shown, {} if arguments is None else arguments)
        # What the log and the ticket keep of it: an input too large for the tool (refused by
        # its validation) is summarised, so a client cannot fill the disk through the log.
        kept = ToolCall(call.id, call.name, _kept_input(call.input))
        registry = self.app.registry
        is_draft = registry.effect(call.name) == DRAFT
        # What a draft would have been written before: the lookups not yet returned.
        unread = unread_beside(registry, self.ticket.seen,
                               [c for c in self._pending.values() if registry.get(c.name)]) \
            if is_draft else []
        view = self.ticket.view()
        self.record(ToolCallStarted(kept.id, kept.name, kept.input))
        if self.failure is not None:
            raise SessionFailed(self.failure.message)
        if len(self._pending) >= MAX_IN_FLIGHT:
            out = CallOutcome(f"too many calls at once ({MAX_IN_FLIGHT} are running): wait for "
                              "their results, then call again", True, Outcome.INVALID_INPUT, 0.0)
            self._finished(kept, out)
            self.ticket.delivered({call.id})
            return Reply(out)
        self._pending[call.id] = call
        task = asyncio.create_task(self._run(call, kept, view, unread, is_draft))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            reply = await asyncio.shield(task)
        except asyncio.CancelledError:
            # The request was cancelled (the client's notifications/cancelled, the client gone,
            # or a signal): the call finishes on its own and is recorded; it is never returned.
            task.add_done_callback(lambda _t: self._pending.pop(call.id, None))
            raise
        self._pending.pop(call.id, None)
        self.ticket.delivered({call.id})
        return reply

    async def _run(self, call: ToolCall, kept: ToolCall, view: Any, unread: list[ToolCall],
                   is_draft: bool) -> Reply:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            if not is_draft:
                return self._finished(kept, await run_call(self.app.registry, self.app.deps(), view,
                                                           call, self.timeout))
            async with self._drafts:
                if unread:
                    out = CallOutcome(premature_message(unread), True, Outcome.INVALID_INPUT, 0.0)
                else:
                    out = await run_call(self.app.registry, self.app.deps(), view, call,
                                         self.timeout)
                reply = self._finished(kept, out)
                if out.draft is None or out.is_error:
                    return reply
                return dataclasses.replace(reply, checks=await self._check())
        except asyncio.CancelledError:
            self._cancelled += 1
            ms = round((loop.time() - t0) * 1000, 3)
            self._finished(kept, CallOutcome(
                "cancelled: the session was stopped before the call finished"
                + (" (the draft may have been saved: the same text again is safe)" if is_draft else ""),
                True, Outcome.CANCELLED, ms))
            raise

    def _finished(self, call: ToolCall, out: CallOutcome) -> Reply:
        for ev in result_events(call, out):
            self.apply(ev)
        return Reply(out)

    async def _check(self) -> list[dict[str, Any]] | None:
        """The grounding findings of the draft just saved (stored on it by ``App.check``)."""
        live = self.ticket.live
        try:
            findings = await self.app.check(self.ticket)
        except Exception:  # a bug in the checks must not lose the draft's result
            return None
        errors = [f for f in findings if f.get("severity") == "error"]
        message = None
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            message = f"{errors[0].get('kind')}: {errors[0].get('message')}{more}; a person must look"
        self.apply(Checked(findings, Status.INCOMPLETE if errors else Status.OK,
                           GROUNDING if errors else None, message))
        return redact_obj([f for f in findings if live is not None and f.get("where") == live.id])

    # -- the end ------------------------------------------------------------------------
    async def finish(self, reason: str, *, cancel: bool = False, gone: bool = False,
                     crashed: bool = False) -> str:
        """End the session: calls still running finish within their timeout (``cancel``: are
        cancelled, each recorded as such); then the ``session_end`` record (``gone``: the client
        left before every result was written). Returns its status."""
        running = [t for t in self._tasks if not t.done()]
        stopped = False
        if running and not cancel:
            try:
                _, pending = await asyncio.wait(running, timeout=self.timeout + 1.0)
            except asyncio.CancelledError:  # a signal while waiting for them
                stopped = cancel = True
                reason = "stopped by a signal (SIGINT or SIGTERM)"
                pending = set(running)
            running = list(pending)
        for t in running:
            t.cancel()
        if running:
            await asyncio.wait(running, timeout=5.0)
        if self._cancelled:
            self.record({"type": "cancelled", "session_id": self.ticket.session_id,
                         "message": f"{self._cancelled} running call(s) cancelled: {reason}"})
        status = ("error" if self.failure is not None or crashed else "cancelled" if cancel
                  else "incomplete" if gone else "ok")
        self.record({"type": "session_end", "session_id": self.ticket.session_id, "status": status,
                     "reason": reason, "calls": self.calls, "protocol_errors": self.protocol_errors})
        if stopped:
            raise asyncio.CancelledError
        return status
