"""Wiring: what is built once per process, and driving one question through its consumers.

``App`` holds the settings, the orders store, the drafts store, the tool registry and the
provider (with its SDK client). The REPL, ``ask``, ``batch`` and ``eval`` differ only in how
they feed ``App.run`` and which consumers (renderers) they pass. Everything about one ticket is
in its ``Conversation.ticket``; the App keeps nothing per conversation.

``conversation(ticket=ID)`` resumes a ticket that exists: its questions, lookups and live draft
come back from the session logs that worked on it and from its pending draft.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import queue
import threading
import weakref
from typing import Any, Callable, Iterable

from .checks.grounding import NOT_FULLY_CHECKED, Finding, check_ticket
from .config import Settings, is_default_drafts_dir, sessions_dir
from .drafts.backends import open_drafts
from .errors import AgentcliError, UsageError
from .events import Checked, Event, Question, ToolResult
from .loop import SYSTEM_PROMPT, Conversation, new_session_id, prompt_version
from .providers import make_provider
from .redact import SecretsHeld
from .sessions.log import SessionLog
from .sessions.replay import ticket_events
from .stores import open_store
from .ticket import MAX_QUESTIONS, LiveDraft, Run, SavedDraft, Ticket
from .tools import Registry, ToolDeps, default_registry
from .vocab import (
    MAX_QUESTION_CHARS,
    CallRecord,
    OrderCode,
    Status,
    ToolName,
    customer_address,
    records,
)

Consumer = Callable[[Event], None]
CHECK_BUDGET_S = 5.0  # seconds the floor and the verifier may take over one ticket's texts
CHECK_MODEL_OFF = ("off", "none", "floor")  # check_model values that turn the model layer off
MAX_BROUGHT_BACK = 20  # a resumed ticket's drafts listed as brought back (the newest)
UNSCOPED = "resume it without a customer scope"  # going on without the scope given (the REPL's: /customer)


def _ticket_event(d: dict[str, Any], sid: str) -> Event | None:
    """A logged event that rebuilds a ticket, checked field by field (a log is hostile ground)."""
    kind = d.get("type")
    if kind == "question" and isinstance(d.get("text"), str) and d["text"].strip():
        return Question(d["text"][:MAX_QUESTION_CHARS], None, sid)
    if kind == "tool_result":
        r = CallRecord.from_dict(d)
        if r is None:
            return None
        who = d.get("customer")
        return ToolResult(r.id, r.name, r.input, r.result, r.is_error, r.duration_ms, r.outcome,
                          who if isinstance(who, str) else None)
    # a logged draft_saved is not replayed: the ticket's drafts come back from the drafts store
    # (``brought_back``), never as saved in this session nor with a path only a log says
    return None


def _address(value: Any) -> str | None:
    """A customer scope read from a log or a draft (hostile ground): the address, or None."""
    if not isinstance(value, str):
        return None
    try:
        return customer_address(value)
    except ValueError:
        return None


def _logged_scope(logs: list[tuple[str, list[dict[str, Any]]]]) -> str | None:
    """The customer scope a ticket's logs leave it with: the last one set (``--customer``,
    ``/customer``), None when none was or ``/customer`` alone cleared it."""
    scope = None
    for _, events in logs:
        for d in events:
            kind, who = d.get("type"), d.get("customer")
            if kind in ("session_start", "customer_changed") and isinstance(who, str):
                scope = _address(who) or scope
            elif kind == "customer_changed" and who is None:
                scope = None  # a person cleared the scope
    return scope


def _askers(events: list[dict[str, Any]]) -> dict[int, frozenset[str]]:
    """For each logged question (by its index in ``events``): whose it was. The scope it was
    asked under; without one, the customers of the orders its lookups found (up to the next
    question); finding none (a follow-up, "make it shorter"), the question's before it in the
    same log. A question of another customer than a resumed ticket's scope does not come back:
    it holds that customer's words (name, address)."""
    out: dict[int, frozenset[str]] = {}
    at: int | None = None
    scoped, found, before = False, set(), frozenset()
    for i, d in [*enumerate(events), (len(events), {"type": "question"})]:
        kind = d.get("type")
        if kind == "question":
            if at is not None:
                out[at] = before = frozenset(found) or before
            at, found = i, set()
            who = _address(d.get("customer"))
            scoped = who is not None
            if scoped:
                found.add(who)
        elif kind == "tool_result" and at is not None and not scoped:
            who = _address(d.get("customer"))
            if who is not None:
                found.add(who)
    return out


