"""The offline workflow: a deterministic, rule-based stand-in for a model.

It is *not* a language model. It drives the same loop and the same tools, which makes agentcli
usable (and demonstrable) with no API key and no network:

1. find the order codes in the question and look each one up (one turn, concurrent calls);
2. if the question reads like a customer's message, draft a short factual reply from the results;
3. answer the support agent with what was found (and the draft id).

The draft is built only from structured fields (the order code, the status as one of the known
words, an ISO delivery date, the license flag), never from database free text (``product``,
``status_detail``): a product named "... your full refund has been approved ..." would otherwise
reach a customer as our sentence. A field that does not have its expected shape is left out,
not quoted. The support agent's summary (not a draft) still shows the free text.
It speaks the Anthropic message format, so histories look the same as with the real provider.
"""

from __future__ import annotations

import json
import re
from typing import Any, AsyncIterator

from ..events import TextDelta
from ..vocab import OrderCode, ToolName, asks_for_line_items, distinct_codes
from .base import ModelSettings, ModelTurn, ToolCall
from .messages_format import MessagesHistory

CUSTOMER_HINTS = re.compile(
    r"\b(hi|hello|dear|thanks|thank you|regards|cheers|my order|i ordered|i paid|i bought|where is|"
    r"why|when|customer|reply|draft|respond|answer them|write)\b", re.IGNORECASE)

STATUS_TEXT = {
    "pending_payment": "is waiting for payment to be confirmed",
    "paid": "is paid and being prepared",
    "license_issued": "is complete and the license has been issued",
    "shipped": "has shipped",
    "delivered": "has been delivered",
    "cancelled": "was cancelled",
    "refunded": "was refunded",
}


def find_codes(text: str) -> list[str]:
    """The order codes of a question, as the workflow mode finds them (``vocab``)."""
    return [str(c) for c in distinct_codes(text)]


_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _customer_sentence(r: dict[str, Any]) -> str:
    code = r.get("order_code")
    code = code if OrderCode.parse_or_none(code) == code else "you asked about"
    if not r.get("found"):
        return (f"We could not find an order with the code {code}. Could you double-check the "
                "code from your confirmation email?")
    status = r.get("status")
    s = f"Your order {code} {STATUS_TEXT.get(status, 'is being processed')}."
    if status == "pending_payment":
        s += (" We have not yet been able to match your payment to the order; the license is "
              "issued as soon as the payment is confirmed. A colleague is checking it.")
    elif status == "paid" and not r.get("license_issued"):
        s += " The license has not been issued yet; it follows once processing is complete."
    eta = r.get("estimated_delivery")
    if isinstance(eta, str) and _DATE_RE.fullmatch(eta) and status in ("paid", "license_issued", "shipped"):
        s += f" The estimated delivery date is {r['estimated_delivery']}."
    if r.get("license_issued") and status not in ("license_issued", "refunded", "cancelled"):
        s += " Your license has been issued."
    if status in ("cancelled", "refunded"):
        s += " If you have questions about this, a colleague will be happy to help."
    return s


def _agent_line(r: dict[str, Any], is_error: bool) -> str:
    if is_error:
        return f"- lookup failed: {r}"
    code = r.get("order_code", "?")
    if not r.get("found"):
        return f"- {code}: not found"
    parts = [f"status {r.get('status')}"]
    if r.get("status_detail"):
        parts.append(f"detail on file: \"{str(r['status_detail'])[:200]}\"")
    parts.append(f"placed {r.get('placed_on')}")
    parts.append(f"estimated delivery {r.get('estimated_delivery') or 'none'}")
    parts.append("license issued" if r.get("license_issued") else "no license issued")
    if "line_items" in r:
        items = ", ".join(f"{li['quantity']}× {li['name']} ({li['sku']})" for li in r["line_items"])
        parts.append(f"items: {items}")
    return f"- {code} ({r.get('product')}): " + "; ".join(parts)


