"""Grounding checks: what the model said (the answer and every draft of a ticket) against what the
tools returned in that ticket. Pure functions over plain data, standard library only.

    check_ticket(answer=..., drafts=[{"id", "text", "order_code"}],
                 tool_results=[{"name", "input", "result", "is_error", "outcome"}],
                 questions=[...], drafts_failed=0, model_claims=None, budget_s=None)
        -> list[Finding]

Claims, then verification: each text is read into structured claims (``claims.Claim``) by the
pattern floor (``claims.extract``, always) and, when the caller ran it, the model layer
(``model_claims``: the claims ``checks.model_layer`` read by meaning, per text); both go to the
one verifier here, which checks each claim against the ticket's tool results. Every text is
folded first (``normalize.fold``: NFKC, invisibles, lookalike letters, dashes). Text copied from
a tool result or a question is still the text's claim: a promise is flagged whoever wrote it
first, a status quoted from ``status_detail`` is checked against ``status``.

Finding kinds (severity):

- ``unverified_order`` (error): an order code stated that no question names and no lookup tried
  (in any case, "for example" too; only our own format examples are exempt);
- ``order_not_found`` (error): a status, date, license state or item stated about an order whose
  lookup found no such order;
- ``unsupported_claim`` (error): such a fact stated about an order never successfully looked up
  (no lookup, or every lookup of it failed);
- ``status_mismatch`` (error): a status the lookup contradicts (incl. "could not find" an order
  the lookup found); a past stage is not a contradiction ("has shipped" for a delivered order);
- ``date_mismatch`` (error): a delivery or order date other than ``estimated_delivery`` /
  ``placed_on`` (or a delivery date where none is on file);
- ``license_mismatch`` (error): "license issued" / "not issued" against ``license_issued``;
- ``line_items_mismatch`` (error): a SKU, a product or a quantity the order's line items
  contradict;
- ``price_mismatch`` (error): an amount of money no line item, no order total and no tool
  result holds;
- ``unconfirmed_date`` (warning): a date or time frame ("within 3 days") no tool returned and no
  question stated;
- ``unknown_draft_id`` (error): a draft id named that was never saved in the ticket, or the
  answer saying a draft was saved when none was;
- ``claims_sent`` (error): the answer saying a reply was sent to the customer ("I've sent the
  customer a reply", "Ich habe die Antwort an den Kunden geschickt"): nothing is ever sent;
- ``forbidden_promise`` (error): a promise of a refund, credit, discount, replacement or
  compensation (stating the refund of a ``refunded`` order is a fact, not a promise);
- ``quoted_promise`` (warning): the answer (to the staffer, not the customer) quotes a tool
  result that promises one;
- ``draft_after_failed_lookups``: a draft saved though every lookup before it failed: error when
  one failed on our side (timeout, database), warning when all were invalid input;
- ``false_not_found`` (error): saying an order could not be found when no lookup of it answered
  "not found" (e.g. every lookup failed on invalid input);
- ``draft_not_saved`` (error): a draft could not be saved (``drafts_failed``, or a failed
  ``draft_reply`` with no later successful one);
- ``not_fully_checked`` (warning): a text longer than the checks read, or the time budget ran
  out, or the model layer could not run: what was not read is not "ok" by default.

False alarms are kept rare: negated, conditional, reported and modal sentences ("we cannot
promise a refund", "once it has shipped", "you say it was delivered", "it may arrive", "I'll
make sure the payment is matched") and questions are not claims; codes quoted from a question
are not claims. Work is bounded: the first ``MAX_TEXT`` characters of each text, linear regular
expressions over sentence pieces of at most ``claims.MAX_PIECE`` characters, a deadline looked at
between pieces, at most ``MAX_FINDINGS`` findings.
"""

from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from ..vocab import ANSWERED as OK_OUTCOMES
from ..vocab import NOT_FULLY_CHECKED, OUR_SIDE, Outcome, records
from .claims import (
    COMPAT,
    CONTRADICTS,
    FORMAT_EXAMPLES,
    FRAME_RE,
    FUTURE_RE,
    GROUP,
    MAX_PIECES,
    MAX_TEXT,
    MONEY_RE,
    NOT,
    RECEIVED,
    TOTAL,
    Claim,
    Known,
    clip_text,
    codes_in,
    date_in,
    extract,
    find_dates,
    iso_date,
    label_group,
    model_claim_not_so,
    money_cents,
    one_line,
    sentences,
    shown_date,
)
from .normalize import fold, key