def _outside(ev: Event, scope: str | None) -> bool:
    """A logged result of another customer's order than the scope's: it never comes back into a
    scoped ticket (context, grounding, a draft's provenance), as the lookup would answer now."""
    who = ev.customer if isinstance(ev, ToolResult) else None
    return scope is not None and who is not None and who.casefold() != scope.casefold()


class _CheckThreads:
    """Daemon threads that run the checks, kept for the next check when they are done.

    On cores busy with other work a thread started for a check took 2.4 ms to get going
    (measured: 4.0 ms of wall for 1.5 ms of work, against 1.5 ms handed to a waiting thread; 1.7
    against 1.6 ms on idle cores), and a question waits for its checks. A thread still busy (a
    check past its budget) is simply not idle: the next check gets another thread, never a
    queue behind it. Daemon threads: the process never waits for one at exit. After a ``fork``
    the child has none of the parent's threads, so it forgets the idle ones
    (``os.register_at_fork``) and starts its own."""

    MAX_IDLE = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue] = []
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._idle = []

    def submit(self, job: Callable[[], Callable[[], None]]) -> None:
        """Run ``job()`` in a thread; it returns what hands its result over (called once the
        thread is idle again, so the next check finds it)."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name="agentcli-checks", daemon=True).start()
        inbox.put(job)

    def _serve(self, inbox: "queue.SimpleQueue") -> None:
        while True:
            hand_over = inbox.get()()
            with self._lock:
                keep = len(self._idle) < self.MAX_IDLE
                if keep:
                    self._idle.append(inbox)
            hand_over()
            if not keep:
                return


_CHECK_THREADS = _CheckThreads()


def _in_daemon_thread(fn: Callable[[], Any]) -> "asyncio.Future[Any]":
    """``fn()`` in a daemon thread (``_CheckThreads``), as a future of the running loop: the loop
    goes on meanwhile, and the process never waits for the thread at exit (a signal is acted on
    at once; the checks bound their own time anyway)."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not fut.done():
            fut.set_result(value) if ok else fut.set_exception(value)

    def work() -> Callable[[], None]:
        try:
            value, ok = fn(), True
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting task, raised there
            value, ok = e, False

        def hand_over() -> None:
            try:
                loop.call_soon_threadsafe(settle, ok, value)
            except RuntimeError:
                pass  # the loop closed meanwhile: nobody waits for the result any more
        return hand_over

    _CHECK_THREADS.submit(work)
    return fut


