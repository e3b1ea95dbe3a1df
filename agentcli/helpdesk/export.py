"""Which drafts go to the helpdesk, and as which request (``drafts export`` and ``drafts push``).

**The helpdesk ticket.** A draft's ``ticket`` is the helpdesk's only when a person or a script
named it: ``--ticket`` / ``/ticket`` on ``ask`` and ``chat``, the ``id`` of a batch line. A
conversation started without one gets its session id as its ticket (``ticket == session_id``),
a batch line without an id ``line-N-<hash>``: neither is a helpdesk ticket, and such a draft is
skipped with that reason; so is a ticket that held a secret (stored as ``id-<hash>``) and one that is not this helpdesk's kind of id (Zendesk,
Help Scout and Freshdesk: digits; Front: ``cnv_…``), whatever else it holds: hostile ids never
reach a path.

**Selection.** The ``drafts list`` filters (``Query``) over the store, approved drafts by default;
``export`` leaves out drafts already exported to that format and ``push`` drafts already pushed
(``--again`` on export writes them again; a push is never made twice).

**Records.** One JSON object per draft: ``helpdesk``, ``draft``, ``ticket``, ``method``,
``path``, ``body`` (exactly what ``push`` sends, checked by the same guard), ``version`` (the
draft's, as ``drafts show`` prints it), ``text_sha256``. The ``jsonl`` format is the helpdesk-free
record for other tools: ``draft``, ``ticket``, ``text``, ``customer``, ``order_code``,
``approved_by``, ``approved_at``, ``version``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..drafts.format import Draft, text_hash
from ..redact import redact
from . import HELPDESKS
from .rules import Helpdesk, guard

_HASHED_RE = re.compile(r"id-[0-9a-f]{24}")
_BATCH_LINE_RE = re.compile(r"line-[0-9]+-[0-9a-f]{12}")  # batch.engine.line_ticket: a line without an id
EXAMPLE_BASE = "https://helpdesk.example"  # the base a line is checked against (export has none)


@dataclass(frozen=True)
class Planned:
    """One selected draft: its request (``record``), or why it is skipped (``skipped``)."""
    draft: Draft
    record: dict[str, Any] | None
    skipped: str | None = None


def helpdesk_ticket(d: Draft) -> tuple[str | None, str | None]:
    """(the helpdesk ticket, None) or (None, why the draft has none)."""
    t = d.ticket
    if not isinstance(t, str) or not t.strip():
        return None, "it has no ticket"
    if t == d.meta.get("session_id"):
        return None, ("its ticket is its session's own id (it was saved without --ticket): no "
                      "helpdesk ticket to put it in")
    if _HASHED_RE.fullmatch(t):
        return None, "its ticket id looked like a secret and was stored as a hash"
    if _BATCH_LINE_RE.fullmatch(t):
        return None, ("its ticket was made up by batch for a line without an id: no helpdesk "
                      "ticket to put it in")
    return t, None


def plan(d: Draft, fmt: str) -> Planned:
    """The request (or record) for draft ``d`` in format ``fmt``, or why it is skipped."""
    ticket, why = helpdesk_ticket(d)
    if ticket is None:
        return Planned(d, None, why)
    if fmt == "jsonl":
        m = d.meta
        return Planned(d, {"helpdesk": None, "draft": d.id, "ticket": ticket, "text": d.text,
                           "customer": m.get("customer"), "order_code": m.get("order_code"),
                           "approved_by": m.get("reviewed_by"), "approved_at": m.get("reviewed_at"),
                           "status": m.get("status"), "version": d.version,
                           "text_sha256": text_hash(d.text)})
    hd = HELPDESKS[fmt]
    if not hd.id_re.fullmatch(ticket) or not ticket.isascii():
        return Planned(d, None, f"its ticket {ticket[:60]!r} is not {hd.id_words}")
    why = hd.needs(d.meta)
    if why:
        return Planned(d, None, why)
    return Planned(d, request(hd, d, ticket))


def request(hd: Helpdesk, d: Draft, ticket: str) -> dict[str, Any]:
    """The write request for ``d``, checked by the guard as ``push`` will check it. The text is
    redacted once more (a draft saved before a token was configured may quote it)."""
    body = hd.build(redact(d.text), d.meta)
    path = hd.write.fill(ticket)
    guard(hd, EXAMPLE_BASE, hd.write.method, EXAMPLE_BASE + path, json.dumps(body).encode(), ticket)
    return {"helpdesk": hd.name, "draft": d.id, "ticket": ticket, "method": hd.write.method,
            "path": path, "body": body, "version": d.version, "text_sha256": text_hash(d.text)}


def pushed(d: Draft) -> dict[str, Any] | None:
    """The draft's push record (``state``: pending or done), or None: never pushed."""
    p = d.meta.get("push")
    return p if isinstance(p, dict) else None


def exported_to(d: Draft, fmt: str) -> dict[str, Any] | None:
    e = d.meta.get("exported")
    v = e.get(fmt) if isinstance(e, dict) else None
    return v if isinstance(v, dict) else None
