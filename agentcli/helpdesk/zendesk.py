"""Zendesk: no draft API, so an internal note: ``PUT /api/v2/tickets/{id}.json`` with
``{"ticket": {"comment": {"body": ..., "public": false}}}``. ``public`` defaults to true in
Zendesk, so it is set, to false, on every request, and the guard refuses a body without it.

The note ends with our marker line (``[agentcli draft d-…]``; an internal note is read by agents
only), and ``GET /api/v2/tickets/{id}/comments.json?sort_order=desc`` finds it again. Zendesk's
``Idempotency-Key`` is documented for creating tickets only, not for updating one: none is sent.
Token: an OAuth access token (``Bearer``), or ``EMAIL/token:API_TOKEN`` (basic auth).
"""

from __future__ import annotations

import base64
import re
from typing import Any, Mapping

from .rules import Helpdesk, Route, exact, ident, items, marker, text_field


def build(text: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    return {"ticket": {"comment": {"body": f"{text}\n\n{marker(meta['id'])}", "public": False}}}


def is_private(body: Any) -> bool:
    if not exact(body, {"ticket"}) or not exact(body["ticket"], {"comment"}):
        return False
    c = body["ticket"]["comment"]
    return exact(c, {"body", "public"}) and c["public"] is False and text_field(c["body"])


def auth(token: str) -> str:
    if ":" in token:  # EMAIL/token:API_TOKEN
        return "Basic " + base64.b64encode(token.encode()).decode()
    return f"Bearer {token}"


def created_id(headers: Mapping[str, str], data: Any) -> str | None:
    for ev in items(data, "audit", "events"):
        if ev.get("type") == "Comment":
            return ident(ev.get("id"))
    return None


def find(data: Any, draft_id: str, text: str) -> str | None:
    for c in items(data, "comments"):
        if isinstance(c.get("body"), str) and marker(draft_id) in c["body"]:
            return ident(c.get("id"))
    return None


HELPDESK = Helpdesk(
    name="zendesk", title="Zendesk", what="an internal note",
    write=Route("PUT", "/api/v2/tickets/{id}.json"),
    check=Route("GET", "/api/v2/tickets/{id}/comments.json", "sort_order=desc"),
    id_re=re.compile(r"[1-9][0-9]{0,15}"), id_words="a Zendesk ticket number (digits)",
    build=build, is_private=is_private, needs=lambda meta: None, auth=auth,
    created_id=created_id, find=find, default_url="https://SUBDOMAIN.zendesk.com")