class App:
    def __init__(self, settings: Settings, store: Any, provider: Any, registry: Registry):
        self.settings = settings
        self.store = store
        self.provider = provider
        self.registry = registry
        # the one place the drafts backend is chosen (--drafts-url: the team's queue)
        self.drafts = open_drafts(url=settings.drafts_url, folder=settings.drafts_dir,
                                  create_parents=is_default_drafts_dir(settings.drafts_dir))
        # what the model is told, stamped on every draft (an MCP client's model has its own prompt)
        system = SYSTEM_PROMPT if getattr(provider, "name", None) != "mcp" else None
        mode = settings.mode if system is not None else "mcp"
        self.prompt_version, self.mode = prompt_version(registry, mode, system), mode
        self._open_logs: set[SessionLog] = set()  # closed at the end (ask: one; the REPL: one a ticket)
        # What the checks' model layer spent on a ticket since its last question ended (App.check)
        self._spent: weakref.WeakKeyDictionary[Ticket, Checked] = weakref.WeakKeyDictionary()

    @classmethod
    def open(cls, settings: Settings, *, pool_size: int = 4, registry: Registry | None = None,
             store: Any = None) -> "App":
        """Open the database and build the provider; raises ConfigError (exit 3) on failure."""
        registry = registry or default_registry()
        provider = make_provider(settings, registry, SYSTEM_PROMPT)  # missing key: fail first
        if store is None:
            store = open_store(settings.db, pool_size=pool_size)
        return cls(settings, store, provider, registry)

    @property
    def db_description(self) -> str:
        return self.store.description

    def deps(self) -> ToolDeps:
        return ToolDeps(self.store, self.drafts, self.provider.model, self.provider.name,
                        self.prompt_version, self.mode)

    def conversation(self, customer: str | None = None, ticket: str | None = None, *,
                     resume: bool = False, unscoped: str = UNSCOPED) -> Conversation:
        """A conversation on a new ticket, or on ``ticket``: with ``resume`` (``ask``, ``chat``)
        a ticket that exists comes back as it was; a batch line's id only names its drafts.
        ``unscoped``: how the person goes on without the scope given, when the ticket is another
        customer's (the REPL: ``/customer`` alone)."""
        s = self.settings
        t = Ticket(new_session_id(), external=ticket,
                   customer=customer if customer is not None else s.customer)
        if ticket is not None and resume:
            self.resume(t, unscoped=unscoped)
        # The repair turn needs a model that can read findings: the offline rules cannot.
        conv = Conversation(self.provider, self.registry, self.deps(), t, max_turns=s.max_turns,
                            tool_timeout=s.tool_timeout, retries=s.retries, stream=s.stream,
                            mode=s.mode, checker=self.check,
                            repair=s.repair and self.provider.name != "offline")
        conv.restore()
        return conv

    # -- resuming a ticket -------------------------------------------------------------
    def resume(self, t: Ticket, *, unscoped: str = UNSCOPED) -> None:
        """Bring back what ticket ``t.external`` already holds: its questions and lookups from
        the session logs that worked on it (and, for what they lack, from its live draft's
        provenance: another machine's logs, or removed ones), and its live draft. A ticket
        nobody worked on stays empty. A log that cannot be read is kept in ``t.unread_logs``
        (said as a warning: what came back may be incomplete)."""
        warnings: list[str] = []
        logs = list(ticket_events(sessions_dir(), t.id, warnings))
        t.resumed_from, t.unread_logs = [sid for sid, _ in logs], warnings
        try:
            theirs = self.drafts.in_ticket(t.id)
        except OSError as e:
            t.unread_logs.append(f"its drafts cannot be read ({e.strerror or e})")
            theirs = []
        pending = [d for d in theirs if d.meta.get("status") == "pending_review"]
        t.brought_back = [SavedDraft(d.id, str(d.path), d.meta.get("order_code"), False)
                          for d in theirs[-MAX_BROUGHT_BACK:]]
        self._resume_scope(t, logs, pending[-1] if pending else None, unscoped)
        owners: dict[str, str] = {}  # order code -> its customer, as the logged lookups said
        dropped: set[str] = set()  # questions of another customer: not from the draft either
        for sid, events in logs:
            theirs = _askers(events)
            for i, d in enumerate(events):
                ev = _ticket_event(d, sid)
                if isinstance(ev, ToolResult) and ev.customer is not None:
                    code = CallRecord.from_dict(d).order_code
                    if code is not None:
                        owners[code] = ev.customer
                if isinstance(ev, Question) and t.customer is not None and any(
                        c.casefold() != t.customer.casefold() for c in theirs.get(i, ())):
                    dropped.add(ev.text)
                elif ev is not None and not _outside(ev, t.customer):
                    t.apply(ev)
        t.delivered()  # every result a session logged was sent to its model
        t.answered.clear()  # an earlier day's results are context, never given again as current
        t.refused.clear()
        t.asked = 0  # they were asked in earlier sessions, none yet in this one
        if pending:
            d = pending[-1]
            # the draft's provenance for what the logs lack (none here, one unreadable, a draft
            # moved in from a conversation whose logs are elsewhere): earlier than the logs'
            known = set(t.questions)
            earlier = [q for q in d.meta.get("questions") or []
                       if isinstance(q, str) and q not in known and q not in dropped]
            t.questions[:0] = earlier
            del t.questions[:-MAX_QUESTIONS]
            seen = {r.key() for r in t.lookups}
            own = OrderCode.parse_or_none(d.meta.get("order_code"))

            def in_scope(r: CallRecord) -> bool:
                """A lookup the draft records carries no customer: under a scope it comes back
                when it found nothing, or its order is the scope's (as the logs said; without
                them, the draft's own order)."""
                if t.customer is None or r.order is None:
                    return True
                who = owners.get(str(r.order_code))
                return who.casefold() == t.customer.casefold() if who is not None else r.order_code == own

            lookups = [r for r in records([{"name": ToolName.LOOKUP, **x}
                                           for x in d.meta.get("lookups") or []
                                           if isinstance(x, dict)])
                       if r.is_lookup and r.key() not in seen and in_scope(r)]
            t.lookups[:0] = lookups
            t.calls[:0] = lookups
            findings = tuple(x for x in d.meta.get("findings") or [] if isinstance(x, dict))
            t.live = LiveDraft(d.id, str(d.path), d.text, OrderCode.parse_or_none(d.meta.get("order_code")),
                               findings)

    @staticmethod
    def _resume_scope(t: Ticket, logs: list[tuple[str, list[dict[str, Any]]]], live: Any,
                      unscoped: str = UNSCOPED) -> None:
        """A resumed ticket keeps the customer scope it was worked on under: the last one its
        logs set (``--customer``, ``/customer``; ``/customer`` alone cleared it), or without
        logs its live draft's customer. Refused (UsageError, exit 2), since one reply would mix
        two customers' orders: a scope given now for another customer than the ticket's, and a
        live draft for another customer than the scope."""
        scope = _logged_scope(logs)
        why = "the scope it was worked on under" if scope is not None else None
        drafted = _address(live.meta.get("customer")) if live is not None else None
        if scope is None and not logs and drafted is not None:
            scope, why = drafted, f"the customer of its live draft {live.id}"
        given = t.customer
        if given is not None and scope is not None and given.casefold() != scope.casefold():
            raise UsageError(f"ticket {t.id} is scoped to {scope} ({why}), not {given}: {unscoped} "
                             f"(its own comes back), or use another ticket for {given}")
        wanted = given or scope
        if wanted is not None and drafted is not None and wanted.casefold() != drafted.casefold():
            advice = (f"{unscoped}, or use another ticket for {given}" if given
                      else f"a person must review that draft first (agentcli drafts show {live.id})")
            raise UsageError(f"ticket {t.id}'s live draft {live.id} is for {drafted}, not {wanted} "
                             f"(the customer scope {'given' if given else 'it was worked on under'}): "
                             f"{advice}")
        t.customer = wanted
        t.scope_from = why if given is None else None
        t.owner = (scope, why) if scope is not None and why is not None else None

    def move_ticket(self, conv: Conversation, ticket: str, reviewer: str) -> tuple[str | None, list[str]]:
        """``/ticket ID``: the conversation's ticket gets the helpdesk's id, and its live draft
        moves into that ticket (a new draft there; the old one superseded by it), so the ticket
        never has two live drafts. Returns the moved draft's new id (or None) and the ids of
        ``ticket``'s pending drafts it supersedes. A ticket of another customer (its scope, or
        its live draft's customer) is refused, nothing changed (UsageError)."""
        t = conv.ticket
        replaced, theirs = self._check_move(t, ticket)
        moved = self.drafts.move(t.live.id, ticket, who=reviewer) if t.live is not None else None
        # One session log is one ticket's: the conversation goes on in a new log that continues
        # this one, so `log list --ticket ID` and a resume the next day find both.
        self.log_for(conv).record({"type": "ticket_changed", "session_id": conv.session_id,
                                   "ticket": ticket, "draft_moved_to": moved.id if moved else None})
        self.close_conversation(conv)
        t.continues, t.session_id, t.external = conv.session_id, new_session_id(), ticket
        if theirs is not None:  # that ticket's customer: its scope from now on (the new log's)
            t.owner = theirs
            if t.customer is None:
                t.customer, t.scope_from = theirs
        if moved is not None:
            t.move_live(LiveDraft(moved.id, str(moved.path), moved.text, t.live.order_code,
                                  t.live.findings))
        self.log_for(conv).record({"type": "ticket_changed", "session_id": conv.session_id,
                                   "ticket": ticket, "continues": t.continues,
                                   "draft": moved.id if moved else None})
        if moved is None:
            return None, replaced
        return moved.id, [x for x in replaced if x != moved.id]  # the same text there: the same draft

    def _check_move(self, t: Ticket, ticket: str) -> tuple[list[str], tuple[str, str] | None]:
        """Whether ticket ``t`` may go on as ``ticket``: not when that ticket is another
        customer's (its scope, or its live draft's customer) than any ``t`` holds (its scope, its
        live draft's, the customers of the orders it found: ``held``) (UsageError). Returns the
        ids of its pending drafts (superseded by the move, or by the next draft) and (customer,
        why) of that ticket, when it has one: a conversation moved into it takes on that scope."""
        try:
            pending = [d for d in self.drafts.in_ticket(ticket) if d.meta.get("status") == "pending_review"
                       and (t.live is None or d.id != t.live.id)]
        except OSError as e:
            raise UsageError(f"its drafts cannot be read ({e.strerror or e})") from None
        held = self.held(t)
        if len(held) == 1:
            ours = f"this ticket is {next(iter(held.values()))}'s"
        else:
            ours = f"this ticket holds orders of {' and '.join(list(held.values())[:3])}"
        theirs: tuple[str, str] | None = None
        scope = _logged_scope(list(ticket_events(sessions_dir(), ticket)))
        if scope is not None:
            if any(k != scope.casefold() for k in held):
                raise UsageError(f"ticket {ticket} is scoped to {scope}, and {ours}; /new starts a "
                                 "ticket of its own")
            theirs = (scope, f"the scope ticket {ticket} was worked on under")
        for d in pending:
            who = _address(d.meta.get("customer"))
            if who is not None and any(k != who.casefold() for k in held):
                raise UsageError(f"ticket {ticket}'s live draft {d.id} is for {who}, and {ours}; "
                                 "/new starts a ticket of its own")
            if who is not None and theirs is None:
                theirs = (who, f"the customer of ticket {ticket}'s live draft {d.id}")
        return [d.id for d in pending], theirs

    def held(self, t: Ticket) -> dict[str, str]:
        """The customers ticket ``t`` already holds (casefolded: as written): its scope, its live
        draft's customer, the customers of the orders its lookups found (before a ``/customer``
        too). A ticket goes on for none but these."""
        found = [t.customer, *t.order_customers.values()]
        if t.live is not None:
            try:
                found.append(self.drafts.get(t.live.id).meta.get("customer"))
            except (OSError, AgentcliError, ValueError):
                found.append(t.view().draft_customer(t.live.order_code))
        out: dict[str, str] = {}
        for c in found:
            c = _address(c)
            if c is not None:
                out.setdefault(c.casefold(), c)
        return out

    def ticket_customer(self, t: Ticket) -> tuple[str, str] | None:
        """(customer, why) ticket ``t`` is for, when it is known: the customer it was worked on
        for before (``t.owner``: a resume, a move into a scoped ticket), else its live draft's.
        ``/customer`` gives it no other scope."""
        if t.owner is not None:
            return t.owner
        if t.live is None:
            return None
        try:
            who = _address(self.drafts.get(t.live.id).meta.get("customer"))
        except (OSError, AgentcliError, ValueError):
            who = None
        return (who, f"the customer of its live draft {t.live.id}") if who is not None else None

    # -- the session log ---------------------------------------------------------------
    def log_for(self, conv: Conversation, meta: dict[str, Any] | None = None) -> SessionLog:
        """The session log of this ticket; ``meta`` (e.g. ``{"origin": "eval"}``) goes into its
        ``session_start`` record when the log is first opened."""
        log = conv.log
        if log is None or log.session_id != conv.session_id:
            if log is not None:
                log.close()
            log = conv.log = self.open_log(conv.ticket, {"mode": conv.mode, **(meta or {})})
        return log

    def open_log(self, t: Ticket, meta: dict[str, Any] | None = None) -> SessionLog:
        """A session log for ticket ``t`` (closed by ``aclose``); ``meta`` joins its
        ``session_start`` record."""
        log = SessionLog(sessions_dir(), t.session_id, meta={
            "provider": self.provider.name, "model": self.provider.model,
            "db": self.db_description, **self._drafts_meta(),
            "customer": t.customer, "ticket": t.external,
            **({"resumed_from": t.resumed_from} if t.resumed_from else {}),
            **({"continues": t.continues} if t.continues else {}), **(meta or {})})
        self._open_logs.add(log)
        return log

    def _drafts_meta(self) -> dict[str, Any]:
        """Where this session's drafts go, for its log: the folder, or the queue (no password)."""
        if self.drafts.kind == "folder":
            return {"drafts_dir": os.path.abspath(self.settings.drafts_dir)}
        return {"drafts_url": self.drafts.location}

    def close_conversation(self, conv: Conversation) -> None:
        """Close this ticket's session log (a long batch must not hold a descriptor each)."""
        if conv.log is not None:
            conv.log.close()
            self._open_logs.discard(conv.log)
            conv.log = None

    # -- one question ------------------------------------------------------------------
    async def _check(self, conv: Conversation, run: Run) -> Checked | None:
        """The grounding checks over the whole ticket, after a question (``conv.check``: the
        loop's own look before a repair turn, when nothing changed since, is not run twice);
        their findings are stored on the ticket's live draft (for the review queue)."""
        f = run.finished
        if f is None or run.error is not None or f.status not in (Status.OK, Status.INCOMPLETE):
            return None
        findings = await conv.check(f.answer)
        status, stop, message = run.verdict(findings)
        spent = self._spent.pop(conv.ticket, None)  # the model layer's calls of this question
        if spent is None:
            return Checked(findings, status, stop, message)
        return dataclasses.replace(spent, findings=findings, status=status, stop_reason=stop, message=message)

    async def check(self, t: Ticket, answer: str = "") -> list[dict[str, Any]]:
        """The grounding findings of ticket ``t`` (see ``check_report``): the loop's ``checker``.
        What the model layer spent is kept for the question's ``Checked`` event (a repair turn
        checks twice: both calls count)."""
        report = await self.check_report(t, answer)
        prev = self._spent.get(t)
        if prev is not None:
            usage = dict(prev.usage)
            for k, v in report.usage.items():
                usage[k] = usage.get(k, 0) + int(v)
            report = dataclasses.replace(report, usage=usage, duration_ms=prev.duration_ms + report.duration_ms,
                                         model=report.model or prev.model, note=report.note or prev.note)
        self._spent[t] = report
        return report.findings

    # ``batch --via batches``: ticket -> (forced call, seconds it may take) standing in for the
    # provider's own, so the checks' model layer is a request of the ticket's next batch round
    forced_for: Callable[[Ticket], tuple[Any, float] | None] | None = None

    def _model_layer(self, t: Ticket | None = None) -> tuple[Any, str, float] | None:
        """(the forced call, the model, its time bound) of the checks' model layer, or None: a
        provider without a model API (offline: the floor alone) or ``check_model = "off"``."""
        forced = getattr(self.provider, "forced_call", None)
        timeout = float(self.settings.request_timeout)  # a local model can be slow: --request-timeout
        cm = self.settings.check_model
        if not callable(forced) or (isinstance(cm, str) and cm.strip().lower() in CHECK_MODEL_OFF):
            return None
        instead = self.forced_for(t) if self.forced_for is not None and t is not None else None
        if instead is not None:
            forced, timeout = instead
        return forced, (cm.strip() if isinstance(cm, str) and cm.strip() else self.provider.model), timeout

    async def check_report(self, t: Ticket, answer: str = "") -> Checked:
        """The grounding checks of ticket ``t`` (its answer ``answer``, its live draft, against its
        tool results), as a ``Checked`` event (status not yet decided): the model layer first
        (one forced call, when the provider has a model API), then the floor and the verifier
        in a worker thread within ``CHECK_BUDGET_S``. The live draft's own findings are stored
        on it (for the review queue)."""
        live = t.live
        drafts = [live] if live else []
        layers, reading = ["floor"], None
        layer = self._model_layer(t)
        if layer is not None:
            # here, not at the top: the floor alone (offline, check_model "off") never needs the
            # model layer, and a process that never asks a model (ask --provider offline) is
            # spared the module (~1.3 ms of its start)
            from .checks import model_layer

            texts = model_layer.texts_of(answer, drafts)
            if texts:
                forced, model, timeout = layer
                reading = await model_layer.read(
                    lambda system, user, tool: forced(system, user, tool, model=model), texts,
                    model=model, timeout_s=timeout)
                if reading.ran:
                    layers.append("model")
        work = functools.partial(check_ticket, answer=answer, drafts=drafts, tool_results=t.calls,
                                 questions=t.questions, budget_s=CHECK_BUDGET_S,
                                 model_claims=reading.claims if reading is not None and reading.ran else None)
        try:  # off the event loop: a signal, a batch's other tickets and a stream go on meanwhile
            found = await asyncio.wait_for(_in_daemon_thread(work), CHECK_BUDGET_S + 2.0)
        except asyncio.TimeoutError:
            found = [Finding(NOT_FULLY_CHECKED, "warning", f"the checks did not finish within "
                             f"{CHECK_BUDGET_S:g} s: a person must read the answer and the draft",
                             {"where": ""})]
        findings = [x.to_dict() for x in found]
        if reading is not None and reading.error is not None:
            findings.append(Finding(NOT_FULLY_CHECKED, "warning", f"{reading.error}; only the pattern "
                                    "checks ran", {"where": ""}).to_dict())
        if live is not None:
            own = [x for x in findings if x.get("where") == live.id]
            try:  # the findings of this text (the store keeps them only while it is the text)
                await asyncio.get_running_loop().run_in_executor(
                    None, functools.partial(self.drafts.set_findings, live.id, own, text=live.text))
            except (OSError, ValueError, LookupError, AgentcliError):
                pass  # the draft is gone or unreadable: the findings are still in the log and --json
        return Checked(findings, Status.OK, None, None, layers=layers,
                       model=reading.model if reading is not None else None,
                       usage=reading.usage if reading is not None else {},
                       duration_ms=reading.duration_ms if reading is not None else 0.0,
                       note=reading.error if reading is not None else None)

    async def run(self, conv: Conversation, question: str, consumers: Iterable[Consumer] = (), *,
                  max_turns: int | None = None, resume: bool = False) -> Run:
        """Run one question; every event goes to the ticket, the session log first, then to each
        consumer. Returns the run (its ``result()`` is the ``--json`` object)."""
        log = self.log_for(conv)
        if conv.checker is None:  # a conversation built by hand: the same checks
            conv.checker = self.check
        run = conv.ticket.begin(Run(provider=self.provider.name, model=self.provider.model,
                                    prices=self.settings.prices), resume=resume)
        sinks = [log, *consumers]
        events = conv.ask(question, max_turns=max_turns, resume=resume)
        try:
            with SecretsHeld():  # the log and the renderers redact with one read of them a question
                async for ev in events:
                    for sink in sinks:
                        sink(ev)
                checked = await self._check(conv, run)
                if checked is not None:
                    conv.ticket.apply(checked)
                    for sink in sinks:
                        sink(checked)
        except (asyncio.CancelledError, KeyboardInterrupt):
            log.record({"type": "cancelled", "session_id": conv.session_id,
                        "message": "cancelled by the person"})
            run.cancelled()
            raise
        finally:
            # If a consumer raised, close the generator now so its history repair runs now,
            # not whenever it is garbage-collected.
            await events.aclose()
            conv.ticket.run = None
        return run

    async def aclose(self) -> None:
        for log in self._open_logs:
            log.close()
        self._open_logs.clear()
        await self.provider.aclose()
        await self.store.aclose()
        self.drafts.close()
