"""``drafts stats``: how review is going, from the drafts themselves (either backend).

- pending: how many, and how long they have waited (p50, p90, the oldest) against the review
  target (``review_target`` in agentcli.toml, default 4 h);
- decided: approved as written, approved after an edit (with the edit size: characters
  changed between the text as saved and the text approved, ``difflib``), rejected (with the
  reasons, most common first);
- the same counts per model, provider, mode, prompt version (``loop.prompt_version``: a prompt
  change is judged by its approval rate) and reviewer.

``--since`` counts the drafts created since then. Every string from a draft is hostile: the
caller prints it through ``one_line``.
"""

from __future__ import annotations

import difflib
from collections import Counter
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

from ..redact import one_line
from ..vocab import parse_time
from .format import Draft, same_text, text_matches

GROUPS = ("model", "provider", "mode", "prompt_version", "reviewer")
OUTCOMES = ("pending", "approved_as_written", "approved_after_edit", "rejected", "superseded")
MAX_REASONS = 10


def outcome(d: Draft) -> str:
    """What became of a draft: pending, approved as written / after an edit, rejected,
    superseded."""
    st = d.meta.get("status")
    if st == "pending_review":
        return "pending"
    if st == "approved":
        return "approved_as_written" if _as_written(d) else "approved_after_edit"
    return str(st) if st in ("rejected", "superseded") else "pending"


def _as_written(d: Draft) -> bool:
    orig = d.meta.get("original_text")
    if isinstance(orig, str):
        return same_text(orig, d.text)
    return not d.meta.get("text_sha256") or text_matches(d.meta.get("text_sha256"), d.text)


def edit_size(d: Draft) -> int | None:
    """Characters changed from the text as saved to the text as it is (None: not known, a hand
    edit of a file keeps no copy of the text before it)."""
    orig = d.meta.get("original_text")
    if not isinstance(orig, str):
        return None
    changed = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, orig, d.text, autojunk=False).get_opcodes():
        if op != "equal":
            changed += max(i2 - i1, j2 - j1)
    return changed


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p * (len(s) - 1))))]


def _row() -> dict[str, Any]:
    return {k: 0 for k in OUTCOMES}


def _rate(row: dict[str, Any]) -> float | None:
    decided = row["approved_as_written"] + row["approved_after_edit"] + row["rejected"]
    if not decided:
        return None
    return round((row["approved_as_written"] + row["approved_after_edit"]) / decided, 4)


def compute(drafts: Iterable[Any], *, target: timedelta, since: datetime | None = None,
            now: datetime | None = None) -> dict[str, Any]:
    """The ``drafts stats --json`` object over ``drafts`` (damaged entries are counted apart)."""
    now = now or datetime.now(timezone.utc)
    ages: list[float] = []
    totals = _row()
    edits: list[int] = []
    reasons: Counter[str] = Counter()
    groups: dict[str, dict[str, dict[str, Any]]] = {g: {} for g in GROUPS}
    damaged = 0
    for d in drafts:
        if not isinstance(d, Draft):
            damaged += 1
            continue
        created = parse_time(d.meta.get("created_at"))
        if since is not None and (created is None or created < since):
            continue
        o = outcome(d)
        totals[o] += 1
        if o == "pending" and created is not None:
            ages.append(max(0.0, (now - created).total_seconds()))
        if o == "approved_after_edit":
            n = edit_size(d)
            if n is not None:
                edits.append(n)
        if o == "rejected":
            reasons[one_line(str(d.meta.get("review_reason") or "(no reason given)"), 120)] += 1
        for g in GROUPS:
            key = d.meta.get("reviewed_by") if g == "reviewer" else d.meta.get(g)
            if g == "reviewer" and o in ("pending", "superseded"):
                continue
            name = one_line(str(key), 80) if key else "(unknown)"
            groups[g].setdefault(name, _row())[o] += 1
    t = target.total_seconds()
    out = {
        "since": since.isoformat() if since else None,
        "review_target_s": t,
        "pending": {"count": totals["pending"], "age_p50_s": _pct(ages, 0.5),
                    "age_p90_s": _pct(ages, 0.9), "oldest_s": max(ages) if ages else None,
                    "over_target": sum(1 for a in ages if a > t)},
        "decided": {k: totals[k] for k in ("approved_as_written", "approved_after_edit", "rejected")},
        "superseded": totals["superseded"],
        "approval_rate": _rate(totals),
        "edit_size": {"count": len(edits), "p50_chars": _pct([float(e) for e in edits], 0.5),
                      "p90_chars": _pct([float(e) for e in edits], 0.9),
                      "max_chars": max(edits) if edits else None},
        "reject_reasons": [{"reason": r, "count": n} for r, n in reasons.most_common(MAX_REASONS)],
        "damaged": damaged,
    }
    for g in GROUPS:
        out[f"by_{g}"] = [{"name": name, **row, "approval_rate": _rate(row)}
                          for name, row in sorted(groups[g].items(),
                                                  key=lambda kv: (-sum(kv[1].values()), kv[0]))]
    return out


def duration(seconds: float | None) -> str:
    """3h05m, 2d04h, 45s; "—" for none."""
    if seconds is None:
        return "—"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def lines(st: dict[str, Any]) -> list[str]:
    """The human report, one fact a line (the caller fits them to the terminal)."""
    p, dec = st["pending"], st["decided"]
    target = duration(st["review_target_s"])
    out = [f"pending: {p['count']}, waiting p50 {duration(p['age_p50_s'])}, p90 "
           f"{duration(p['age_p90_s'])}, oldest {duration(p['oldest_s'])} (target {target}; "
           f"{p['over_target']} over it)"]
    rate = st["approval_rate"]
    out.append(f"decided: {dec['approved_as_written']} approved as written, "
               f"{dec['approved_after_edit']} approved after an edit, {dec['rejected']} rejected"
               + (f" (approval rate {rate:.0%})" if rate is not None else ""))
    e = st["edit_size"]
    if e["count"]:
        out.append(f"edit size: p50 {e['p50_chars']:.0f}, p90 {e['p90_chars']:.0f}, max "
                   f"{e['max_chars']} characters changed ({e['count']} edited)")
    if st["reject_reasons"]:
        out.append("reject reasons: " + "; ".join(f"{r['reason']} ({r['count']})"
                                                   for r in st["reject_reasons"]))
    for g in GROUPS:
        rows = st[f"by_{g}"]
        if not rows:
            continue
        out.append(f"by {g.replace('_', ' ')}:")
        for r in rows[:20]:
            rate = r["approval_rate"]
            out.append(f"  {r['name']}: {r['pending']} pending, {r['approved_as_written']} as "
                       f"written, {r['approved_after_edit']} after edit, {r['rejected']} rejected"
                       + (f", approval {rate:.0%}" if rate is not None else ""))
    if st["damaged"]:
        out.append(f"damaged draft files (not counted): {st['damaged']}")
    return out
