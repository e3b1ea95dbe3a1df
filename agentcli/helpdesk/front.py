"""Front: a real draft, shared with the team: ``POST /conversations/{id}/drafts`` with
``{"body": ..., "mode": "shared"}`` (the endpoint that sends, ``/messages``, is not in the
allowlist). The draft is what the agent will send, so it carries no marker: a rerun finds it by
its words in ``GET /conversations/{id}/drafts``. Front documents no idempotency key.
Token: an API token (``Bearer``). Conversation ids look like ``cnv_55c8c149``.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from .rules import Helpdesk, Route, as_html, exact, ident, items, same_words, text_field


def build(text: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    return {"body": as_html(text), "mode": "shared"}


def is_private(body: Any) -> bool:
    return exact(body, {"body", "mode"}) and body["mode"] == "shared" and text_field(body["body"])


def created_id(headers: Mapping[str, str], data: Any) -> str | None:
    return ident(data.get("id")) if isinstance(data, dict) else None


def find(data: Any, draft_id: str, text: str) -> str | None:
    for d in items(data, "_results"):
        if same_words(d.get("body"), text):
            return ident(d.get("id"))
    return None


HELPDESK = Helpdesk(
    name="front", title="Front", what="a shared draft",
    write=Route("POST", "/conversations/{id}/drafts"),
    check=Route("GET", "/conversations/{id}/drafts"),
    id_re=re.compile(r"cnv_[0-9a-z]{1,32}"), id_words="a Front conversation id (cnv_ and letters or digits)",
    build=build, is_private=is_private, needs=lambda meta: None, auth=lambda t: f"Bearer {t}",
    created_id=created_id, find=find, default_url="https://api2.frontapp.com")
