"""Consumers that collect one question's events: the ``--json`` object and the ticket's log.

``ResultBuilder`` turns the events of one question into the spec's JSON object; ``TicketLog``
keeps the tool calls and drafts of a whole ticket (the REPL's ``/history`` and ``/drafts``).
Both hold tool calls in one shape: ``ToolResult.record()``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .events import (Checked, DraftSaved, Error, Event, Question, ToolCallStarted, ToolResult,
                     TurnFinished)
from .providers.pricing import estimate_cost

# stop_reason of an "ok" question that the checks turned "incomplete" (a person must look), in
# the order they are chosen when several apply
DRAFT_NOT_SAVED, LOOKUP_FAILED, GROUNDING = "draft_not_saved", "lookup_failed", "grounding"
NO_ANSWER = "no_answer"
OUR_SIDE = ("timeout", "tool_error")  # a lookup that failed on our side, not the model's input


def failed_lookups(calls: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(order code, outcome) of the lookups that failed on our side (timeout, database) with no
    later successful lookup of the same order, in the calls of one question."""
    out: dict[str, str] = {}
    for c in calls:
        if not isinstance(c, dict) or c.get("name") != "get_order_status":
            continue
        inp = c.get("input")
        code = inp.get("order_code") if isinstance(inp, dict) else None
        code = code.strip().upper() if isinstance(code, str) else "?"
        if c.get("outcome") in OUR_SIDE:
            out[code] = str(c.get("outcome"))
        elif c.get("outcome") in ("ok", "not_found"):
            out.pop(code, None)
    return list(out.items())


def verdict(finished: TurnFinished | None, calls: list[dict[str, Any]],
            findings: list[dict[str, Any]], drafts: list[Any] | None = None) -> tuple[str, str | None, str | None]:
    """(status, stop_reason, message) of a question once its checks are known: an "ok" question
    is "incomplete" when a draft could not be saved, a lookup failed on our side and was never
    answered, an error-level finding stands, or the model ended with neither an answer nor a
    draft. Warnings leave it ok; other statuses stay."""
    if finished is None:
        return "error", None, None
    if finished.status != "ok":
        return finished.status, finished.stop_reason, finished.message
    errors = [f for f in findings if isinstance(f, dict) and f.get("severity") == "error"]
    if any(f.get("kind") == DRAFT_NOT_SAVED for f in errors):
        return "incomplete", DRAFT_NOT_SAVED, ("a draft could not be saved: the reply is not in the "
                                               "review queue; a person must look")
    failed = failed_lookups(calls)
    if failed:
        what = ", ".join(f"{code} ({why})" for code, why in failed[:3])
        return "incomplete", LOOKUP_FAILED, (f"the lookup of {what} failed on our side and was not "
                                             "answered later; a person must look")
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return "incomplete", GROUNDING, (f"{errors[0].get('kind')}: {errors[0].get('message')}{more}; "
                                         "a person must look")
    if drafts is not None and not drafts and not (finished.answer or "").strip():
        # an empty answer and nothing in the review queue: nothing was done a staffer can use
        return "incomplete", NO_ANSWER, ("the model ended its turn with neither an answer nor a "
                                         "draft; a person must look")
    return finished.status, finished.stop_reason, finished.message


class ResultBuilder:
    """Builds the spec's ``--json`` object from one question's events."""

    def __init__(self, *, provider: str, model: str | None, prices: dict[str, Any] | None = None):
        self.provider = provider
        self.model = model
        self.prices = prices
        self.question: str | None = None
        self.customer: str | None = None
        self.session_id: str | None = None
        # Calls in the order the model asked, each filled in by its result. Matched by id and
        # position: ids are the model's text, and a repeated id must not merge two calls.
        self.tool_calls: list[dict[str, Any]] = []
        self._awaiting: dict[str, list[int]] = {}  # id -> indexes of calls still without a result
        self.drafts: list[dict[str, Any]] = []
        self.finished: TurnFinished | None = None
        self.error: Error | None = None
        self.checks: list[dict[str, Any]] = []  # the grounding findings (a ``Checked`` event)

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, Question):
            self.question, self.customer, self.session_id = ev.text, ev.customer, ev.session_id
        elif isinstance(ev, ToolCallStarted):
            self._awaiting.setdefault(ev.id, []).append(len(self.tool_calls))
            self.tool_calls.append({"id": ev.id, "name": ev.name, "input": ev.input})
        elif isinstance(ev, ToolResult):
            rec = ev.record()
            waiting = self._awaiting.get(ev.id)
            if waiting:
                self.tool_calls[waiting.pop(0)] = rec
            else:
                self.tool_calls.append(rec)
        elif isinstance(ev, DraftSaved):
            if not any(d["id"] == ev.id for d in self.drafts):
                self.drafts.append({"id": ev.id, "path": ev.path})
        elif isinstance(ev, Error):
            self.error = ev
        elif isinstance(ev, TurnFinished):
            self.finished = ev
        elif isinstance(ev, Checked):
            self.checks = list(ev.findings)
            f = self.finished
            if f is not None and (ev.status, ev.stop_reason) != (f.status, f.stop_reason):
                self.finished = dataclasses.replace(f, status=ev.status, stop_reason=ev.stop_reason,
                                                    message=ev.message)

    def finished_calls(self) -> list[dict[str, Any]]:
        """The calls that have a result (one cut short by Ctrl-C has none), in the order asked."""
        return [c for c in self.tool_calls if "result" in c]

    def cancelled(self) -> None:
        self.finished = TurnFinished("error", "cancelled", "", 0, "cancelled by the person")
        self.error = Error("cancelled", "cancelled by the person", 130)

    @property
    def exit_code(self) -> int:
        f = self.finished
        if self.error is not None:
            return self.error.exit_code
        if f is None:
            return 1
        return 0 if f.status == "ok" else 1

    def result(self) -> dict[str, Any]:
        f = self.finished
        usage = (f.usage if f else {}) or {}
        status = f.status if f else "error"
        err = self.error.message if self.error else (f.message if f and f.status != "ok" else None)
        return redact_result({
            "question": self.question,
            "customer": self.customer,
            "answer": f.answer if f else "",
            "status": status,
            "stop_reason": f.stop_reason if f else None,
            "error": err,
            "turns": f.turns if f else 0,
            "tool_calls": self.finished_calls(),
            "drafts": self.drafts,
            "usage": {k: int(usage.get(k, 0)) for k in ("input_tokens", "output_tokens",
                                                         "cache_read_input_tokens",
                                                         "cache_creation_input_tokens")},
            "provider": self.provider,
            "model": self.model,
            "session_id": self.session_id,
            "checks": self.checks,
            # Beyond the spec's fields (issue 9): the usage priced with agentcli.providers.pricing.
            "estimated_cost_usd": estimate_cost(self.model, usage, self.prices),
        })


def redact_result(d: dict[str, Any]) -> dict[str, Any]:
    from .redact import redact_obj

    return redact_obj(d)


class TicketLog:
    """Every finished tool call and every draft of one ticket, across its questions."""

    def __init__(self) -> None:
        self.tool_calls: list[dict[str, Any]] = []
        self.drafts: list[dict[str, Any]] = []

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, ToolResult):
            self.tool_calls.append(ev.record())
        elif isinstance(ev, DraftSaved) and not any(d["id"] == ev.id for d in self.drafts):
            self.drafts.append({"id": ev.id, "path": ev.path, "order_code": ev.order_code})

    def clear(self) -> None:
        self.tool_calls.clear()
        self.drafts.clear()