MAX_FINDINGS = 50
MAX_MODEL_CLAIMS = 200
MAX_TOOL_STRINGS = 200
MAX_TOOL_CHARS = 2000
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

_DETAIL_RECEIVED_RE = re.compile(r"(?<!not\s)(?<!no\s)\b(?:payment\s+)?received\b", re.I)


def _received_on_file(r: dict) -> bool:
    """Does the lookup say the payment was received ("payment received, not yet matched to the
    order")? Then "we have received your payment" is true of a pending_payment order."""
    d = r.get("status_detail")
    return isinstance(d, str) and _DETAIL_RECEIVED_RE.search(d) is not None


def _statuses(sts: set) -> str:
    return "/".join(sorted("paid (the payment received)" if s == RECEIVED else s for s in sts))


def _strings(obj: Any, out: list[str], depth: int = 0) -> None:
    if len(out) >= MAX_TOOL_STRINGS or depth > 20:
        return
    if isinstance(obj, str):
        out.append(obj[:MAX_TOOL_CHARS])
    elif isinstance(obj, dict):
        for v in list(obj.values())[:100]:
            _strings(v, out, depth + 1)
    elif isinstance(obj, list):
        for v in obj[:100]:
            _strings(v, out, depth + 1)


@functools.lru_cache(maxsize=2048)
def _read(s: str) -> tuple[str, str, frozenset, tuple[int, ...]]:
    """What the checks take from one string of the tool results or the questions: (its folded
    form, its comparison key, the dates it names, the amounts in cents it names). A pure
    function of the string (each at most ``MAX_TOOL_CHARS``), kept for the next check: a ticket
    is checked again after every question, over every tool result it has so far."""
    f = fold(s)
    dates = frozenset(c for _, _, cs in find_dates(f) for c in cs)
    cents = []
    for m in MONEY_RE.finditer(f):
        c = money_cents(m.group("a1") or m.group("a2"), m.group("cur1") or m.group("cur2"))
        if c is not None:
            cents.append(c)
    return f, key(f), dates, tuple(cents)


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
        self.questions = [fold(clip_text(q)) for q in (questions if isinstance(questions, list) else [])[:100]]
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
                self.drafts.append((d["id"], d["text"] if isinstance(d.get("text"), str) else ""))
        self.reads = [_read(s) for s in strings[:MAX_TOOL_STRINGS]]
        self.strings = [r[0] for r in self.reads]
        self.tool_dates = {c for r in self.reads for c in r[2] if c[0] is not None}
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


