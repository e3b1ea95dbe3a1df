"""The ticket: the unit a support team works in, and the one home of its state.

A ``Ticket`` holds, for one conversation: its id (the helpdesk's, or the session's), the customer
scope, every question, the provider-format history, every tool call record, the lookups whose
results the model has read (a draft's provenance), each order's customer, the drafts saved and
the live one with its findings, and the tokens spent. The loop owns one per ``Conversation`` and
changes it in two ways only:

- ``apply(event)``: every event the loop yields is applied here before anyone else sees it (the
  REPL's ``/history`` and ``/drafts``, the checks, the ``--json`` result and the session log all
  read what it recorded). Replaying a session log through ``apply`` rebuilds a ticket: that is
  how ``--ticket ID`` resumes one the next day;
- ``delivered()``: the tool-turn runner says a turn's results are in the history the model reads
  next; from then on its lookups count as read.

Tools never see the ticket itself: ``view()`` hands them a frozen ``TicketView``.

``Run`` is one ``App.run`` (a question, or its continuation past the turn limit): the calls it
made in the order asked, its drafts, how it finished, its findings, and the ``--json`` object.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Collection, Mapping

from .checks.normalize import has_words
from .events import (
    Checked,
    DraftSaved,
    Error,
    Event,
    ModelResponse,
    Question,
    Repair,
    ToolCallStarted,
    ToolResult,
    TurnFinished,
    Usage,
)
from .providers.pricing import estimate_cost
from .vocab import (
    ANSWERED,
    DRAFT_NOT_SAVED,
    GROUNDING,
    LOOKUP_FAILED,
    NO_ANSWER,
    NOT_FULLY_CHECKED,
    OUR_SIDE,
    REFUSED,
    CallRecord,
    OrderCode,
    Status,
)

MAX_QUESTIONS = 100   # questions of one ticket kept (the newest)
MAX_CALLS = 1000      # tool calls of one ticket the checks look at (the newest)
MAX_LOOKUPS = 200     # lookups a draft's provenance keeps (the newest)


@dataclass(frozen=True, slots=True)
class LiveDraft:
    """The ticket's current draft (a newer save supersedes it) and the findings on its text."""
    id: str
    path: str
    text: str
    order_code: OrderCode | None
    findings: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class SavedDraft:
    """A draft saved in this ticket (``DraftSaved``): what ``/drafts`` lists."""
    id: str
    path: str
    order_code: str | None
    created: bool


@dataclass(frozen=True, slots=True)
class TicketView:
    """What a tool may know of its ticket, frozen at the start of its turn."""
    id: str
    session_id: str
    customer: str | None
    questions: tuple[str, ...]
    lookups: tuple[CallRecord, ...]
    order_customers: Mapping[str, str]

    @property
    def question(self) -> str | None:
        return self.questions[-1] if self.questions else None

    def draft_customer(self, order_code: str | None) -> str | None:
        """The scope; else the customer of the draft's order; else the one customer of the
        orders the model had seen looked up (never a guess between two)."""
        if self.customer:
            return self.customer
        if order_code and order_code in self.order_customers:
            return self.order_customers[order_code]
        seen = {r.order["order_code"] for r in self.lookups
                if r.order is not None and isinstance(r.order.get("order_code"), str)}
        found = {self.order_customers[c].lower(): self.order_customers[c]
                 for c in seen if c in self.order_customers}
        return next(iter(found.values())) if len(found) == 1 else None


