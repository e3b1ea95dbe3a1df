"""Freshdesk: a private note: ``POST /api/v2/tickets/{id}/notes`` with ``"private": true``
(set every time, and required by the guard). The note ends with our marker line, and
``GET /api/v2/tickets/{id}/conversations`` (notes and replies) finds it again. Freshdesk
documents no idempotency key. Token: the agent's API key (basic auth, ``KEY:X``).
"""

from __future__ import annotations

import base64
import html
import re
from typing import Any, Mapping

from .rules import Helpdesk, Route, as_html, exact, ident, marker, text_field


def build(text: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    return {"body": f"{as_html(text)}<br>\n<br>\n{html.escape(marker(meta['id']))}", "private": True}


def is_private(body: Any) -> bool:
    return exact(body, {"body", "private"}) and body["private"] is True and text_field(body["body"])


def created_id(headers: Mapping[str, str], data: Any) -> str | None:
    return ident(data.get("id")) if isinstance(data, dict) else None


def find(data: Any, draft_id: str, text: str) -> str | None:
    for n in (data if isinstance(data, list) else [])[:1000]:
        if isinstance(n, dict) and any(isinstance(n.get(k), str) and marker(draft_id) in n[k]
                                       for k in ("body", "body_text")):
            return ident(n.get("id"))
    return None


HELPDESK = Helpdesk(
    name="freshdesk", title="Freshdesk", what="a private note",
    write=Route("POST", "/api/v2/tickets/{id}/notes"),
    check=Route("GET", "/api/v2/tickets/{id}/conversations"),
    id_re=re.compile(r"[1-9][0-9]{0,15}"), id_words="a Freshdesk ticket number (digits)",
    build=build, is_private=is_private, needs=lambda meta: None,
    auth=lambda t: "Basic " + base64.b64encode(f"{t}:X".encode()).decode(),
    created_id=created_id, find=find, default_url="https://DOMAIN.freshdesk.com")