# ----------------------------------------------------------------------------- the verifier
def _items(r: dict) -> list[dict]:
    li = r.get("line_items")
    return [x for x in li[:50] if isinstance(x, dict)] if isinstance(li, list) else []


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class _Run:
    def __init__(self, t: _Ticket) -> None:
        self.t, self.out, self.seen = t, [], set()
        self.all_skus = {str(li.get("sku")) for r in t.found.values() for li in _items(r)}
        self.labels = tuple(sorted({str(x) for r in t.found.values() for li in _items(r)
                                    for x in (li.get("name"), li.get("sku")) if isinstance(x, str) and len(x) >= 4}))[:100]
        self.quote_keys = tuple(r[1] for r in t.reads if len(r[1]) >= 8)
        self.q_dates = {c for q in t.questions for c in _read(q)[2]}
        self.amounts = self._amounts()

    def _amounts(self) -> set[int]:
        out: set[int] = set()
        every = 0  # the orders of the ticket together: "Total: 65.00 EUR for both orders"
        for r in self.t.found.values():
            total = 0
            for li in _items(r):
                p, q = _int(li.get("unit_price_cents")), _int(li.get("quantity"))
                if p is not None:
                    out.add(p)
                    total += p * (q if q is not None else 1)
                    if q is not None:
                        out.add(p * q)
            for k in ("total_cents", "amount_cents", "price_cents"):
                if _int(r.get(k)) is not None:
                    out.add(r[k])
            if total:
                out.add(total)
                every += total
        if len(self.t.found) > 1 and every:
            out.add(every)
        for r in self.t.reads:
            out.update(r[3])
        return out

    def add(self, kind: str, severity: str, message: str, *, sentence: str = "", where: str = "",
            code: str | None = None, result: Any = None) -> None:
        key_ = (kind, where, code, sentence[:200])
        if key_ in self.seen or len(self.out) >= MAX_FINDINGS:
            return
        self.seen.add(key_)
        ev: dict[str, Any] = {"where": one_line(where, 40)}
        if sentence:
            ev["sentence"] = one_line(sentence.strip())
        if code:
            ev["order_code"] = code
        if result is not None:
            ev["tool_result"] = _brief(result)
        self.out.append(Finding(kind, severity, one_line(message, 240), ev))

    # -- one text ----------------------------------------------------------------------
    def text(self, where: str, label: str, orig: str, is_answer: bool, model: list[Claim] | None,
             deadline: float | None) -> bool:
        """Check one text; False when it was not read whole (length or deadline)."""
        text = fold(orig, limit=MAX_TEXT + 1)  # what is past MAX_TEXT is not read anyway
        known = Known(item_labels=self.labels, quote_keys=self.quote_keys, deadline=deadline)
        claims, complete = extract(text, known)
        complete = complete and len(orig) <= MAX_TEXT
        if model:
            seen = {(c.kind, c.order, _vkey(c.value)) for c in claims}
            pieces = sentences(text[:MAX_TEXT]) if any(getattr(c, "kind", None) in GUARDED
                                                       for c in model[:MAX_MODEL_CLAIMS]) else []
            claims += [replace(c, quoted=any(key(c.sentence) in s for s in self.quote_keys))
                       for c in model[:MAX_MODEL_CLAIMS] if isinstance(c, Claim)
                       and (c.kind, c.order, _vkey(c.value)) not in seen and not _not_so(text, pieces, c)
                       and not _read_finer(c, claims)]
        self.verify(where, label, claims, is_answer)
        if not complete:
            why = (f"the checks read {MAX_TEXT}" if len(orig) > MAX_TEXT else
                   f"more than the {MAX_PIECES} sentence pieces the checks read" if len(sentences(text)) >= MAX_PIECES
                   else "the checks' time budget ran out")
            self.add(NOT_FULLY_CHECKED, WARNING, f"{label} was not fully checked ({len(orig)} characters; {why}): "
                     "a person must read the rest", where=where)
        return complete

    def verify(self, where: str, label: str, claims: Iterable[Claim], is_answer: bool) -> None:
        t = self.t
        status: dict[tuple[str, str | None], tuple[set, Claim]] = {}
        lic: dict[tuple[str, str | None], tuple[set, Claim]] = {}
        for c in claims:
            ev = dict(sentence=c.sentence, where=where)
            if c.kind == "order":
                code = c.value
                if code in t.q_codes or code in t.tried:
                    continue
                if c.example and (code in FORMAT_EXAMPLES or code in self._tool_codes()):
                    continue
                self.add("unverified_order", ERROR, f"{label} names order {code}, which no question mentions "
                         "and no lookup checked", code=code, **ev)
            elif c.kind == "status" and isinstance(c.value, str) and c.value.startswith(NOT):
                self.negated_status(label, c, ev)
            elif c.kind == "status":
                status.setdefault((c.sentence, None if c.every else c.order), (set(), c))[0].add(c.value)
            elif c.kind == "license":
                lic.setdefault((c.sentence, None if c.every else c.order), (set(), c))[0].add(bool(c.value))
            elif c.kind == "not_found":
                self.not_found(label, c, ev)
            elif c.kind == "date":
                self.date(label, c, ev)
            elif c.kind == "frame":
                if c.value not in t.q_frames:
                    self.add("unconfirmed_date", WARNING, f"{label} promises a time frame no tool returned "
                             f"({one_line(c.value, 40)})", **ev)
            elif c.kind == "promise":
                self.promise(label, c, ev, is_answer)
            elif c.kind in ("item", "quantity", "price"):
                self.item(label, c, ev)
            elif c.kind == "item_count":
                self.item_count(label, c, ev)
            elif c.kind == "product":
                code = c.order
                r = t.found.get(code) if code else (next(iter(t.found.values())) if len(t.found) == 1 else None)
                if r is not None:
                    self._product(label, c, r, ev)
            elif c.kind == "sent" and is_answer and not c.quoted:
                self.add("claims_sent", ERROR, "the answer says a reply was sent to the customer, but "
                         "nothing is ever sent: a draft waits for a person's review", **ev)
            elif c.kind == "draft" and is_answer:
                tok = str(c.value).lower()
                if tok and not any(s.startswith(tok) for s in t.saved):
                    self.add("unknown_draft_id", ERROR, f"the answer names draft {one_line(tok, 20)}, which was "
                             "not saved in this ticket", **ev)
                elif not tok and not t.saved:
                    self.add("unknown_draft_id", ERROR, "the answer says a reply was drafted or saved, but no "
                             "draft was saved", **ev)
        def fits(r: dict, sts: set) -> bool:
            st = r.get("status")
            a = st if isinstance(st, str) else ""
            sts = sts - {RECEIVED} or sts  # "we received your payment and your order is complete": the stronger claim
            return any(a in COMPAT.get(s, ()) or a not in COMPAT or (s == RECEIVED and _received_on_file(r))
                       for s in sts)

        for (sentence, code), (sts, c) in status.items():
            ev = dict(sentence=sentence, where=where)
            rs = self.judge(label, code, "a status", ev)
            if not rs:
                continue
            if c.every:  # "both of your orders have shipped": each one must fit
                bad = [r for r in self._every(c, rs) if not fits(r, sts)]
                if bad:
                    self.add("status_mismatch", ERROR, f"{label} says every order is {_statuses(sts)}, but "
                             f"the lookup says {one_line(bad[0].get('order_code'), 20)} is "
                             f"{one_line(bad[0].get('status'), 30)}", code=bad[0].get("order_code"), result=bad[0], **ev)
            elif not any(fits(r, sts) for r in rs):
                self.add("status_mismatch", ERROR, f"{label} says {code or 'the order'} is "
                         f"{_statuses(sts)}, but the lookup says {one_line(rs[0].get('status'), 30)}",
                         code=code, result=rs[0], **ev)
        for (sentence, code), (vs, c) in lic.items():
            ev = dict(sentence=sentence, where=where)
            rs = self.judge(label, code, "the license state", ev)
            known = [r for r in (self._every(c, rs) if c.every and rs else rs or [])
                     if isinstance(r.get("license_issued"), (bool, int))]
            bad = [r for r in known if bool(r["license_issued"]) not in vs]
            if known and (bad if c.every else len(bad) == len(known)):
                said = "issued" if True in vs else "not issued"
                whose = "every order" if c.every else (code or "the order")
                self.add("license_mismatch", ERROR, f"{label} says the license of {whose} is {said}, but the "
                         f"lookup says license_issued={bool(bad[0]['license_issued'])}"
                         + (f" for {one_line(bad[0].get('order_code'), 20)}" if c.every else ""),
                         code=bad[0].get("order_code") if c.every else code, result=bad[0], **ev)

    def _every(self, c: Claim, rs: list) -> list:
        """The orders a claim about every order is about: those named in its sentence, when it
        names two or more ("both GH56JK78MN and ORD-20261234 have shipped"), else every order found."""
        named = [self.t.found[x] for _, x, _ in codes_in(c.sentence) if x in self.t.found]
        return named if len(named) >= 2 else rs

    def negated_status(self, label: str, c: Claim, ev: dict) -> None:
        """"has not shipped yet" said of an order the lookup says has shipped (or delivered)."""
        st = c.value[len(NOT):]
        rs = self.judge(label, None if c.every else c.order, "a status", ev)

        def contradicts(r: dict) -> bool:  # "your payment has not come": also false where it was received
            x = r.get("status")
            return isinstance(x, str) and x in CONTRADICTS.get(st, ()) or (st == RECEIVED and _received_on_file(r))

        if rs and c.every:  # "neither of your orders has shipped": false if any one has
            rs = [r for r in self._every(c, rs) if contradicts(r)]
        if rs and all(contradicts(r) for r in rs):
            if st == RECEIVED:
                self.add("status_mismatch", ERROR, f"{label} says the payment of {c.order or 'the order'} has not "
                         f"come, but the lookup says {one_line(rs[0].get('status'), 30)} "
                         f"({one_line(rs[0].get('status_detail'), 60)})", code=c.order, result=rs[0], **ev)
                return
            code = rs[0].get("order_code") if c.every else c.order
            whose = "no order" if c.every else f"{c.order or 'the order'} is not"
            self.add("status_mismatch", ERROR, f"{label} says {whose} {st.replace('_', ' ')}, but the lookup "
                     f"says {one_line(code, 20) + ' is ' if c.every else ''}{one_line(rs[0].get('status'), 30)}",
                     code=code, result=rs[0], **ev)

    _codes_cache: set | None = None

    def _tool_codes(self) -> set:
        if self._codes_cache is None:
            self._codes_cache = {c for s in self.t.strings for _, c, _ in codes_in(s)}
        return self._codes_cache

    def judge(self, label: str, code: str | None, what: str, ev: dict) -> list | None:
        state, results = self.t.resolve(code)
        name = code or "the order"
        if state == "missing":
            self.add("order_not_found", ERROR, f"{label} states {what} of {name}, but the lookup "
                     "found no such order", code=code, result=results[0], **ev)
        elif state == "unsupported":
            self.add("unsupported_claim", ERROR, f"{label} states {what} of {name}, which no "
                     "successful lookup returned", code=code, **ev)
        return results if state == "found" else None

    def not_found(self, label: str, c: Claim, ev: dict) -> None:
        t, code = self.t, c.order
        if code in t.missing or (code is None and t.missing):
            return
        if code in t.found or (code is None and len(t.found) == 1):
            r = t.found.get(code) if code else next(iter(t.found.values()))
            self.add("status_mismatch", ERROR, f"{label} says {code or 'the order'} could not be found, "
                     "but the lookup found it", code=code, result=r, **ev)
        elif code is None and t.found:
            return
        else:
            fails = sorted({o for _, o in t.lookups if o not in OK_OUTCOMES})
            why = f"every lookup failed ({', '.join(fails)})" if fails else "no lookup was made"
            self.add("false_not_found", ERROR, f"{label} says {code or 'an order'} could not be found, "
                     f"but no lookup answered not found: {why}", code=code, **ev)

    def date(self, label: str, c: Claim, ev: dict) -> None:
        t, cands = self.t, c.value
        if not isinstance(cands, frozenset) or not cands:
            return
        shown = "/".join(sorted(shown_date(x) for x in cands))
        if c.what in ("placed", "delivery") and not c.hedged:
            rs = self.judge(label, c.order, "a date", ev)
            field_ = "estimated_delivery" if c.what == "delivery" else "placed_on"
            if rs:
                want = {iso_date(r.get(field_)) for r in rs} - {None}
                if not date_in(cands, want):
                    on_file = ", ".join(sorted(f"{y:04d}-{m:02d}-{d:02d}" for y, m, d in want)) or "none"
                    self.add("date_mismatch", ERROR, f"{label} gives {shown} as the {field_} of "
                             f"{c.order or 'the order'}, but the lookup says {on_file}", code=c.order,
                             result=rs[0], **ev)
                return
        known = t.tool_dates | {x for x in self.q_dates if x[0] is not None}
        if not date_in(cands, known) and not any(x in self.q_dates for x in cands):
            self.add("unconfirmed_date", WARNING, f"{label} states the date {shown}, which no tool returned", **ev)

    def promise(self, label: str, c: Claim, ev: dict, is_answer: bool) -> None:
        said = one_line(str(c.value).strip(), 60)
        if not FUTURE_RE.search(str(c.value)):
            code = c.order
            rs = [self.t.found[code]] if code in self.t.found else list(self.t.found.values()) if code is None else []
            if rs and all(r.get("status") == "refunded" for r in rs):
                return  # the refund of a refunded order is a fact
        if c.quoted and is_answer:
            self.add("quoted_promise", WARNING, f"{label} quotes a tool result or the question that promises "
                     f"{said!r}: it must not reach the customer", **ev)
            return
        self.add("forbidden_promise", ERROR, f"{label} promises {said!r}: refunds, credits, discounts and "
                 "replacements are for a person to decide", **ev)

    def item(self, label: str, c: Claim, ev: dict) -> None:
        t = self.t
        code = c.order
        r = t.found.get(code) if code else (next(iter(t.found.values())) if len(t.found) == 1 else None)
        if c.kind == "price":
            if not t.found:
                if code is not None or t.tried:
                    self.judge(label, code, "a price", ev)
                return
            if c.value not in self.amounts:
                self.add("price_mismatch", ERROR, f"{label} states an amount of {c.value / 100:.2f}, which no "
                         f"line item or tool result of {code or 'the order'} holds", code=code, result=r, **ev)
            elif c.what == TOTAL:
                self._total(label, c, ev)
            elif c.what and r is not None:  # "the manual 25.00 EUR": the price of that item
                self._item_price(label, c, r, ev)
            return
        if r is None or not isinstance(r.get("line_items"), list):
            if c.kind == "item" and c.source == "model" and r is not None:
                self._product(label, c, r, ev)
            return
        if c.kind == "item":
            tok = str(c.value)
            if tok in self.all_skus or any(tok in q for q in t.questions):
                return
            if c.source == "model" and self._product(label, c, r, ev):
                return
            if c.source == "floor" or tok.isupper():
                self.add("line_items_mismatch", ERROR, f"{label} lists {one_line(tok, 40)}, which is not among the "
                         f"line items of {code or 'the order'}", code=code, result=r, **ev)
            return
        n, what = c.value, str(c.what or "")
        for li in _items(r):
            if key(what) in (key(str(li.get("name") or "")), key(str(li.get("sku") or ""))) or \
                    (c.source == "model" and _overlap(what, str(li.get("name") or ""))):
                q = _int(li.get("quantity"))
                if q is not None and n != q:
                    said = f"no {one_line(what, 60)} is" if n == 0 else f"{n} of {one_line(what, 60)}"
                    self.add("line_items_mismatch", ERROR, f"{label} says {said} in "
                             f"{code or 'the order'}, but the order has {q}", code=code, result=r, **ev)
                return
        if c.source == "model":
            self.add("line_items_mismatch", ERROR, f"{label} says {n} of {one_line(what, 60)}, which is not "
                     f"among the line items of {code or 'the order'}", code=code, result=r, **ev)

    def _total(self, label: str, c: Claim, ev: dict) -> None:
        """"Total: 40.00 EUR": the amount must be the total of the order it is said of (its line
        items added up, or a total the lookup gives), or of every order of the ticket together;
        any other amount of the order (one item's price) is no total. Not judged when a lookup
        gave neither line items with prices nor a total for an order it may be said of."""
        rs = [self.t.found[c.order]] if c.order in self.t.found else list(self.t.found.values())
        totals: set[int] = set()
        together = 0
        for r in rs:
            sums = 0
            for li in _items(r):
                p, q = _int(li.get("unit_price_cents")), _int(li.get("quantity"))
                if p is None:
                    sums = 0
                    break
                sums += p * (q if q is not None else 1)
            own = {v for k in ("total_cents", "amount_cents") if (v := _int(r.get(k))) is not None}
            if sums > 0:
                own.add(sums)
            if not own:
                return  # an order whose total no lookup gives: the amount may be its total
            totals |= own
            together += max(own)
        if len(rs) > 1:
            totals.add(together)
        if c.value not in totals:
            on_file = ", ".join(f"{v / 100:.2f}" for v in sorted(totals))
            self.add("price_mismatch", ERROR, f"{label} gives {c.value / 100:.2f} as the total of "
                     f"{c.order or 'the order'}, but its line items add up to {on_file}", code=c.order,
                     result=rs[0], **ev)

    def _item_price(self, label: str, c: Claim, r: dict, ev: dict) -> None:
        """"The manual was 25.00 EUR": the amount must be that line item's unit price or its
        line total (an item named in other words: the one line item of its group, if one)."""
        what, items = str(c.what), _items(r)
        if what.startswith(GROUP):
            group = what[len(GROUP):]
            items = [li for li in items if group in {label_group(str(li.get(k) or "")) for k in ("name", "sku")}]
            if len(items) != 1:
                return
        else:
            items = [li for li in items if key(what) in (key(str(li.get("name") or "")), key(str(li.get("sku") or "")))]
        if not items:
            return
        li = items[0]
        p, q = _int(li.get("unit_price_cents")), _int(li.get("quantity"))
        if p is not None and c.value not in (p, p * (q if q is not None else 1)):
            self.add("price_mismatch", ERROR, f"{label} says {one_line(li.get('name') or what, 60)} costs "
                     f"{c.value / 100:.2f}, but its line item says {p / 100:.2f}", code=c.order, result=r, **ev)

    def item_count(self, label: str, c: Claim, ev: dict) -> None:
        """"Your order has three items": the number of its line items, or of its units."""
        t, code = self.t, c.order
        r = t.found.get(code) if code else (next(iter(t.found.values())) if len(t.found) == 1 else None)
        items = _items(r) if r is not None else []
        if not items:
            return
        units = sum(_int(li.get("quantity")) or 0 for li in items)
        if c.value not in (len(items), units):
            self.add("line_items_mismatch", ERROR, f"{label} says {code or 'the order'} holds {c.value} items, but "
                     f"it has {len(items)} line item(s)" + (f" ({units} units)" if units != len(items) else ""),
                     code=code, result=r, **ev)

    def _product(self, label: str, c: Claim, r: dict, ev: dict) -> bool:
        """A product the model layer read: True when it is the order's (product or a line item)."""
        names = [str(r.get("product") or "")] + [str(li.get(k) or "") for li in _items(r) for k in ("name", "sku")]
        if any(_overlap(str(c.value), n) for n in names if n):
            return True
        self.add("line_items_mismatch", ERROR, f"{label} names {one_line(c.value, 40)}, which is not the product "
                 f"or a line item of {c.order or 'the order'}", code=c.order, result=r, **ev)
        return True


