"""Model behaviours for the fake servers, decided from the request alone (so a scenario serves
any number of questions, concurrently, and an eval suite run K times).

A scenario reads the history a request carries and says what the "model" does next: tool calls
or a text. ``for_openai(scenario)`` and ``for_anthropic(scenario)`` make it a ``handler`` of
``FakeOpenAI`` / ``FakeAnthropic``, served to the real SDKs like any scripted reply::

    with FakeOpenAI(handler=for_openai(false_status_then_correct)) as fake: ...

- ``false_status_then_correct``: looks up the question's order codes, saves a draft that states
  a false status ("has shipped" for an order waiting for payment), ends its turn; once the repair
  message (``<grounding_findings>``) arrives, saves a draft stating what the lookup returned and
  answers again. Without the repair turn its run ends with the false draft (``grounding``).
- ``repeat_lookup_forever``: asks for the same lookup in every response, whatever it is sent
  (the 1.5B model in workflow mode did that ten times).
- ``truthful``: looks up, drafts what the lookup returned, answers.

Standard library only; imports nothing of agentcli but the fake servers' reply builders.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from . import fake_anthropic as fa
from . import fake_openai as fo

REPAIR_TAG = "<grounding_findings>"
_CODE_RE = re.compile(r"\b(?:ORD-?\d{8}|(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{10})\b", re.I)

# What a reply truthfully says of each status (words the grounding checks read as that status).
TRUE_WORDS = {
    "pending_payment": "is waiting for payment: the payment is not yet matched to the order",
    "paid": "is paid, and the license has not been issued yet",
    "license_issued": "is complete: the license has been issued",
    "shipped": "has shipped",
    "delivered": "has been delivered",
    "cancelled": "was cancelled",
    "refunded": "was refunded",
}


@dataclass
class Seen:
    """What the history of one request shows about the question being answered."""
    question: str = ""
    codes: list[str] = field(default_factory=list)
    lookups: list[tuple[dict, Any]] = field(default_factory=list)  # (input, parsed result)
    drafts: int = 0            # draft_reply calls answered since the question
    repaired: bool = False     # the repair message came
    drafts_after_repair: int = 0


Action = tuple[str, Any]  # ("calls", [(name, input)]) or ("text", str)
Scenario = Callable[[Seen], Action]


def _parse(content: Any) -> Any:
    if isinstance(content, list):  # Messages tool_result content blocks
        content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    try:
        return json.loads(content) if isinstance(content, str) else content
    except ValueError:
        return content


def _steps(request: dict[str, Any]) -> list[tuple]:
    """The history as ("text", s) / ("call", id, name, input) / ("result", id, content)."""
    out: list[tuple] = []
    for m in request.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role, content = m.get("role"), m.get("content")
        if role == "user":
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for b in blocks if isinstance(blocks, list) else []:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "text":
                    out.append(("text", str(b.get("text") or "")))
                elif b.get("type") == "tool_result":
                    out.append(("result", b.get("tool_use_id"), b.get("content")))
        elif role == "tool":
            out.append(("result", m.get("tool_call_id"), content))
        elif role == "assistant":
            for b in content if isinstance(content, list) else []:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    out.append(("call", b.get("id"), b.get("name"), b.get("input")))
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                out.append(("call", tc.get("id"), fn.get("name"), _parse(fn.get("arguments"))))
    return out


def seen(request: dict[str, Any]) -> Seen:
    steps = _steps(request)
    start = max((i for i, s in enumerate(steps) if s[0] == "text" and REPAIR_TAG not in s[1]),
                default=-1)
    st = Seen()
    if start < 0:
        return st
    st.question = steps[start][1]
    for c in _CODE_RE.findall(st.question):
        c = c.upper()
        c = "ORD-" + c[-8:] if c.startswith("ORD") else c
        if c not in st.codes:
            st.codes.append(c)
    calls: dict[Any, tuple[str, Any]] = {}
    for s in steps[start + 1:]:
        if s[0] == "text" and REPAIR_TAG in s[1]:
            st.repaired = True
        elif s[0] == "call":
            calls[s[1]] = (s[2], s[3])
        elif s[0] == "result" and s[1] in calls:
            name, inp = calls[s[1]]
            if name == "get_order_status":
                st.lookups.append((inp if isinstance(inp, dict) else {}, _parse(s[2])))
            elif name == "draft_reply":
                st.drafts += 1
                st.drafts_after_repair += st.repaired
    return st


def _lookup_calls(st: Seen) -> Action:
    return ("calls", [("get_order_status", {"order_code": c}) for c in st.codes[:5]])


def _reply_text(st: Seen, *, false: bool) -> tuple[str, str | None]:
    parts, first = [], None
    for _, r in st.lookups:
        if not isinstance(r, dict) or not isinstance(r.get("order_code"), str):
            continue
        code = r["order_code"]
        first = first or code
        if r.get("found") is False:
            parts.append(f"we could not find order {code}; please check the code")
            continue
        status = str(r.get("status"))
        if false:
            status = "pending_payment" if status in ("shipped", "delivered") else "shipped"
        parts.append(f"your order {code} {TRUE_WORDS.get(status, 'is being processed')}")
    body = "; ".join(parts) or "we need your order code to look into this"
    return f"Hello, {body}. Kind regards, the support team", first


def _draft(st: Seen, *, false: bool) -> Action:
    text, code = _reply_text(st, false=false)
    return ("calls", [("draft_reply", {"text": text, **({"order_code": code} if code else {})})])


def false_status_then_correct(st: Seen) -> Action:
    if st.codes and not st.lookups:
        return _lookup_calls(st)
    if not st.codes and not st.repaired:
        return ("text", "Please ask the customer for the order code.")
    if not st.repaired:
        return _draft(st, false=True) if not st.drafts else ("text", "I saved a draft reply.")
    if not st.drafts_after_repair:
        return _draft(st, false=False)
    return ("text", "I corrected the draft: it now states what the lookup returned.")


def repeat_lookup_forever(st: Seen) -> Action:
    return ("calls", [("get_order_status", {"order_code": (st.codes or ["GH56JK78MN"])[0]})])


def truthful(st: Seen) -> Action:
    if st.codes and not st.lookups:
        return _lookup_calls(st)
    if st.codes and not st.drafts:
        return _draft(st, false=False)
    return ("text", "I looked the order up and saved a draft reply." if st.codes else
            "Please ask the customer for the order code.")


def for_openai(scenario: Scenario) -> Callable[[dict[str, Any]], Any]:
    def handler(request: dict[str, Any]) -> Any:
        kind, what = scenario(seen(request))
        if kind == "calls":
            return fo.completion(*(fo.tool_call(n, i) for n, i in what))
        return fo.text(what)
    return handler


def for_anthropic(scenario: Scenario) -> Callable[[dict[str, Any]], Any]:
    def handler(request: dict[str, Any]) -> Any:
        kind, what = scenario(seen(request))
        if kind == "calls":
            return fa.message(*(fa.tool_use_block(n, i) for n, i in what))
        return fa.text(what)
    return handler
