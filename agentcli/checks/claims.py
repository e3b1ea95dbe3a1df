"""Reading claims out of text for ``agentcli.checks.grounding``: sentences, clauses, order codes, dates,
and the statements (status, license, not found, promises, draft ids, items) a sentence makes.

Every regular expression here is linear on hostile input: bounded gaps (``{0,40}``), no nested
unbounded repeats, so a 20,000-character adversarial text costs milliseconds.
"""

from __future__ import annotations

import re
from typing import Any

from ..redact import one_line as safe_line
from ..vocab import find_codes, parse_date

MAX_TEXT = 20_000


def _rx(p: str) -> re.Pattern:  # "'" also matches a typographic apostrophe
    return re.compile(p.replace("'", "['\u2019]"), re.I)


# ----------------------------------------------------------------------------- text helpers
_SPLIT_RE = re.compile(r"[.!?]+(?=[\s\"')\]\u201d]|$)|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_ABBR_RE = re.compile(r"\b(?:e\.g|i\.e|etc|approx|vs|no|nr|dr|mr|mrs|ms|st|jan|feb|mar|apr|jun|jul|aug|"
                      r"sep|sept|oct|nov|dec)$", re.I)
_CLAUSE_RE = re.compile(r"[,;:()\u2013\u2014]|\s-\s|\b(?:but|however|although|though|whereas|while)\b", re.I)
_QUOTED_RE = re.compile(r'"([^"\n]{8,2000})"|\u201c([^\u201d\n]{8,2000})\u201d|\u00ab([^\u00bb\n]{8,2000})\u00bb')
EXAMPLE_RE = _rx(r"\b(?:e\.g|i\.e|for example|for instance|such as|looks? like|format|formats)\b")

_COND = r"if|once|when|whenever|as soon as|after|before|until|unless|whether|in case|provided"
_REPORT = (r"say|says|said|mention|mentions|mentioned|wrote|write|writes|claim|claims|claimed|think|thinks|"
           r"believe|believes|asked|ask|asks|wonder|wondering|report|reported|according to|question")
_MODAL = r"will|would|should|could|can|may|might|expect|expected|likely|usually|typically|normally|hopefully|soon"
_NEG = r"not|n't|never|no|cannot|unable|nothing"
HEDGE_CLAIM = _rx(rf"\b(?:{_COND}|{_REPORT})\b|\?")  # anywhere in the clause
HEDGE_MODAL = _rx(rf"\b(?:{_MODAL})\b")  # before the claim in its clause ("it should have shipped")
HEDGE_NOTFOUND = _rx(rf"\b(?:{_COND}|{_REPORT}|will|would|may|might)\b")
HEDGE_PROMISE_PRE = _rx(rf"(?:\b(?:{_NEG}|{_COND}|{_REPORT}|colleague|team|manager|promise|guarantee)\b|n't)")
HEDGE_PROMISE_POST = _rx(r"(?:\b(?:not|never|colleague|team|manager|supervisor|review|look into|decide|"
                          r"possible|eligible|whether)\b|n't)")
HEDGE_DRAFT = _rx(rf"(?:\b(?:{_NEG}|{_COND}|{_MODAL}|failed|couldn't|wasn't)\b|n't)")


def one_line(s: Any, n: int = 300) -> str:
    return safe_line(s, n)


def clip_text(v: Any) -> str:
    return v[:MAX_TEXT] if isinstance(v, str) else ""


def codes_in(text: str) -> list[tuple[int, str, str]]:
    """(position, CODE, as written) of the order codes in TEXT (``vocab.find_codes``)."""
    return [(f.start, str(f.code), f.written) for f in find_codes(text)]


def sentences(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for m in _SPLIT_RE.finditer(text):
        if m.group(0)[0] == "." and _ABBR_RE.search(text, max(start, m.start() - 6), m.start()):
            continue
        if text[start:m.end()].strip():
            out.append((start, m.end()))
        start = m.end()
    if text[start:].strip():
        out.append((start, len(text)))
    return out


def _norm(s: str) -> str:
    return " ".join(s.replace("\u2019", "'").replace("_", " ").lower().split())


def blank_quotes(text: str, strings: list[str]) -> str:
    """TEXT with verbatim tool/question strings and quoted excerpts of them blanked (same length)."""
    for s in sorted(strings, key=len, reverse=True):
        if len(s) >= 12 and any(c.isspace() for c in s) and s in text:
            text = text.replace(s, " " * len(s))
    normed = [_norm(s) for s in strings]

    def repl(m: re.Match) -> str:
        inner = _norm(next(g for g in m.groups() if g is not None).rstrip(".\u2026 "))
        return " " * len(m.group(0)) if inner and any(inner in s for s in normed) else m.group(0)

    return _QUOTED_RE.sub(repl, text, count=200)


def clause_of(sent: str, a: int, b: int) -> str:
    lo, hi = 0, len(sent)
    for m in _CLAUSE_RE.finditer(sent):
        if m.end() <= a:
            lo = m.end()
        elif m.start() >= b:
            hi = m.start()
            break
    return sent[lo:hi]


# ----------------------------------------------------------------------------- dates
_MONTHS = {"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
           "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
           "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12}
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE_RES = (
    ("ymd", re.compile(r"(?<![\d-])(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")),
    ("md", re.compile(rf"\b({_MON})\.?[ \t]{{1,3}}(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?[ \t]{{1,3}}(\d{{4}}))?", re.I)),
    ("dm", re.compile(rf"(?<![\d.])(\d{{1,2}})(?:st|nd|rd|th)?\.?[ \t]{{1,3}}(?:of[ \t]{{1,3}})?({_MON})\b\.?"
                      rf"(?:,?[ \t]{{1,3}}(\d{{4}}))?", re.I)),
    ("num", re.compile(r"(?<![\d./])(\d{1,2})[./](\d{1,2})[./](\d{4})(?![\d])")),
)
FRAME_RE = _rx(r"\bwithin\s{1,3}(?:the\s+next\s+)?(?:\d{1,3}|an?|one|two|three|four|five|a\s+few)(?:\s?(?:-|to)\s?\d{1,3})?"
                r"\s{0,3}(?:business\s+|working\s+)?(?:hours?|days?|weeks?)\b|\b(?:by|until|before)\s+(?:tomorrow|"
                r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|next\s+week|the\s+end\s+of\s+(?:the|this)"
                r"\s+week)\b|\bin\s(?:\d{1,3}|two|three|four|five|a\s+few)\s?(?:-\s?\d{1,3}\s?)?(?:business\s+|working\s+)?"
                r"(?:days|weeks)\b|\b(?:tomorrow|next\s+week)\b")
_DELIV_RE = _rx(r"deliver|arriv|expected|estimated|\beta\b|reach")
_PLACED_RE = _rx(r"placed|\bordered\b|order date|purchas|bought|made on|submitted")


def find_dates(text: str) -> list[tuple[int, int, frozenset]]:
    """(start, end, {(year or None, month, day)}) of the dates written in TEXT."""
    out = []
    for kind, rx in _DATE_RES:
        for m in rx.finditer(text):
            g = m.groups()
            if kind == "ymd":
                cands = {(int(g[0]), int(g[1]), int(g[2]))}
            elif kind == "md":
                cands = {(int(g[2]) if g[2] else None, _MONTHS[g[0].lower()], int(g[1]))}
            elif kind == "dm":
                cands = {(int(g[2]) if g[2] else None, _MONTHS[g[1].lower()], int(g[0]))}
            else:
                cands = {(int(g[2]), int(g[1]), int(g[0])), (int(g[2]), int(g[0]), int(g[1]))}
            cands = frozenset(c for c in cands if 1 <= c[1] <= 12 and 1 <= c[2] <= 31)
            if cands:
                out.append((m.start(), m.end(), cands))
    return out


def iso_date(v: Any) -> tuple[int, int, int] | None:
    d = parse_date(v)
    return (d.year, d.month, d.day) if d is not None else None


def date_in(cands: frozenset, allowed: set) -> bool:
    return any((c in allowed) if c[0] is not None else any(a[1:] == c[1:] for a in allowed) for c in cands)


def date_context(sent: str, a: int, b: int) -> str | None:
    before = [(m.end(), k) for k, rx in (("delivery", _DELIV_RE), ("placed", _PLACED_RE))
              for m in rx.finditer(sent, max(0, a - 50), a)]
    if before:
        return max(before)[1]
    after = [(m.start(), k) for k, rx in (("delivery", _DELIV_RE), ("placed", _PLACED_RE))
             for m in rx.finditer(sent, b, b + 30)]
    return min(after)[1] if after else None


# ----------------------------------------------------------------------------- claims
_AUX = r"(?:has|have|had|is|are|was|were)(?P<neg>n't|\s+not|\s+never)?\s+(?:(?:already|now|just|also|still|since|successfully|recently)\s+)?(?:been\s+)?(?:(?:already|now|just|successfully)\s+)?"
_STATUS_WORDS = {
    "shipped": r"shipped|dispatched|sent\s+out|handed\s+(?:over\s+)?to\s+the\s+carrier|in\s+transit|on\s+(?:its|the)\s+way",
    "delivered": r"delivered", "cancelled": r"cancell?ed|voided", "refunded": r"refunded",
    "paid": r"(?:fully\s+)?paid(?!\s+by\s+you)",
}
_STATUS_RES = [(st, _rx(rf"\b{_AUX}(?:{w})\b")) for st, w in _STATUS_WORDS.items()]
_STATUS_RES += [("shipped", _rx(r"\b(?:it|order|parcel|package)\s+shipped\b")),
                ("paid", _rx(r"\bpayment\s+(?:has\s+been|was|is)\s+(?:now\s+)?(?:confirmed|completed|matched|cleared)\b"))]
_PENDING_RE = _rx(r"\b(?:pending|awaiting|waiting\s+for)\s+(?:the\s+|your\s+|a\s+)?payment\b|\bpayment\s+(?:is\s+)?"
                  r"(?:still\s+)?(?:pending|outstanding)\b|\bnot\s+(?:yet\s+)?(?:been\s+)?(?:able\s+to\s+)?match(?:ed)?\b|"
                  r"\bpayment\s+(?:has|have|is|was)(?:n't|\s+not)\s+(?:yet\s+)?(?:been\s+)?(?:matched|confirmed|cleared)\b")
_STATUS_FIELD_RE = _rx(r"\bstatus\s{0,3}(?:is\s+|:\s*|=\s*|of\s+\S{1,20}\s+is\s+)?(?:now\s+|still\s+)?[\"\x27\u201c]?"
                       r"(pending[\s_]payment|paid|license[\s_]issued|shipped|delivered|cancell?ed|refunded)\b")
_SKIP_SUBJECT = {"draft", "reply", "message", "email", "e-mail", "ticket", "request", "lookup", "search",
                 "license", "licence", "key", "code", "refund", "it's"}
_PERSON = {"you", "i", "we", "they", "customer", "he", "she"}
_LIC_OF = r"(?:\s+(?:for|of)\s+(?:your\s+|the\s+)?(?:order\s+)?[\w-]{1,14})?"
_LIC_RES = [
    _rx(r"\blicen[cs]e(?:\s+key)?s?" + _LIC_OF + r"\s+" + _AUX + r"(?:issued|sent|emailed|e-mailed|generated|activated|ready|available)\b"),
    _rx(r"\b(?:issued|sent|emailed|e-mailed)\s+(?:you\s+)?(?:your|the)\s+licen[cs]e"),
    _rx(r"\b(?P<neg>no\s+)?licen[cs]e(?:\s+key)?\s+(?:(?:has|was)\s+(?:yet\s+)?(?:been\s+)?)?issued\b"),
    _rx(r"\blicen[cs]e(?:\s+key)?" + _LIC_OF + r"\s+(?:is\s+|has\s+)?(?P<neg>yet\s+to\s+be|not\s+yet)\s+(?:issued|sent)\b"),
]
NOTFOUND_RE = _rx(r"\b(?:could\s+not|couldn't|can't|cannot|were\s+unable\s+to|was\s+unable\s+to|unable\s+to|"
                   r"did\s+not|didn't|not\s+able\s+to)\s+(?:find|locate)\b|\bnot\s+found\b|\bno\s+(?:such\s+)?order\s+"
                   r"(?:with|under|matching|for)\b|\b(?:does\s+not|doesn't)\s+exist\b|\bno\s+record\s+of\b")
NOTFOUND_EXCEPT = _rx(r"^[^.!?]{0,40}?\b(?:code|number|reference)\s+in\s+(?:your|the|this)\b|^[^.!?]{0,40}?\bin\s+"
                       r"(?:your|the|this)\s+(?:message|question|email|e-mail|text|request)\b")
_NOUN = (r"(?:refunds?|credits?|discounts?|vouchers?|coupons?|compensation|reimbursements?|money\s+back|"
         r"gift\s+cards?|free\s+(?:months?|upgrade|replacement))(?!\s+(?:request|policy|question|inquiry|enquiry|"
         r"form|claim|application|process))")
PROMISE_RES = [
    _rx(r"\b(?:we|i)\s*(?:will|'ll|shall|are\s+going\s+to|am\s+going\s+to|can|have|'ve|are|am|would\s+like\s+to|"
        r"'d\s+like\s+to|(?:would|'d|are|am)\s+(?:be\s+)?(?:happy|glad|pleased)\s+to)\s+(?:now\s+|already\s+|gladly\s+|"
        r"happily\s+|also\s+|immediately\s+)?(?:issue[sd]?|issuing|process(?:ed|ing)?|give|given|giving|send|sent|"
        r"sending|arrange[ds]?|arranging|approved?|approving|initiated?|initiating|grant(?:ed|ing)?|offer(?:ed|ing)?|"
        r"appl(?:y|ied|ying)|provided?|providing|add(?:ed|ing)?|extend(?:ed|ing)?)\b[^.!?\n]{0,40}?\b" + _NOUN),
    _rx(r"\b(?:we|i)\s*(?:will|'ll|shall|are\s+going\s+to|am\s+going\s+to|can|have|'ve|are|am)\s+(?:now\s+|already\s+|"
        r"gladly\s+|happily\s+|also\s+|fully\s+)?(?:refund|reimburse|credit|compensate)(?:d|ed|ing)?\b"),
    _rx(r"\b" + _NOUN + r"\b[^.!?\n]{0,40}?\b(?:(?:has|have|had)\s+been|is|was|will\s+be|is\s+being|are|were)\s+"
        r"(?:approved|granted|issued|processed|authori[sz]ed|arranged|initiated|confirmed|on\s+its\s+way|underway|"
        r"sent|applied|added|credited|guaranteed|made|completed)\b"),
    _rx(r"\b(?:approved|granted|authori[sz]ed|processed|issued|initiated|arranged|applied|added)\s+(?:you\s+)?"
        r"(?:a|an|your|the)\s+(?:full\s+|partial\s+|\d{1,3}\s?%\s+)?" + _NOUN),
    _rx(r"\byou\s*(?:will|'ll|are\s+going\s+to|can\s+expect(?:\s+to)?|should|are\s+getting|are\s+entitled\s+to|"
        r"qualify\s+for|are\s+eligible\s+for|will\s+be)\s+(?:get\s+|receive\s+|be\s+getting\s+|see\s+|getting\s+|"
        r"be\s+receiving\s+)?(?:a\s+|an\s+|your\s+|the\s+)?(?:full\s+|partial\s+|\d{1,3}\s?%\s+)?" + _NOUN),
    _rx(r"\byou\s*(?:will|'ll)\s+be\s+(?:fully\s+)?(?:refunded|reimbursed|credited|compensated)\b"),
    _rx(r"\b(?:full|partial)\s+refund\s+(?:is|has\s+been)\b|\b(?:discount|coupon|voucher|promo)\s+code\b|"
        r"\b\d{1,3}\s?%\s+(?:off|discount)\b"),
]
FUTURE_RE = _rx(r"\b(?:will|'ll|shall|going\s+to|can|would|credit|discount|voucher|coupon|compensat)")
DRAFT_ID_RE = re.compile(r"(?<![\w-])d-[0-9a-f]{4,12}(?![\w-])", re.I)
DRAFT_CLAIM_RE = _rx(r"\b(?:saved|stored|created|wrote|written|prepared)\b[^.!?\n]{0,40}?\bdraft\b|\bdraft\b"
                      r"[^.!?\n]{0,40}?\b(?:saved|stored|created|is\s+ready|pending\s+review|ready\s+for\s+review)\b")
SKU_RE = re.compile(r"(?<![\w-])[A-Z]{2,6}-[A-Z0-9]{1,8}(?![\w-])")
ITEM_CTX_RE = _rx(r"\b(?:skus?|items?|contains?|includes?|consists?|quantity|qty)\b|\u00d7")
QTY_BEFORE_RE = _rx(r"(?<![\w.:/-])(\d{1,4}|one|two|three|four|five|six|seven|eight|nine|ten)\s{0,2}(?:\u00d7|x|\*)?"
                     r"\s{0,2}(?:(?:copies|units|pieces)\s+of\s+)?(?:the\s+)?$")
WORDNUM = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
COMPAT = {"pending_payment": {"pending_payment"}, "paid": {"paid", "license_issued", "shipped", "delivered", "refunded"},
           "license_issued": {"license_issued", "shipped", "delivered"}, "shipped": {"shipped", "delivered", "refunded"},
           "delivered": {"delivered", "refunded"}, "cancelled": {"cancelled", "refunded"}, "refunded": {"refunded"}}


def _prev_word(sent: str, a: int) -> str:
    m = re.search(r"([\w'-]{1,20})\W{0,3}$", sent[max(0, a - 25):a])
    return m.group(1).lower() if m else ""


def hedged(rx: re.Pattern, text: str) -> bool:
    return rx.search(text) is not None


def claim_hedged(sent: str, a: int, b: int) -> bool:
    """Is the claim at SENT[a:b] conditional, reported or modal (so not a statement of fact)?"""
    c = clause_of(sent, a, b)
    pre = c[:c.find(sent[a:b])] if sent[a:b] in c else ""
    return hedged(HEDGE_CLAIM, c) or hedged(HEDGE_MODAL, pre)


def status_claims(sent: str) -> list[tuple[int, str]]:
    """(position, status) of the positive, unhedged status statements in one sentence."""
    out = []
    for st, rx in _STATUS_RES:
        for m in rx.finditer(sent):
            if "neg" in rx.groupindex and m.group("neg"):
                continue
            pw = _prev_word(sent, m.start())
            if pw in _SKIP_SUBJECT or (st == "paid" and pw in _PERSON):
                continue
            if not claim_hedged(sent, m.start(), m.end()):
                out.append((m.start(), st))
    for m in _PENDING_RE.finditer(sent):
        if not claim_hedged(sent, m.start(), m.end()):
            out.append((m.start(), "pending_payment"))
    for m in _STATUS_FIELD_RE.finditer(sent):
        out.append((m.start(), re.sub(r"[\s_]+", "_", m.group(1).lower()).replace("canceled", "cancelled")))
    return out


def license_claims(sent: str) -> list[tuple[int, bool]]:
    out = []
    for rx in _LIC_RES:
        for m in rx.finditer(sent):
            neg = bool(m.groupdict().get("neg")) or bool(re.search(r"(?:\bnot|n't|\bnever)\s+(?:yet\s+)?(?:been\s+)?$",
                                                                    sent[max(0, m.start() - 20):m.start()]))
            if not claim_hedged(sent, m.start(), m.end()):
                out.append((m.start(), not neg))
    return out