_STOP = {"the", "a", "an", "of", "your", "our", "for", "and", "license", "licence", "key", "pro", "edition"}


def _overlap(a: str, b: str) -> bool:
    wa = {w for w in key(a).replace("(", " ").replace(")", " ").split() if w not in _STOP and len(w) > 2}
    wb = {w for w in key(b).replace("(", " ").replace(")", " ").split() if w not in _STOP and len(w) > 2}
    wa = {w.rstrip("s") for w in wa}
    wb = {w.rstrip("s") for w in wb}
    return bool(wa & wb) or (not wa and bool(wb))


def _vkey(v: Any) -> Any:
    if isinstance(v, str):
        return key(v)
    return v if isinstance(v, (int, bool, frozenset, type(None))) else str(v)


def _read_finer(c: Claim, floor: list[Claim]) -> bool:
    """Has the floor read the model's "paid" more finely, as a payment received (not matched) in
    the same words? "We have received your payment" is true of GH56JK78MN, whose lookup says so;
    a small model reads it as "paid"."""
    if c.kind != "status" or c.value != "paid" or not isinstance(c.sentence, str):
        return False
    q = c.sentence.strip().lower()
    return bool(q) and any(f.kind == "status" and f.value == RECEIVED and (f.order == c.order or None in (f.order, c.order))
                           and isinstance(f.sentence, str)
                           and (q in f.sentence.lower() or f.sentence.lower().strip() in q) for f in floor)


