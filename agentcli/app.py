"""Wiring: what is built once per process, and driving one question through its consumers.

``App`` holds the settings, the orders store, the drafts store, the tool registry and the
provider (with its SDK client). The REPL, ``ask``, ``batch`` and ``eval`` differ only in how
they feed ``App.run`` and which consumers (renderers) they pass.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable

from .config import Settings, sessions_dir
from .drafts import DraftStore
from .events import Event
from .loop import SYSTEM_PROMPT, Conversation
from .result import ResultBuilder
from .sessions import SessionLog
from .tools import Registry, ToolContext, default_registry

Consumer = Callable[[Event], None]

class App:
    def __init__(self, settings: Settings, store: Any, provider: Any, registry: Registry):
        self.settings = settings
        self.store = store
        self.provider = provider
        self.registry = registry
        self.drafts = DraftStore(settings.drafts_dir)
        self._logs: dict[int, SessionLog] = {}

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

    def conversation(self, customer: str | None = None) -> Conversation:
        s = self.settings
        ctx = ToolContext(store=self.store, drafts=self.drafts,
                          customer=customer if customer is not None else s.customer,
                          model=self.provider.model, provider=self.provider.name)
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
                "db": self.db_description, "drafts_dir": str(self.settings.drafts_dir),
                "customer": conv.ctx.customer, "mode": conv.mode, **(meta or {})})
            self._logs[id(conv)] = log
        return log

    def close_conversation(self, conv: Conversation) -> None:
        """Close this ticket's session log (a long batch must not hold a descriptor each)."""
        log = self._logs.pop(id(conv), None)
        if log is not None:
            log.close()

    async def run(self, conv: Conversation, question: str, consumers: Iterable[Consumer] = (), *,
                  max_turns: int | None = None, resume: bool = False) -> ResultBuilder:
        """Run one question; every event goes to the session log first, then to each consumer."""
        log = self.log_for(conv)
        builder = ResultBuilder(provider=self.provider.name, model=self.provider.model,
                                prices=self.settings.prices)
        if resume:
            builder.question, builder.customer = conv.ctx.question, conv.ctx.customer
            builder.session_id = conv.session_id
        sinks = [log, builder, *consumers]
        events = conv.ask(question, max_turns=max_turns, resume=resume)
        try:
            async for ev in events:
                for sink in sinks:
                    sink(ev)
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