class Ticket:
    def __init__(self, session_id: str, *, external: str | None = None,
                 customer: str | None = None):
        self.session_id = session_id
        self.external = external        # the helpdesk's ticket id (--ticket, /ticket, a batch id)
        self.customer = customer        # the scope: other customers' orders read as not found
        self.questions: list[str] = []
        self.asked = 0                  # questions asked in this session (not brought back)
        self.history: list[Any] = []    # provider-format messages, as sent and received
        self.calls: list[CallRecord] = []
        self.lookups: list[CallRecord] = []   # lookups whose results the model has read
        self.order_customers: dict[str, str] = {}
        self.drafts: list[SavedDraft] = []   # saved in this session
        self.brought_back: list[SavedDraft] = []  # the ticket's drafts a resume found in the store
        self.live: LiveDraft | None = None
        self.usage = Usage()
        self.seen: set[str] = set()     # keys of calls whose results the model has been sent
        # The newest answered result of each call key delivered for the question being answered
        # (not an earlier question's, nor one rebuilt from an earlier day's logs: the order may
        # have changed since). A repeated read-only call is answered from here
        # (``Conversation``), not run again.
        self.answered: dict[str, CallRecord] = {}
        # The refusal each call key got for the question being answered (``REFUSED``): a call
        # refused again with the same words counts as a repeat (``Conversation``). It is run
        # again, not answered from here: a draft refused for the unread results beside it is
        # saved once it is asked for alone.
        self.refused: dict[str, Any] = {}
        self.resumed_from: list[str] = []  # sessions of earlier days this ticket was rebuilt from
        self.continues: str | None = None  # the session log this one goes on from (/ticket ID)
        self.unread_logs: list[str] = []  # what a resume could not read of the ticket's history
        self.scope_from: str | None = None  # where a resume found the customer scope (not given)
        # (customer, why): the customer the ticket was worked on for before this session (its
        # earlier days' scope; the scope of the ticket a /ticket ID moved it into): /customer
        # keeps to it
        self.owner: tuple[str, str] | None = None
        self.run: Run | None = None     # the question being answered now
        self._unread: list[CallRecord] = []

    @property
    def id(self) -> str:
        return self.external or self.session_id

    # -- the reducer --------------------------------------------------------------------
    def apply(self, ev: Event) -> None:
        if isinstance(ev, Question):
            self.questions.append(ev.text)
            del self.questions[:-MAX_QUESTIONS]
            self.asked += 1
            self.answered.clear()  # a new question reads the current state afresh
            self.refused.clear()
        elif isinstance(ev, ToolResult):
            rec = ev.record()
            self.calls.append(rec)
            del self.calls[:-MAX_CALLS]
            if not ev.repeated:  # a result given again adds nothing to what was read
                self._unread.append(rec)
            code = rec.order_code
            if ev.customer and code is not None and rec.order is not None:
                self.order_customers[code] = ev.customer
        elif isinstance(ev, DraftSaved):
            if not any(d.id == ev.id for d in self.drafts):
                self.drafts.append(SavedDraft(ev.id, ev.path, ev.order_code, ev.created))
            text = next((r.draft_text for r in reversed(self.calls) if r.draft_id == ev.id), None)
            self.live = LiveDraft(ev.id, ev.path, text or "", OrderCode.parse_or_none(ev.order_code))
        elif isinstance(ev, ModelResponse):
            self.usage.add(ev.usage)
        elif isinstance(ev, Checked):
            self.usage.add(ev.usage or {})  # the checks' model layer spends tokens too
            if self.live is not None:
                own = tuple(f for f in ev.findings if isinstance(f, dict) and f.get("where") == self.live.id)
                self.live = dataclasses.replace(self.live, findings=own)
        if self.run is not None:
            self.run.apply(ev)

    def delivered(self, ids: Collection[str] | None = None) -> None:
        """The results recorded so far (``ids``: only the calls of those ids) are in the history
        the model reads next (an MCP client: returned to it)."""
        keep = []
        for rec in self._unread:
            if ids is not None and rec.id not in ids:
                keep.append(rec)
            elif rec.outcome in ANSWERED:
                self.seen.add(rec.key())
                self.answered.pop(rec.key(), None)  # newest last: the oldest go first
                self.answered[rec.key()] = rec
                if rec.is_lookup:
                    self.lookups.append(rec)
            elif rec.outcome in REFUSED:
                self.refused.pop(rec.key(), None)
                self.refused[rec.key()] = rec.result
        del self.lookups[:-MAX_LOOKUPS]
        for m in (self.answered, self.refused):
            for k in list(m)[:max(0, len(m) - MAX_CALLS)]:
                del m[k]
        self._unread = keep[-MAX_CALLS:]  # bounded: a cancelled MCP request is never returned

    def scope_note(self) -> str | None:
        """One line when a resume brought the ticket's customer scope back (none was given)."""
        if self.scope_from is None or self.customer is None:
            return None
        return (f"ticket {self.id} goes on scoped to {self.customer} ({self.scope_from}): other "
                "customers' orders read as not found")

    def unread_note(self) -> str | None:
        """One line when part of the ticket's history could not be read by its resume."""
        if not self.unread_logs:
            return None
        more = f" and {len(self.unread_logs) - 1} more" if len(self.unread_logs) > 1 else ""
        return (f"part of ticket {self.id}'s history may be missing: {self.unread_logs[0]}{more}; "
                "what came back may be incomplete")

    def view(self) -> TicketView:
        return TicketView(self.id, self.session_id, self.customer, tuple(self.questions),
                          tuple(self.lookups), MappingProxyType(dict(self.order_customers)))

    def begin(self, run: "Run", *, resume: bool = False) -> "Run":
        """``run`` collects the events of the next ``App.run``."""
        if resume and self.questions:
            run.question, run.customer = self.questions[-1], self.customer
            run.session_id = self.session_id
        self.run = run
        return run

    def move_live(self, live: LiveDraft) -> None:
        """The live draft moved into this ticket under a new id (``/ticket ID``)."""
        self.live = live
        self.drafts.append(SavedDraft(live.id, live.path, live.order_code, True))


