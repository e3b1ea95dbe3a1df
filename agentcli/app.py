"""Wiring: what is built once per process, and driving one question through its consumers.

``App`` holds the settings, the orders store, the drafts store, the tool registry and the
provider (with its SDK client). The REPL, ``ask``, ``batch`` and ``eval`` differ only in how
they feed ``App.run`` and which consumers (renderers) they pass.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable, Iterable

from .config import Settings, sessions_dir
from .drafts.store import DraftStore
from .errors import AgentcliError
from .events import Checked, Event, Question, ToolResult
from .loop import SYSTEM_PROMPT, Conversation
from .result import ResultBuilder
from .sessions.log import SessionLog
from .tools import Registry, ToolContext, default_registry

Consumer = Callable[[Event], None]
MAX_TICKET_CALLS = 1000  # tool calls of one ticket the grounding checks look at (the latest)


class _Ticket:
    """What the grounding checks need of one ticket across its questions."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.questions: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.stored: dict[str, list] = {}  # draft id -> findings last stored on it

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, Question):
            self.questions = (self.questions + [ev.text])[-100:]
        elif isinstance(ev, ToolResult):
            self.calls.append(ev.record())
            del self.calls[:-MAX_TICKET_CALLS]

    def live_draft(self) -> dict[str, Any] | None:
        """The ticket's live draft: the latest one saved (each save supersedes the earlier ones)."""
        for c in reversed(self.calls):
            res, inp = c.get("result"), c.get("input")
            if c.get("name") == "draft_reply" and c.get("outcome") == "ok" and isinstance(res, dict) \
                    and isinstance(res.get("draft_id"), str) and isinstance(inp, dict):
                return {"id": res["draft_id"], "text": inp.get("text") if isinstance(inp.get("text"), str) else "",
                        "order_code": inp.get("order_code")}
        return None


class App:
    def __init__(self, settings: Settings, store: Any, provider: Any, registry: Registry):
        self.settings = settings
        self.store = store
        self.provider = provider
        self.registry = registry
        self.drafts = DraftStore(settings.drafts_dir)
        self._logs: dict[int, SessionLog] = {}
        self._tickets: dict[int, _Ticket] = {}

    @classmethod
    def open(cls, settings: Settings, *, pool_size: int = 4, registry: Registry | None = None,
             store: Any = None) -> "App":
        """Open the database and build the provider; raises ConfigError (exit 3) on failure."""
        from .stores import open_store
        from .providers import make_provider

        registry = registry or default_registry()
        provider = make_provider(settings, registry, SYSTEM_PROMPT)  # missing key: fail first
        if store is None:
            store = open_store(settings.db, pool_size=pool_size)
        return cls(settings, store, provider, registry)

    @property
    def db_description(self) -> str:
        return getattr(self.store, "description", "?")

    def conversation(self, customer: str | None = None, ticket: str | None = None) -> Conversation:
        s = self.settings
        ctx = ToolContext(store=self.store, drafts=self.drafts,
                          customer=customer if customer is not None else s.customer,
                          model=self.provider.model, provider=self.provider.name, ticket=ticket)
        return Conversation(self.provider, self.registry, ctx, max_turns=s.max_turns,
                            tool_timeout=s.tool_timeout, retries=s.retries, stream=s.stream,
                            mode=s.mode)

    def log_for(self, conv: Conversation, meta: dict[str, Any] | None = None) -> SessionLog:
        """The session log of this ticket; ``meta`` (e.g. ``{"origin": "eval"}``) goes into its
        ``session_start`` record when the log is first opened."""
        log = self._logs.get(id(conv))
        if log is None or log.session_id != conv.session_id:
            if log is not None:
                log.close()
            log = SessionLog(sessions_dir(), conv.session_id, meta={
                "provider": self.provider.name, "model": self.provider.model,
                "db": self.db_description, "drafts_dir": os.path.abspath(self.settings.drafts_dir),
                "customer": conv.ctx.customer, "ticket": conv.ctx.ticket, "mode": conv.mode,
                **(meta or {})})
            self._logs[id(conv)] = log
        return log

    def close_conversation(self, conv: Conversation) -> None:
        """Close this ticket's session log (a long batch must not hold a descriptor each)."""
        log = self._logs.pop(id(conv), None)
        self._tickets.pop(id(conv), None)
        if log is not None:
            log.close()

    def _ticket(self, conv: Conversation) -> _Ticket:
        t = self._tickets.get(id(conv))
        if t is None or t.session_id != conv.session_id:  # a new ticket (/new)
            t = self._tickets[id(conv)] = _Ticket(conv.session_id)
        return t

    async def _check(self, ticket: _Ticket, builder: ResultBuilder) -> Checked | None:
        """The grounding checks over the whole ticket, after a question; their findings are
        stored on the ticket's live draft (for the review queue)."""
        from .checks.grounding import check_ticket
        from .result import verdict

        f = builder.finished
        if f is None or builder.error is not None or f.status not in ("ok", "incomplete"):
            return None
        live = ticket.live_draft()
        found = check_ticket(answer=f.answer, drafts=[live] if live else [], tool_results=ticket.calls,
                             questions=ticket.questions)
        findings = [x.to_dict() for x in found]
        status, stop, message = verdict(f, builder.finished_calls(), findings, builder.drafts)
        if live is not None:
            from .redact import redact_obj

            own = redact_obj([x for x in findings if x.get("where") == live["id"]])
            if own != ticket.stored.get(live["id"], []):
                try:
                    await asyncio.get_running_loop().run_in_executor(
                        None, self.drafts.set_findings, live["id"], own)
                    ticket.stored[live["id"]] = own
                except (OSError, ValueError, LookupError, AgentcliError):
                    pass  # the draft is gone or unreadable: the findings are still in the log and --json
        return Checked(findings, status, stop, message)

    async def run(self, conv: Conversation, question: str, consumers: Iterable[Consumer] = (), *,
                  max_turns: int | None = None, resume: bool = False) -> ResultBuilder:
        """Run one question; every event goes to the session log first, then to each consumer."""
        log = self.log_for(conv)
        builder = ResultBuilder(provider=self.provider.name, model=self.provider.model,
                                prices=self.settings.prices)
        if resume:
            builder.question, builder.customer = conv.ctx.question, conv.ctx.customer
            builder.session_id = conv.session_id
        ticket = self._ticket(conv)
        sinks = [log, builder, ticket, *consumers]
        events = conv.ask(question, max_turns=max_turns, resume=resume)
        try:
            async for ev in events:
                for sink in sinks:
                    sink(ev)
            checked = await self._check(ticket, builder)
            if checked is not None:
                for sink in sinks:
                    sink(checked)
        except (asyncio.CancelledError, KeyboardInterrupt):
            log.record({"type": "cancelled", "session_id": conv.session_id,
                        "message": "cancelled by the person"})
            builder.cancelled()
            raise
        finally:
            # If a consumer raised, close the generator now so its history repair runs now,
            # not whenever it is garbage-collected.
            await events.aclose()
        return builder

    async def aclose(self) -> None:
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        await self.provider.aclose()
        await self.store.aclose()
