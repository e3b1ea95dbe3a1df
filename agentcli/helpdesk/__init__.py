"""Approved drafts into the helpdesk, never as a public reply (``drafts export`` / ``drafts push``).

- ``rules``: the allowlist (:class:`~.rules.Helpdesk`), the base URL check and the ONE
  :func:`~.rules.guard` every request passes right before it is sent;
- ``zendesk``, ``front``, ``helpscout``, ``freshdesk``: one module per helpdesk (its write and
  check routes, body, flag, auth, ids);
- ``export``: which drafts go, as which request (a draft without a helpdesk ticket is skipped,
  with the reason); the lines of ``drafts export``;
- ``send``: the HTTP client (the only importer of ``httpx2`` outside ``providers``): bounded
  timeouts and bodies, no redirects, 429 / 5xx / timeouts retried within bounds;
- ``push``: once and recorded: a pending record before the request, the check for a note
  already there after a crash or a timeout, the done record with the helpdesk's id.
"""

from __future__ import annotations

from . import freshdesk, front, helpscout, zendesk
from .rules import Helpdesk

HELPDESKS: dict[str, Helpdesk] = {m.HELPDESK.name: m.HELPDESK
                                  for m in (zendesk, front, helpscout, freshdesk)}
FORMATS = (*HELPDESKS, "jsonl")