# =========================================================================== one run
USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")

def failed_lookups(calls: list[CallRecord]) -> list[tuple[str, str]]:
    """(order code, outcome) of the lookups that failed on our side (timeout, database, a
    cancelled call) with no later answered lookup of the same order."""
    out: dict[str, str] = {}
    for c in calls:
        if not c.is_lookup:
            continue
        code = c.order_code or "?"
        if c.outcome in OUR_SIDE:
            out[code] = str(c.outcome)
        elif c.outcome in ANSWERED:
            out.pop(code, None)
    return list(out.items())


class Run:
    """One ``App.run``: builds the spec's ``--json`` object from its events."""

    def __init__(self, *, provider: str, model: str | None, prices: dict[str, Any] | None = None):
        self.provider = provider
        self.model = model
        self.prices = prices
        self.question: str | None = None
        self.customer: str | None = None
        self.session_id: str | None = None
        # Calls in the order the model asked, each replaced by its record when its result came.
        # Matched by id and position: ids are the model's text, and a repeated id must not merge
        # two calls.
        self._calls: list[CallRecord | None] = []
        self._awaiting: dict[str, list[int]] = {}
        self.drafts: list[dict[str, Any]] = []
        self.finished: TurnFinished | None = None
        self.error: Error | None = None
        self.checks: list[dict[str, Any]] = []
        self.checks_run: dict[str, Any] | None = None  # which layers of the checks ran, their cost
        # The repair turn (``Repair``): what was sent back, and whether the checks that followed
        # found no error-level finding (``resolved``; None until they ran).
        self.repair: dict[str, Any] | None = None

    def apply(self, ev: Event) -> None:
        if isinstance(ev, Question):
            self.question, self.customer, self.session_id = ev.text, ev.customer, ev.session_id
        elif isinstance(ev, ToolCallStarted):
            self._awaiting.setdefault(ev.id, []).append(len(self._calls))
            self._calls.append(None)
        elif isinstance(ev, ToolResult):
            waiting = self._awaiting.get(ev.id)
            if waiting:
                self._calls[waiting.pop(0)] = ev.record()
            else:
                self._calls.append(ev.record())
        elif isinstance(ev, DraftSaved):
            if not any(d["id"] == ev.id for d in self.drafts):
                self.drafts.append({"id": ev.id, "path": ev.path})
            if self.repair is not None and ev.id != self.repair["draft"]:
                self.repair["replaced_by"] = ev.id  # the corrected draft superseded the flagged one
        elif isinstance(ev, Error):
            self.error = ev
        elif isinstance(ev, TurnFinished):
            self.finished = ev
        elif isinstance(ev, Repair):
            # ``answer`` and ``calls`` (how many of ``tool_calls`` came before it): the run as
            # it would have ended without the repair turn (``evals`` scores both).
            self.repair = {"turn": ev.turn, "draft": ev.draft, "findings": list(ev.findings),
                           "answer": ev.answer, "calls": len(self.calls), "replaced_by": None,
                           "resolved": None}
        elif isinstance(ev, Checked):
            self.checks = list(ev.findings)
            self.checks_run = {"layers": list(ev.layers or ["floor"]), "model": ev.model,
                               "usage": dict(ev.usage or {}), "duration_ms": ev.duration_ms, "note": ev.note}
            if self.repair is not None:
                self.repair["resolved"] = not any(
                    isinstance(x, dict) and x.get("severity") == "error" for x in ev.findings)
            f = self.finished
            if f is not None and (ev.status, ev.stop_reason) != (f.status, f.stop_reason):
                self.finished = dataclasses.replace(f, status=ev.status, stop_reason=ev.stop_reason,
                                                    message=ev.message)

    @property
    def calls(self) -> list[CallRecord]:
        """The calls that have a result (one cut short by Ctrl-C has none), in the order asked."""
        return [c for c in self._calls if c is not None]

    def verdict(self, findings: list[dict[str, Any]]) -> tuple[str, str | None, str | None]:
        """(status, stop_reason, message) once the checks are known: an "ok" question is
        "incomplete" when a draft could not be saved, a lookup failed on our side and was never
        answered, an error-level finding stands, or the model ended with neither an answer nor
        a draft. Warnings leave it ok, but for ``not_fully_checked`` (a text the checks could not
        read whole says what it says unchecked); other statuses stay."""
        f = self.finished
        if f is None:
            return Status.ERROR, None, None
        if f.status != Status.OK:
            return f.status, f.stop_reason, f.message
        errors = [x for x in findings if x.get("severity") == "error"]
        if any(x.get("kind") == DRAFT_NOT_SAVED for x in errors):
            return Status.INCOMPLETE, DRAFT_NOT_SAVED, (
                "a draft could not be saved: the reply is not in the review queue; a person must look")
        failed = failed_lookups(self.calls)
        if failed:
            what = ", ".join(f"{code} ({why})" for code, why in failed[:3])
            return Status.INCOMPLETE, LOOKUP_FAILED, (
                f"the lookup of {what} failed on our side and was not answered later; a person "
                "must look")
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            return Status.INCOMPLETE, GROUNDING, (
                f"{errors[0].get('kind')}: {errors[0].get('message')}{more}; a person must look")
        unread = [x for x in findings if x.get("kind") == NOT_FULLY_CHECKED]
        if unread:  # what was not read may say anything: no "ok" without a person reading it
            return Status.INCOMPLETE, GROUNDING, (
                f"{NOT_FULLY_CHECKED}: {unread[0].get('message')}")
        if not self.drafts and not has_words(f.answer):  # "\u200b", "\x1b[0m", "-": nothing usable
            return Status.INCOMPLETE, NO_ANSWER, ("the model ended its turn with neither an answer "
                                                  "nor a draft; a person must look")
        return f.status, f.stop_reason, f.message

    def cancelled(self) -> None:
        self.finished = TurnFinished(Status.ERROR, "cancelled", "", 0, "cancelled by the person")
        self.error = Error("cancelled", "cancelled by the person", 130)

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return self.error.exit_code
        f = self.finished
        return 0 if f is not None and f.status == Status.OK else 1

    def result(self) -> dict[str, Any]:
        """The ``--json`` object (its writers redact it: ``cli.common.json_line``, the batch's
        record file)."""
        f = self.finished
        turns_usage = (f.usage if f else {}) or {}
        run = self.checks_run or {}
        check_usage = run.get("usage") or {}
        usage = {k: int(turns_usage.get(k, 0)) + int(check_usage.get(k, 0)) for k in USAGE_KEYS}
        cost = estimate_cost(self.model, turns_usage, self.prices)
        if check_usage and cost is not None:  # the checks' call, at its own model's prices
            extra = estimate_cost(run.get("model") or self.model, check_usage, self.prices)
            cost = round(cost + extra, 6) if extra is not None else None
        status = f.status if f else Status.ERROR
        err = self.error.message if self.error else (f.message if f and f.status != Status.OK else None)
        return {
            "question": self.question,
            "customer": self.customer,
            "answer": f.answer if f else "",
            "status": str(status),
            "stop_reason": f.stop_reason if f else None,
            "error": err,
            "turns": f.turns if f else 0,
            "tool_calls": [c.to_dict() for c in self.calls],
            "drafts": self.drafts,
            "usage": usage,
            "provider": self.provider,
            "model": self.model,
            "session_id": self.session_id,
            "checks": self.checks,
            # Beyond the spec's fields (issue 23): which layers of the checks ran ("floor", "model"),
            # the model layer's model, tokens, milliseconds and why it did not run; None: no checks.
            "checks_run": self.checks_run,
            # Beyond the spec's fields (issue 9): the usage priced with providers.pricing.
            "estimated_cost_usd": cost,
            # Beyond the spec's fields (issue 23): the repair turn, or None when there was none.
            "repair": dict(self.repair) if self.repair is not None else None,
        }
