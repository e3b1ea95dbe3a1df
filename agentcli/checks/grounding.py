"""Grounding checks: what the model said (the answer and every draft of a ticket) against what the
tools returned in that ticket. Pure functions over plain data, standard library only.

    check_ticket(answer=..., drafts=[{"id", "text", "order_code"}],
                 tool_results=[{"name", "input", "result", "is_error", "outcome"}],
                 questions=[...], drafts_failed=0) -> list[Finding]

Finding kinds (severity):

- ``unverified_order`` (error): an order code stated that no question names and no lookup tried;
- ``order_not_found`` (error): a status, date, license state or item stated about an order whose
  lookup found no such order;
- ``unsupported_claim`` (error): such a fact stated about an order never successfully looked up
  (no lookup, or every lookup of it failed);
- ``status_mismatch`` (error): a status the lookup contradicts (incl. "could not find" an order
  the lookup found); a past stage is not a contradiction ("has shipped" for a delivered order);
- ``date_mismatch`` (error): a delivery or order date other than ``estimated_delivery`` /
  ``placed_on`` (or a delivery date where none is on file);
- ``license_mismatch`` (error): "license issued" / "not issued" against ``license_issued``;
- ``line_items_mismatch`` (error): a SKU or a quantity the order's line items contradict;
- ``unconfirmed_date`` (warning): a date or time frame ("within 3 days") no tool returned and no
  question stated;
- ``unknown_draft_id`` (error): a draft id named that was never saved in the ticket, or the
  answer saying a draft was saved when none was;
- ``forbidden_promise`` (error): a promise of a refund, credit, discount, voucher or compensation
  (stating the refund of a ``refunded`` order is a fact, not a promise);
- ``draft_after_failed_lookups``: a draft saved though every lookup before it failed: error when
  one failed on our side (timeout, database), warning when all were invalid input;
- ``false_not_found`` (error): saying an order could not be found when no lookup of it answered
  "not found" (e.g. every lookup failed on invalid input);
- ``draft_not_saved`` (error): a draft could not be saved (``drafts_failed``, or a failed
  ``draft_reply`` with no later successful one).

False alarms are kept rare: negated, conditional, reported and modal sentences ("we cannot
promise a refund", "once it has shipped", "you say it was delivered", "it may arrive") and
questions are not claims; codes quoted from a question are not claims; text that quotes a tool
result verbatim (or in quotes) is not a claim. Work is bounded: the first ``MAX_TEXT`` characters
of each text, linear regular expressions, at most ``MAX_FINDINGS`` findings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..vocab import ANSWERED as OK_OUTCOMES
from ..vocab import OUR_SIDE, Outcome, records
from .claims import (
    COMPAT,
    DRAFT_CLAIM_RE,
    DRAFT_ID_RE,
    EXAMPLE_RE,
    FRAME_RE,
    FUTURE_RE,
    HEDGE_CLAIM,
    HEDGE_DRAFT,
    HEDGE_NOTFOUND,
    HEDGE_PROMISE_POST,
    HEDGE_PROMISE_PRE,
    ITEM_CTX_RE,
    NOTFOUND_EXCEPT,
    NOTFOUND_RE,
    PROMISE_RES,
    QTY_BEFORE_RE,
    SKU_RE,
    WORDNUM,
    blank_quotes,
    clause_of,
    clip_text,
    codes_in,
    date_context,
    date_in,
    find_dates,
    hedged,
    iso_date,
    license_claims,
    one_line,
    sentences,
    status_claims,
)

MAX_FINDINGS = 50
MAX_TOOL_STRINGS = 200
ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: str  # "error" | "warning"
    message: str   # one line a staffer reads
    evidence: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        ev = {k: v for k, v in self.evidence.items() if k not in ("kind", "severity", "message")}
        return {"kind": self.kind, "severity": self.severity, "message": self.message, **ev}


# ----------------------------------------------------------------------------- the ticket
def _strings(obj: Any, out: list[str], depth: int = 0) -> None:
    if len(out) >= MAX_TOOL_STRINGS or depth > 20:
        return
    if isinstance(obj, str):
        out.append(obj[:2000])
    elif isinstance(obj, dict):
        for v in list(obj.values())[:100]:
            _strings(v, out, depth + 1)
    elif isinstance(obj, list):
        for v in obj[:100]:
            _strings(v, out, depth + 1)


def _brief(r: Any) -> Any:
    if not isinstance(r, dict):
        return one_line(r, 300)
    keep = ("found", "order_code", "status", "placed_on", "estimated_delivery", "license_issued", "draft_id")
    out = {k: (r[k] if isinstance(r[k], (bool, int, float)) or r[k] is None else one_line(r[k], 80))
           for k in keep if k in r}
    if isinstance(r.get("line_items"), list):
        out["line_items"] = [{k: one_line(li.get(k), 80) for k in ("sku", "name", "quantity")}
                             for li in r["line_items"][:20] if isinstance(li, dict)]
    return out


class _Ticket:
    def __init__(self, drafts: list, tool_results: list, questions: list) -> None:
        self.questions = [clip_text(q) for q in (questions if isinstance(questions, list) else [])[:100]]
        self.q_codes = {c for q in self.questions for _, c, _ in codes_in(q)}
        self.found: dict[str, dict] = {}      # code -> latest found result
        self.missing: dict[str, Any] = {}     # code -> latest not-found result
        self.tried: set[str] = set()
        self.lookups: list[tuple[int, str]] = []  # (index, outcome)
        self.saved: set[str] = set()
        self.draft_at: dict[str, int] = {}
        self.draft_errors: list[int] = []
        strings: list[str] = list(self.questions)
        for i, tr in enumerate(records(tool_results)[:1000]):
            res, outcome = tr.result, tr.outcome
            _strings(res, strings)
            if tr.is_lookup:
                code = tr.order_code or ""
                self.lookups.append((i, outcome))
                self.tried.add(code)
                if outcome == Outcome.NOT_FOUND:
                    self.missing[code] = res
                    self.found.pop(code, None)
                elif tr.order is not None:
                    self.found[code] = res
                    self.missing.pop(code, None)
            elif tr.is_draft:
                if tr.draft_id is not None:
                    self.saved.add(tr.draft_id.lower())
                    self.draft_at.setdefault(tr.draft_id.lower(), i)
                    self.draft_errors.clear()
                elif outcome in OUR_SIDE:
                    self.draft_errors.append(i)
        self.drafts = []
        for d in (drafts if isinstance(drafts, list) else [])[:100]:
            if not isinstance(d, dict):  # a LiveDraft
                d = {"id": getattr(d, "id", None), "text": getattr(d, "text", None)}
            if isinstance(d.get("id"), str):
                self.saved.add(d["id"].lower())
                self.drafts.append((d["id"], clip_text(d.get("text"))))
        self.strings = strings[:MAX_TOOL_STRINGS]
        self.tool_dates = {c for s in self.strings for _, _, cs in find_dates(s) for c in cs if c[0] is not None}
        self.q_frames = [m.group(0).lower() for q in self.questions for m in FRAME_RE.finditer(q)]

    def resolve(self, code: str | None) -> tuple[str, list]:
        """("found", [results]) | ("missing", [result]) | ("unsupported", []) | ("skip", [])."""
        if code is None:
            if self.found:
                return "found", list(self.found.values())
            if self.missing:
                return "missing", list(self.missing.values())[:1]
            return "unsupported", []
        if code in self.found:
            return "found", [self.found[code]]
        if code in self.missing:
            return "missing", [self.missing[code]]
        return ("unsupported", []) if code in self.q_codes or code in self.tried else ("skip", [])


# ----------------------------------------------------------------------------- the checks
class _Run:
    def __init__(self, t: _Ticket) -> None:
        self.t, self.out, self.seen = t, [], set()

    def add(self, kind: str, severity: str, message: str, *, sentence: str = "", where: str = "",
            code: str | None = None, result: Any = None) -> None:
        key = (kind, where, code, sentence[:200])
        if key in self.seen or len(self.out) >= MAX_FINDINGS:
            return
        self.seen.add(key)
        ev: dict[str, Any] = {"where": one_line(where, 40)}
        if sentence:
            ev["sentence"] = one_line(sentence.strip())
        if code:
            ev["order_code"] = code
        if result is not None:
            ev["tool_result"] = _brief(result)
        self.out.append(Finding(kind, severity, one_line(message, 240), ev))

    def text(self, where: str, label: str, orig: str, is_answer: bool) -> None:
        t = self.t
        work = blank_quotes(orig, t.strings)
        for a, b in sentences(work)[:2000]:
            sent, shown = work[a:b], orig[a:b]
            codes = [(p, c) for p, c, raw in codes_in(sent) if raw.isupper() or raw.isdigit()
                     or c in t.q_codes or c in t.tried]
            example = EXAMPLE_RE.search(sent) is not None
            for _, c in codes:
                if not example and c not in t.q_codes and c not in t.tried:
                    self.add("unverified_order", ERROR, f"{label} names order {c}, which no question mentions "
                             "and no lookup checked", sentence=shown, where=where, code=c)
            if sent.rstrip(" \"')\u201d").endswith("?"):
                continue
            ev = dict(sentence=shown, where=where)

            def owner(p: int) -> str | None:
                before = [c for q, c in codes if q <= p]
                after = [c for q, c in codes if q > p]
                return before[-1] if before else (after[0] if after else None)

            def judge(code: str | None, what: str) -> list | None:
                state, results = t.resolve(code)
                name = code or "the order"
                if state == "missing":
                    self.add("order_not_found", ERROR, f"{label} states {what} of {name}, but the lookup "
                             "found no such order", code=code, result=results[0], **ev)
                elif state == "unsupported":
                    self.add("unsupported_claim", ERROR, f"{label} states {what} of {name}, which no "
                             "successful lookup returned", code=code, **ev)
                return results if state == "found" else None

            groups: dict[str | None, set] = {}
            for p, st in status_claims(sent):
                groups.setdefault(owner(p), set()).add(st)
            for code, sts in groups.items():
                rs = judge(code, "a status")
                stat = [r.get("status") if isinstance(r.get("status"), str) else "" for r in rs or []]
                if rs and not any(a in COMPAT.get(s, ()) or a not in COMPAT for a in stat for s in sts):
                    self.add("status_mismatch", ERROR, f"{label} says {code or 'the order'} is "
                             f"{'/'.join(sorted(sts))}, but the lookup says {one_line(rs[0].get('status'), 30)}",
                             code=code, result=rs[0], **ev)
            lic: dict[str | None, set] = {}
            for p, v in license_claims(sent):
                lic.setdefault(owner(p), set()).add(v)
            for code, vs in lic.items():
                rs = judge(code, "the license state")
                flags = [bool(r["license_issued"]) for r in rs or [] if isinstance(r.get("license_issued"), (bool, int))]
                if flags and not any(f in vs for f in flags):
                    said = "issued" if True in vs else "not issued"
                    self.add("license_mismatch", ERROR, f"{label} says the license of {code or 'the order'} is "
                             f"{said}, but the lookup says license_issued={flags[0]}", code=code, result=rs[0], **ev)
            for m in NOTFOUND_RE.finditer(sent):
                if NOTFOUND_EXCEPT.search(sent[m.end():m.end() + 60]) or \
                        hedged(HEDGE_NOTFOUND, clause_of(sent, m.start(), m.end())):
                    continue
                code = owner(m.start())
                if code in t.missing or (code is None and t.missing):
                    continue
                if code in t.found or (code is None and len(t.found) == 1):
                    r = t.found.get(code) if code else next(iter(t.found.values()))
                    self.add("status_mismatch", ERROR, f"{label} says {code or 'the order'} could not be found, "
                             "but the lookup found it", code=code, result=r, **ev)
                elif code is None and t.found:
                    continue
                else:
                    fails = sorted({o for _, o in t.lookups if o not in OK_OUTCOMES})
                    why = f"every lookup failed ({', '.join(fails)})" if fails else "no lookup was made"
                    self.add("false_not_found", ERROR, f"{label} says {code or 'an order'} could not be found, "
                             f"but no lookup answered not found: {why}", code=code, **ev)
            self.dates(where, label, sent, owner, judge, ev)
            self.items(where, label, shown, owner, ev)
            self.promises(where, label, sent, owner, ev)
            if is_answer:
                for m in DRAFT_ID_RE.finditer(sent):
                    tok = m.group(0).lower()
                    if not any(s.startswith(tok) for s in t.saved):
                        self.add("unknown_draft_id", ERROR, f"the answer names draft {tok}, which was not saved "
                                 "in this ticket", **ev)
                m = DRAFT_CLAIM_RE.search(sent)
                if m and not t.saved and not hedged(HEDGE_DRAFT, sent):
                    self.add("unknown_draft_id", ERROR, "the answer says a draft was saved, but none was", **ev)

    def dates(self, where: str, label: str, sent: str, owner: Any, judge: Any, ev: dict) -> None:
        t = self.t
        q_dates = {c for q in t.questions for _, _, cs in find_dates(q) for c in cs}
        for a, b, cands in find_dates(sent):
            ctx = date_context(sent, a, b)
            if ctx and not hedged(HEDGE_CLAIM, clause_of(sent, a, b)):
                code = owner(a)
                rs = judge(code, "a date")
                key = "estimated_delivery" if ctx == "delivery" else "placed_on"
                if rs:
                    want = {iso_date(r.get(key)) for r in rs} - {None}
                    if not date_in(cands, want):
                        on_file = ", ".join(sorted(f"{y:04d}-{m:02d}-{d:02d}" for y, m, d in want)) or "none"
                        self.add("date_mismatch", ERROR, f"{label} gives {sent[a:b].strip()} as the {key} of "
                                 f"{code or 'the order'}, but the lookup says {on_file}", code=code, result=rs[0], **ev)
                    continue
            if not date_in(cands, t.tool_dates | {c for c in q_dates if c[0] is not None}) and \
                    not any(c in q_dates for c in cands):
                self.add("unconfirmed_date", WARNING, f"{label} states the date {one_line(sent[a:b].strip(), 40)}, "
                         "which no tool returned", **ev)
        for m in FRAME_RE.finditer(sent):
            if m.group(0).lower() not in t.q_frames:
                self.add("unconfirmed_date", WARNING, f"{label} promises a time frame no tool returned "
                         f"({one_line(m.group(0), 40)})", **ev)

    def items(self, where: str, label: str, shown: str, owner: Any, ev: dict) -> None:
        t = self.t
        all_skus = {str(li.get("sku")) for r in t.found.values()
                    for li in (r.get("line_items") if isinstance(r.get("line_items"), list) else []) if isinstance(li, dict)}
        if not all_skus:
            return
        ctx = ITEM_CTX_RE.search(shown) is not None
        for m in SKU_RE.finditer(shown):
            code = owner(m.start())
            r = t.found.get(code) if code else (next(iter(t.found.values())) if len(t.found) == 1 else None)
            tok = m.group(0)
            if ctx and r and isinstance(r.get("line_items"), list) and tok not in all_skus and not tok.startswith("ORD-") \
                    and not any(tok in q for q in t.questions):
                self.add("line_items_mismatch", ERROR, f"{label} lists {tok}, which is not among the line items "
                         f"of {code or 'the order'}", code=code, result=r, **ev)
        for code, r in t.found.items():
            for li in (r.get("line_items") if isinstance(r.get("line_items"), list) else [])[:50]:
                if not isinstance(li, dict) or not isinstance(li.get("quantity"), int):
                    continue
                for label in {str(li.get("name") or ""), str(li.get("sku") or "")}:
                    if len(label) < 4:
                        continue
                    for hit in re.finditer(re.escape(label), shown, re.I):
                        if owner(hit.start()) not in (code, None) or (owner(hit.start()) is None and len(t.found) > 1):
                            continue
                        q = QTY_BEFORE_RE.search(shown[max(0, hit.start() - 24):hit.start()])
                        if q:
                            n = WORDNUM.get(q.group(1).lower()) if not q.group(1).isdigit() else int(q.group(1))
                            if n is not None and n != li["quantity"]:
                                self.add("line_items_mismatch", ERROR, f"{label} says {n} of {one_line(label, 60)} "
                                         f"in {code}, but the order has {li['quantity']}", code=code, result=r, **ev)

    def promises(self, where: str, label: str, sent: str, owner: Any, ev: dict) -> None:
        for rx in PROMISE_RES:
            for m in rx.finditer(sent):
                clause = clause_of(sent, m.start(), m.end())
                pre = clause[:max(0, clause.find(m.group(0)))] if m.group(0) in clause else ""
                post = clause[clause.find(m.group(0)) + len(m.group(0)):] if m.group(0) in clause else ""
                if hedged(HEDGE_PROMISE_PRE, pre) or hedged(HEDGE_PROMISE_POST, post):
                    continue
                if not FUTURE_RE.search(m.group(0)):
                    code = owner(m.start())
                    rs = [self.t.found[code]] if code in self.t.found else list(self.t.found.values()) if code is None else []
                    if any(r.get("status") == "refunded" for r in rs):
                        continue  # the refund of a refunded order is a fact
                self.add("forbidden_promise", ERROR, f"{label} promises {one_line(m.group(0).strip(), 60)!r}: "
                         "refunds, credits and discounts are for a person to decide", **ev)
                return


def check_ticket(*, answer: str, drafts: list[dict], tool_results: list[dict], questions: list[str],
                 drafts_failed: int = 0) -> list[Finding]:
    """The grounding findings of one ticket (see the module docstring for the kinds)."""
    t = _Ticket(drafts, tool_results, questions)
    run = _Run(t)
    failed = len(t.draft_errors) + (drafts_failed if isinstance(drafts_failed, int) and drafts_failed > 0 else 0)
    if failed:
        run.add("draft_not_saved", ERROR, f"{failed} draft(s) could not be saved: the reply is not in the review queue")
    for did, _ in t.drafts:
        at = t.draft_at.get(did.lower(), len(tool_results) if isinstance(tool_results, list) else 0)
        before = [o for i, o in t.lookups if i < at]
        if before and not any(o in OK_OUTCOMES for o in before):
            ours = [o for o in before if o in OUR_SIDE]
            run.add("draft_after_failed_lookups", ERROR if ours else WARNING,
                    f"draft {one_line(did, 40)} was saved though every lookup before it failed "
                    f"({', '.join(sorted(set(before)))})", where=did)
    run.text("answer", "the answer", clip_text(answer), True)
    for did, txt in t.drafts:
        run.text(did, f"draft {one_line(did, 40)}", txt, False)
    return run.out