GUARDED = ("promise", "not_found", "status", "date", "draft")  # the model claims ``model_claim_not_so`` reads


def _not_so(text: str, pieces: list[tuple[int, int]], c: Claim) -> bool:
    """Is the model's claim C one the floor reads, in its sentence of TEXT, as not made
    (``claims.model_claim_not_so``)? The quote is found in the text as written (case aside);
    a quote the text holds only after normalising is judged on its own words."""
    if c.kind not in GUARDED:
        return False
    q = c.sentence.strip()
    at = text.lower().find(q.lower()) if q else -1
    if at < 0:
        return model_claim_not_so(q, 0, len(q), c.kind, c.value)
    for a, b in pieces:
        if a <= at < b:
            return model_claim_not_so(text[a:b], at - a, min(b, at + len(q)) - a, c.kind, c.value)
    return False


def check_ticket(*, answer: str, drafts: list[dict], tool_results: list[dict], questions: list[str],
                 drafts_failed: int = 0, model_claims: dict[str, list[Claim]] | None = None,
                 budget_s: float | None = None) -> list[Finding]:
    """The grounding findings of one ticket (see the module docstring for the kinds).

    ``model_claims``: the model layer's claims by text (``"answer"`` or a draft id), verified with
    the floor's. ``budget_s``: seconds the reading may take; a text not read whole within it gets
    a ``not_fully_checked`` warning."""
    deadline = time.monotonic() + budget_s if isinstance(budget_s, (int, float)) and budget_s > 0 else None
    t = _Ticket(drafts, tool_results, questions)
    run = _Run(t)
    mc = model_claims if isinstance(model_claims, dict) else {}
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
    run.text("answer", "the answer", answer if isinstance(answer, str) else "", True, mc.get("answer"), deadline)
    for did, txt in t.drafts:
        run.text(did, f"draft {one_line(did, 40)}", txt, False, mc.get(did), deadline)
    return run.out
