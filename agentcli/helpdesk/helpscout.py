"""Help Scout: a reply held as a draft: ``POST /v2/conversations/{id}/reply`` with
``"draft": true`` (without it the reply is sent to the customer: the guard refuses any body
whose ``draft`` is not ``true``). A reply names its customer: the draft's customer email. The
draft is what the agent will send, so it carries no marker: a rerun finds it by its words in
``GET /v2/conversations/{id}/threads``. The new thread's id comes in the ``Resource-ID``
header. Help Scout documents no idempotency key. Token: an OAuth access token (``Bearer``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from .rules import Helpdesk, Route, as_html, exact, ident, items, same_words, text_field

_EMAIL_RE = re.compile(r"[^@\s<>\"']{1,64}@[A-Za-z0-9.-]{1,253}")


def needs(meta: Mapping[str, Any]) -> str | None:
    c = meta.get("customer")
    if not (isinstance(c, str) and _EMAIL_RE.fullmatch(c)):
        return "a Help Scout reply names its customer, and the draft has no customer email"
    return None


def build(text: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    return {"customer": {"email": meta.get("customer")}, "text": as_html(text), "draft": True}


def is_private(body: Any) -> bool:
    return (exact(body, {"customer", "text", "draft"}) and body["draft"] is True
            and exact(body["customer"], {"email"}) and isinstance(body["customer"]["email"], str)
            and _EMAIL_RE.fullmatch(body["customer"]["email"]) is not None
            and text_field(body["text"]))


def created_id(headers: Mapping[str, str], data: Any) -> str | None:
    return ident(headers.get("resource-id"))


def find(data: Any, draft_id: str, text: str) -> str | None:
    for t in items(data, "_embedded", "threads"):
        if same_words(t.get("body"), text):
            return ident(t.get("id"))
    return None


HELPDESK = Helpdesk(
    name="helpscout", title="Help Scout", what="a draft reply",
    write=Route("POST", "/v2/conversations/{id}/reply"),
    check=Route("GET", "/v2/conversations/{id}/threads"),
    id_re=re.compile(r"[1-9][0-9]{0,15}"), id_words="a Help Scout conversation number (digits)",
    build=build, is_private=is_private, needs=needs, auth=lambda t: f"Bearer {t}",
    created_id=created_id, find=find, default_url="https://api.helpscout.net")
