"""Findings belong to a text: a draft whose text is no longer the one its findings were computed
for (a hand edit in the file, ``drafts edit``, ``review``'s edit, or a save whose checks never
ran) is checked again before anyone is shown its findings or approves it.

The checks are ``checks.grounding.check_ticket`` over the draft's text and the provenance its
header stores (the ticket's questions, the lookups the draft relied on), run in a thread with a
time budget: a check that does not finish in time leaves the findings marked as not current
(``Draft.findings_current`` False), which the review gate treats like an error-level finding.
What is found is stored with the text it was computed for (``DraftStore.set_findings``); a
folder we may not write still gets the findings shown, they are just not stored.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from typing import Any

from ..drafts.format import Draft, text_key
from ..drafts.queue import Selection, select
from ..errors import AgentcliError
from ..vocab import ToolName, records

BUDGET_S = 5.0  # seconds the checks of one command may take, all drafts together


def check_text(d: Draft, budget_s: float | None = None) -> list[dict[str, Any]]:
    """The grounding findings of the draft's text as it is now, from its stored provenance (the
    pattern floor; ``budget_s``: past it, what is unread is a ``not_fully_checked`` warning)."""
    # the checks compile their patterns on import (~60 ms): only when a text needs them, so
    # `drafts list` of checked drafts starts as fast as before
    from ..checks.grounding import check_ticket

    m = d.meta
    lookups = records([{"name": ToolName.LOOKUP, **x} for x in m.get("lookups") or []
                       if isinstance(x, dict)])
    questions = [q for q in m.get("questions") or ([m["question"]] if m.get("question") else [])
                 if isinstance(q, str)]
    found = check_ticket(answer="", drafts=[{"id": d.id, "text": d.text}], tool_results=lookups,
                         questions=questions, budget_s=budget_s)
    out = [f.to_dict() for f in found]
    return [f for f in out if f.get("where") in (d.id, None, "")]


def _in_thread(d: Draft, timeout: float) -> list[dict[str, Any]] | None:
    """``check_text(d)`` in a daemon thread (a check that never ends cannot hold the command
    up, nor its exit); None when it did not finish within ``timeout`` or failed."""
    box: queue.Queue = queue.Queue(maxsize=1)

    def work() -> None:
        try:
            box.put(("ok", check_text(d, max(0.05, timeout * 0.8))))
        except Exception as e:  # noqa: BLE001 - a check that breaks is a check not run
            box.put(("error", e))

    threading.Thread(target=work, name="agentcli-recheck", daemon=True).start()
    try:
        kind, value = box.get(timeout=max(0.0, timeout))
    except queue.Empty:
        return None
    return value if kind == "ok" else None


class Rechecker:
    """Brings drafts' findings up to date within one budget shared by a whole command."""

    def __init__(self, store: Any, budget_s: float = BUDGET_S):
        self.store = store
        self.deadline = time.monotonic() + budget_s
        self.budget_s = budget_s
        self.notes: dict[str, str] = {}  # draft id -> what happened (for the screen)
        self.unverified: dict[str, str] = {}  # draft id -> why it could not be verified
        self._verified: dict[tuple[str, str], Draft] = {}

    def fresh(self, d: Draft) -> Draft:
        """``d`` with findings for its current text: as stored when they are current, else
        checked again (and stored). When the checks cannot run in time, ``d`` as it was
        (``findings_current`` stays False; ``notes[d.id]`` says why)."""
        if not isinstance(d, Draft) or d.findings_current:
            return d
        found = self._run(d)
        if found is None:
            self.notes[d.id] = (f"its text changed and the grounding checks could not run again "
                                f"within {self.budget_s:g} s")
            return d
        return self._stored(d, found, "checked again for its current text")

    def _run(self, d: Draft) -> list[dict[str, Any]] | None:
        """The floor's findings of ``d``'s text, in what is left of the budget; None past it."""
        left = self.deadline - time.monotonic()
        return _in_thread(d, left) if left > 0 else None

    def _stored(self, d: Draft, found: list[dict[str, Any]], note: str) -> Draft:
        """``d`` with FOUND as the findings of its text, stored when the folder may be written
        (else shown, not stored)."""
        try:
            self.store.set_findings(d.id, found, text=d.text)
        except (AgentcliError, OSError, ValueError):
            pass  # a folder we may not write
        self.notes[d.id] = note
        return dataclasses.replace(d, meta={**d.meta, "findings": found, "findings_sha256": text_key(d.text)})

    def verify(self, d: Draft) -> Draft:
        """``d`` as an approval must see it: when its stored findings are current and hold no
        error-level one, the pattern floor runs again on its text as it is now, and an error-level
        finding the stored ones lack is added (and stored). The folder is hostile ground: a
        findings line deleted or emptied by hand is not a clean draft. Out of time, the draft is
        ``unverified`` (held by the gate, as an unchecked one is)."""
        if not isinstance(d, Draft) or not d.findings_current or d.errors:
            return d
        key = (d.id, d.version)
        if key in self._verified:
            return self._verified[key]
        found = self._run(d)
        if found is None:
            self.unverified[d.id] = (f"the grounding checks could not run again within "
                                     f"{self.budget_s:g} s before its approval")
            return d
        stored = list(d.meta.get("findings") or [])
        missing = [f for f in found if f.get("severity") == "error"
                   and not any(_same_finding(f, x) for x in stored)]
        if missing:  # held all the same where the folder may not be written
            d = self._stored(d, stored + missing, "its stored findings lack what the checks find in its text now")
        self._verified[key] = d
        return d


def _same_finding(a: dict[str, Any], b: Any) -> bool:
    return isinstance(b, dict) and a.get("kind") == b.get("kind") and \
        (a.get("sentence") or a.get("message")) == (b.get("sentence") or b.get("message"))


def select_fresh(store: Any, q: Any, checker: Rechecker, *, limit: int | None = None,
                 offset: int = 0) -> Any:
    """``queue.select`` with every draft's findings brought up to date first, so ``--flagged``
    selects by the findings of the text as it is now (a hand edit that adds a refund promise is
    flagged; one that removes it is not)."""
    if q.flagged and limit is not None:  # flagged by the findings checked now: page after
        sel = select_fresh(store, q, checker)
        page = sel.drafts[offset:offset + limit]
        return Selection(page, sel.damaged, len(sel.drafts) > offset + limit)
    sel = select(store, dataclasses.replace(q, flagged=False), limit=limit, offset=offset)
    drafts = [checker.fresh(d) for d in sel.drafts]
    if q.flagged:
        drafts = [d for d in drafts if not d.findings_current or d.meta.get("findings")]
    return Selection(drafts, sel.damaged, sel.more)


def unchecked_note(d: Draft, rechecker: Rechecker | None = None) -> str | None:
    """Why a draft's findings are not those of its text, or None when they are."""
    if d.findings_current:
        return None
    if rechecker is not None and d.id in rechecker.notes:
        return rechecker.notes[d.id]
    return "its findings were computed for an earlier text"