class OfflineProvider(MessagesHistory):
    name = "offline"

    gate = None  # no API, no rate limits

    def __init__(self, model: str | None = None, model_settings: ModelSettings | None = None):
        self.model = model or "offline-rules-v1"
        self.model_settings = model_settings or ModelSettings()
        self._n = 0

    async def check_api(self) -> str:
        return "offline workflow: no model API to reach"

    def _id(self) -> str:
        self._n += 1
        return f"toolu_offline_{self._n:04d}"

    async def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[TextDelta | ModelTurn]:
        turn = self._decide(history)
        if stream and turn.text:
            for piece in re.findall(r"\S+\s*|\s+", turn.text):
                yield TextDelta(piece)
        yield turn

    # -- the rules ----------------------------------------------------------------------
    def _decide(self, history: list[Any]) -> ModelTurn:
        # The current question: the user text blocks since the last assistant text-only answer.
        question, calls_done = self._state(history)
        lookups = [c for c in calls_done if c[0]["name"] == ToolName.LOOKUP]
        drafts = [c for c in calls_done if c[0]["name"] == ToolName.DRAFT]
        codes = find_codes(question) or self._earlier_codes(history)  # follow-ups keep context
        if not lookups:
            if not codes:
                return self._say(
                    "I could not find an order code in this question. Order codes look like "
                    "GH56JK78MN (10 letters/digits) or ORD-20261234; please ask the customer for "
                    "theirs. (Offline workflow: only order lookups are supported without a model.)")
            want_lines = asks_for_line_items(question)
            return self._tools([(ToolName.LOOKUP, {"order_code": c, "include_line_items": want_lines}
                                 if want_lines else {"order_code": c}) for c in codes])
        results = [(self._parse(r), err) for _, r, err in lookups]
        if not drafts and CUSTOMER_HINTS.search(question) and any(not e for _, e in results):
            found = [r for r, e in results if not e and isinstance(r, dict)]
            body = " ".join(_customer_sentence(r) for r in found)
            text = f"Hello,\n\nthank you for getting in touch. {body}\n\nBest regards,\nCustomer Support"
            args: dict[str, Any] = {"text": text}
            codes_found = [r.get("order_code") for r in found if r.get("found")]
            if len(codes_found) == 1:
                args["order_code"] = codes_found[0]
            return self._tools([(ToolName.DRAFT, args)])
        lines = [_agent_line(r, e) for r, e in results]
        summary = "Here is what the orders database says:\n" + "\n".join(lines)
        for _, r, err in drafts:
            d = self._parse(r)
            if not err and isinstance(d, dict):
                summary += f"\n\nI saved a reply as draft {d.get('draft_id')} for review (nothing was sent)."
            else:
                summary += f"\n\nThe draft could not be saved: {d}"
        return self._say(summary)

    @staticmethod
    def _parse(content: Any) -> Any:
        if isinstance(content, str):
            try:
                return json.loads(content)
            except ValueError:
                return content
        return content

    def _state(self, history: list[Any]) -> tuple[str, list[tuple[dict, Any, bool]]]:
        """(question text, [(tool_use, result content, is_error)]) for the current question."""
        start = 0
        for i, m in enumerate(history):
            if m["role"] == "assistant" and not any(b.get("type") == "tool_use" for b in m["content"]):
                start = i + 1
        texts: list[str] = []
        uses: dict[str, dict] = {}
        done: list[tuple[dict, Any, bool]] = []
        for m in history[start:]:
            content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
            for b in content:
                if m["role"] == "user" and b.get("type") == "text":
                    if done:
                        # a question after tool results (a ticket resumed the next day: its
                        # lookups, then the new question; or a turn cut by Ctrl-C) starts
                        # afresh: those calls answered the earlier one
                        texts, uses, done = [], {}, []
                    texts.append(b["text"])
                elif b.get("type") == "tool_use":
                    uses[b["id"]] = b
                elif b.get("type") == "tool_result" and b.get("tool_use_id") in uses:
                    done.append((uses[b["tool_use_id"]], b.get("content"), bool(b.get("is_error"))))
        return "\n".join(texts), done

    @staticmethod
    def _earlier_codes(history: list[Any]) -> list[str]:
        for m in reversed(history):
            if m["role"] != "user" or not isinstance(m["content"], list):
                continue
            for b in m["content"]:
                if b.get("type") == "text":
                    codes = find_codes(b["text"])
                    if codes:
                        return codes
        return []

    def _say(self, text: str) -> ModelTurn:
        return ModelTurn("end_turn", text, [], {},
                         {"role": "assistant", "content": [{"type": "text", "text": text}]})

    def _tools(self, calls: list[tuple[str, dict]]) -> ModelTurn:
        tcs = [ToolCall(self._id(), name, args) for name, args in calls]
        content = [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in tcs]
        return ModelTurn("tool_use", "", tcs, {}, {"role": "assistant", "content": content})

    async def aclose(self) -> None:
        return None
