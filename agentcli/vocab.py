"""The words of the domain, defined once at the bottom of the layers.

- ``ToolName``: the two tools (never a string literal elsewhere);
- ``Outcome``: how one tool call ended; ``ANSWERED`` / ``OUR_SIDE`` group them;
- ``Status`` and the stop reasons our code adds (``TURN_LIMIT``, ``GROUNDING``,
  ``REPEATED_CALLS``, …);
- ``OrderCode``: one pattern for an order code, the forms customers write normalised
  (``GH56-JK78-MN``, ``GH56 JK78 MN``, ``ORD 20261234``, ``ord20261234``); ``OrderCode.parse``
  reads a tool input, ``find_codes`` finds codes in prose: the tool, the workflow mode, the
  offline provider, the checks and the evals all use these two;
- ``CallRecord``: one finished tool call, frozen (the ``--json`` ``tool_calls`` entry, a line of
  ``/history``, a lookup in a draft's provenance), read back from hostile dicts by ``from_dict``;
- ``parse_date`` (the one reader of a date a database or a tool gave) and ``parse_since``
  (``--since`` of ``drafts list`` and ``log list``);
- what people type: ``check_question`` (every way a question comes in) and
  ``customer_address`` (a customer scope).

Standard library only; imports nothing of agentcli but ``errors`` and ``redact``.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from enum import StrEnum
from typing import Any, Iterable, NamedTuple

from .errors import UsageError
from .redact import one_line, replace_surrogates


class ToolName(StrEnum):
    LOOKUP = "get_order_status"
    DRAFT = "draft_reply"


class Outcome(StrEnum):
    OK = "ok"
    NOT_FOUND = "not_found"
    INVALID_INPUT = "invalid_input"
    UNKNOWN_TOOL = "unknown_tool"
    TIMEOUT = "timeout"
    TOOL_ERROR = "tool_error"
    CANCELLED = "cancelled"


ANSWERED = frozenset({Outcome.OK, Outcome.NOT_FOUND})
# Refused by our code for what the call asked (its input, an unknown tool): asked again the same
# way in the same state, it is refused again with the same words.
REFUSED = frozenset({Outcome.INVALID_INPUT, Outcome.UNKNOWN_TOOL})
# A call that failed for a reason that is not the model's input: the person must hear of it.
OUR_SIDE = frozenset({Outcome.TIMEOUT, Outcome.TOOL_ERROR, Outcome.CANCELLED})


class Status(StrEnum):
    """How a question ended (``--json`` ``status``; ``cancelled`` only inside the process)."""
    OK = "ok"
    INCOMPLETE = "incomplete"
    ERROR = "error"
    CANCELLED = "cancelled"


# Stop reasons our code gives (the API's own are end_turn, tool_use, max_tokens, refusal, ...).
TURN_LIMIT = "turn_limit"
DRAFT_NOT_SAVED = "draft_not_saved"
LOOKUP_FAILED = "lookup_failed"
GROUNDING = "grounding"
NO_ANSWER = "no_answer"
# The finding of a text the checks could not read whole (its length, their time budget, a model
# layer that failed): never "ok" (``Ticket.verdict``), and held by the review gate.
NOT_FULLY_CHECKED = "not_fully_checked"
CANCELLED = "cancelled"
# The model asked again and again for results it already had (each answered from the ticket).
REPEATED_CALLS = "repeated_calls"


# ----------------------------------------------------------------------------- what people type
MAX_QUESTION_CHARS = 100_000
MAX_ADDRESS_CHARS = 254
# One address: no spaces, controls, brackets, quotes, commas or semicolons; one @ with text on
# both sides. ``Name <address>`` (as pasted from a mail client) is reduced to the address.
_ADDRESS_RE = re.compile(r"[^\s@<>\"',;()\[\]\\]+@[^\s@<>\"',;()\[\]\\]+")
_NAMED_RE = re.compile(r"[^<>]*<([^<>]*)>")


def clean_text(s: str) -> str:
    """Text fit to send and store: no NUL, no byte-order mark in front, and no lone surrogate
    (from invalid UTF-8 in an argument, or a ``\\ud800`` escape in JSON), which no encoder
    accepts: each becomes U+FFFD, as undecodable bytes from standard input already do."""
    s = s.replace("\x00", "")
    if s.startswith("\ufeff"):
        s = s[1:]
    return replace_surrogates(s)


def check_question(q: str) -> str:
    """A question fit to send, or UsageError (empty, too long). Every way in uses it: an
    argument, standard input, the REPL, a batch line."""
    q = clean_text(q)
    if not q.strip():
        raise UsageError("the question is empty")
    if len(q) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question is too long ({len(q)} characters; the limit is "
                         f"{MAX_QUESTION_CHARS}): trim quoted history from the email")
    return q.replace("\r\n", "\n").strip("\n")  # pasted CRLF emails read like any other


def customer_address(value: str) -> str:
    """The customer's email address from ``value`` (``ana@example.com`` or ``Ana Silva
    <ana@example.com>``); ValueError with a message for anything else, blank included: a
    customer scope that silently meant "no scope" or "nobody" would fail open or look empty."""
    v = drop_invisible(clean_text(str(value))).strip()
    m = _NAMED_RE.fullmatch(v)  # without what shows as nothing: "ana@x.com\u200b" is ana@x.com
    if m:
        v = m.group(1).strip()
    if not v:
        raise ValueError("is blank: give the customer's email address, or leave the setting out")
    if len(v) > MAX_ADDRESS_CHARS or not _ADDRESS_RE.fullmatch(v):
        raise ValueError(f"{one_line(v, 60)!r} is not an email address: give one like "
                         "ana@example.com or 'Ana Silva <ana@example.com>'")
    return v


def ticket_key(ticket: str) -> str:
    """The file name a ticket is indexed under (the drafts folder's and the session logs' ticket
    indexes): a hash, so any ticket id names a file safely."""
    return hashlib.sha256(ticket.encode("utf-8", "surrogatepass")).hexdigest()[:24]


# ----------------------------------------------------------------------------- characters
# Blank "letters" and marks NFKC keeps that show as nothing (not category Cf).
BLANKS = ("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2800\u3164\uffa0"
          + "".join(chr(c) for c in range(0xFE00, 0xFE10)))

# Every format character (category Cf) of the Unicode version Python's ``unicodedata`` has here,
# as ranges: one pattern drops them all in one scan of the text, where a test of each character
# of a 20,000-character answer in Python took milliseconds. Another Unicode version (another
# Python) tests each character as before; tests/test_invisible.py holds the ranges equal to it.
CF_UNICODE = "14.0.0"
CF_RANGES = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
             "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438"
             "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
_SHOWS_NOTHING_RE = (re.compile(f"[{CF_RANGES}{BLANKS}]+") if unicodedata.unidata_version == CF_UNICODE
                     else None)


def drop_each_invisible(text: str) -> str:
    """``drop_invisible`` one character at a time, by its category (any Unicode version)."""
    return "".join(c for c in text if c not in BLANKS and unicodedata.category(c) != "Cf")


def drop_invisible(text: str) -> str:
    """TEXT without the characters that show as nothing: the format characters (category Cf:
    soft hyphens, zero-width spaces and joiners, bidirectional controls, the BOM) and BLANKS."""
    if text.isascii():
        return text
    if _SHOWS_NOTHING_RE is None:
        return drop_each_invisible(text)
    return _SHOWS_NOTHING_RE.sub("", text)

# Lookalikes (Unicode's confusables for Latin letters, the common ones of two scripts).
_CYRILLIC = {
    "а": "a", "в": "b", "е": "e", "ё": "e", "з": "3", "і": "i", "ї": "i", "ј": "j", "к": "k",
    "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s",
    "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w", "ү": "y", "ӏ": "l", "ɡ": "g",
    "А": "A", "В": "B", "Е": "E", "Ё": "E", "З": "3", "І": "I", "Ї": "I", "Ј": "J", "К": "K",
    "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S",
    "Ԁ": "D", "Һ": "H", "Ԛ": "Q", "Ԝ": "W", "Ү": "Y", "Ӏ": "I",
}
_GREEK = {
    "α": "a", "β": "b", "γ": "y", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ϳ": "j",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C",
}
_OTHER = {"ȷ": "j", "ℓ": "l", "ꓲ": "I", "ꓳ": "O", "ꓴ": "U", "ꓦ": "V", "ꓪ": "W"}
CONFUSABLES = str.maketrans({**_CYRILLIC, **_GREEK, **_OTHER})


# ----------------------------------------------------------------------------- order codes
# Separators customers put inside a code: hyphens and dashes of every kind, spaces, NBSP,
# underscores (copied from a system's field). The 8 digits of an ORD code may be grouped 4 + 4.
_SEP = "[-\u2010-\u2015\u2212\u00a0 _]"
_ORD_RE = re.compile(rf"ORD{_SEP}?([0-9]{{4}}){_SEP}?([0-9]{{4}})", re.ASCII | re.IGNORECASE)
_PLAIN_RE = re.compile(r"[A-Z0-9]{10}", re.ASCII | re.IGNORECASE)
_GROUPED_RE = re.compile(rf"([A-Z0-9]{{4}}){_SEP}([A-Z0-9]{{4}}){_SEP}([A-Z0-9]{{2}})",
                         re.ASCII | re.IGNORECASE)
# Before a code: no letter or digit, and a hyphen only right after another code (not the tail of
# "X-GH56JK78MN"; "ORD-20261234-GH56JK78MN" is two codes: ``find_codes`` checks it); after it: no
# letter or digit, and a hyphen only where a word of three letters or more follows, joined to it
# as in German ("ORD-20261234-Bestellung", "GH56JK78MN-Lizenz"), or another code (not
# "ORD-20261234-5").
_CODE_FORMS = (rf"ORD{_SEP}?[0-9]{{4}}{_SEP}?[0-9]{{4}}|[A-Z0-9]{{4}}{_SEP}[A-Z0-9]{{4}}{_SEP}[A-Z0-9]{{2}}"
               r"|[A-Z0-9]{10}")
_FIND_RE = re.compile(
    rf"(?<![A-Za-z0-9])(?:{_CODE_FORMS})(?![A-Za-z0-9]|-(?![A-Za-z]{{3}}|(?:{_CODE_FORMS})(?![A-Za-z0-9])))",
    re.ASCII | re.IGNORECASE)
MAX_CODES_IN_TEXT = 200
# A reference of another kind written just before it: "customer number KD12345678", "Ihre
# Kundennummer lautet KD12345678", "Transaction ID TX98765432", "invoice no. RE20261234" (a label
# and its number word: "Ticket: GH56JK78MN" may be how a customer names the order) -- ten
# letters and digits, but no order's code (the checks flagged them as orders never looked up). Not a
# payment reference: a bank transfer's reference is the order's code, as the shop asks.
_OTHER_REFERENCE_RE = re.compile(
    r"\b(?:customer|client|account|member|membership|invoice|transaction|tracking|booking|ticket|case|"
    r"kunden|rechnungs|transaktions|sendungs|konto|mitglieds|vorgangs|buchungs|kundinnen)"
    r"[\s-]*(?:number|no\.?|nr\.?|id|code|nummer|reference|referenz|ref\.?)\s*(?:[:#=]|\bis\b|\bwas\b|"
    r"\blautet\b|\bist\b|\bwar\b)?\s*$", re.IGNORECASE)


def _code_char(c: str) -> str:
    """The one character C stands for in a code: its compatibility form (full-width, bold and
    other styled letters, superscripts, circled digits, the other spaces and dashes) or its Latin
    lookalike (a Cyrillic or Greek letter), when that is one character; "" for a character that
    shows as nothing (a soft hyphen, a zero-width space, a BOM, a bidirectional control)."""
    if c in BLANKS or unicodedata.category(c) == "Cf":
        return ""
    n = unicodedata.normalize("NFKC", c)
    n = n if len(n) == 1 else c
    return n.translate(CONFUSABLES)


class _CodeChars(dict):
    """``str.translate`` table of ``_code_char``, filled as characters are met (bounded)."""

    def __missing__(self, o: int) -> str:
        r = _code_char(chr(o))
        if len(self) < 4096:
            self[o] = r
        return r


_CODE_CHARS = _CodeChars()


def code_text(value: str) -> str:
    """VALUE with every character as a code reads it (``_code_char``): what ``OrderCode.parse``
    and ``find_codes`` match, so a code pasted with a zero-width space or typed with a Cyrillic
    "Н" is the code it shows, to the tool, the workflow mode, the offline provider and the checks
    alike."""
    return value if value.isascii() else value.translate(_CODE_CHARS)


def _mixed(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


class InvalidOrderCode(ValueError):
    """Not an order code; the message says what one looks like."""


class OrderCode(str):
    """A normalised order code: ``GH56JK78MN`` (10 letters/digits) or ``ORD-20261234``."""

    __slots__ = ()

    @classmethod
    def parse(cls, value: Any) -> "OrderCode":
        """A code given on its own (a tool input, ``orders show CODE``): case, surrounding
        spaces and the written forms do not matter. ``InvalidOrderCode`` otherwise."""
        if not isinstance(value, str):
            raise InvalidOrderCode("an order code is text")
        v = code_text(value).strip()  # full-width, lookalike and invisible characters, other spaces
        m = _ORD_RE.fullmatch(v)
        if m:
            return cls("ORD-" + m.group(1) + m.group(2))
        if _PLAIN_RE.fullmatch(v):
            return cls(v.upper())
        m = _GROUPED_RE.fullmatch(v)
        if m:
            return cls("".join(m.groups()).upper())
        shown = one_line(" ".join(v.split()), 40)
        raise InvalidOrderCode(
            f"'{shown}' is not a valid order code: use 10 letters/digits (e.g. GH56JK78MN) or ORD- "
            "followed by 8 digits (e.g. ORD-20261234)")

    @classmethod
    def parse_or_none(cls, value: Any) -> "OrderCode | None":
        try:
            return cls.parse(value)
        except InvalidOrderCode:
            return None


class FoundCode(NamedTuple):
    start: int
    end: int
    code: OrderCode
    written: str  # as it stands in the text


def find_codes(text: str, limit: int = MAX_CODES_IN_TEXT) -> list[FoundCode]:
    """The order codes written in prose, in order (repeats included).

    ``ORD`` codes in any of their forms; a 10-character code only with both a letter and a digit
    (so "everything" is not a code); the grouped form ``GH56-JK78-MN`` likewise, and when its
    groups are spaced (``GH56 JK78 MN``) only as capitals with a group mixing letters and digits
    ("from 2026 to" is not a code)."""
    out: list[FoundCode] = []
    if not isinstance(text, str):
        return out
    at: list[int] | None = None  # where each character of ``scan`` stands in TEXT, if not its own place
    scan = code_text(text)
    if len(scan) != len(text):  # characters that show as nothing were left out
        at = [i for i, c in enumerate(text) if c.isascii() or _CODE_CHARS[ord(c)]]
        at.append(len(text))
    after = -1  # where in ``scan`` the last code found ends
    for m in _FIND_RE.finditer(scan):
        w = m.group(0)
        if m.start() and scan[m.start() - 1] == "-" and m.start() - 1 != after:
            continue  # the tail of a word ("X-GH56JK78MN"), not a code joined to the one before
        code = OrderCode.parse_or_none(w)
        if code is None:
            continue
        if not code.startswith("ORD-"):  # (an ORD- code is always ours)
            if not _mixed(code) or _OTHER_REFERENCE_RE.search(scan, max(0, m.start() - 40), m.start()):
                continue  # "everything", or "customer number KD12345678": a reference of another kind
            if " " in w or "\u00a0" in w:
                groups = _GROUPED_RE.fullmatch(w)
                if w != w.upper() or groups is None or not any(_mixed(g) for g in groups.groups()):
                    continue
        a, b = (m.start(), m.end()) if at is None else (at[m.start()], at[m.end() - 1] + 1)
        out.append(FoundCode(a, b, code, text[a:b]))
        after = m.end()
        if len(out) >= limit:
            break
    return out


_LINE_HINTS = re.compile(r"\b(line items?|items|contents|what('s| is) in|sku|quantity|price)\b",
                         re.IGNORECASE)


def asks_for_line_items(question: str) -> bool:
    """Whether a question is about an order's contents (the lookup then asks for line items)."""
    return bool(_LINE_HINTS.search(question))


def distinct_codes(text: str, limit: int = 5) -> list[OrderCode]:
    """The different order codes of ``text``, in order of first mention, at most ``limit``."""
    seen: list[OrderCode] = []
    for f in find_codes(text):
        if f.code not in seen:
            seen.append(f.code)
            if len(seen) >= limit:
                break
    return seen


# ----------------------------------------------------------------------------- tool calls
def json_type(v: Any) -> str:
    """The JSON name of a value's type (for messages about tool input)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One finished tool call: what the model asked, what it got back, how it ended."""
    id: str
    name: str
    input: Any
    result: Any
    is_error: bool
    duration_ms: float
    outcome: Outcome

    def to_dict(self) -> dict[str, Any]:
        """The spec's ``tool_calls`` entry (plus ``outcome``)."""
        return {"id": self.id, "name": self.name, "input": self.input, "result": self.result,
                "is_error": self.is_error, "duration_ms": self.duration_ms,
                "outcome": str(self.outcome)}

    @classmethod
    def from_dict(cls, d: Any) -> "CallRecord | None":
        """A record read back from a session log, a draft's provenance or a ``--json`` object
        (all hostile): None when it is not one. A missing or unknown outcome is derived from
        ``is_error`` and the result, as the tool runner would have set it."""
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            return None
        result = d.get("result")
        is_error = d.get("is_error") is not False
        try:
            outcome = Outcome(d.get("outcome"))
        except ValueError:
            outcome = (Outcome.TOOL_ERROR if is_error else
                       Outcome.NOT_FOUND if isinstance(result, dict) and result.get("found") is False
                       else Outcome.OK)
        ms = d.get("duration_ms")
        return cls(str(d.get("id") or ""), d["name"], d.get("input"), result,
                   outcome not in ANSWERED, float(ms) if isinstance(ms, (int, float))
                   and not isinstance(ms, bool) and ms == ms and abs(ms) < 1e12 else 0.0, outcome)

    # -- what our code asks of a record ----------------------------------------------------
    @property
    def is_lookup(self) -> bool:
        return self.name == ToolName.LOOKUP

    @property
    def is_draft(self) -> bool:
        return self.name == ToolName.DRAFT

    @property
    def order_code(self) -> OrderCode | None:
        """The order a call is about, as the tool reads it (None when its input has none)."""
        inp = self.input
        return OrderCode.parse_or_none(inp.get("order_code")) if isinstance(inp, dict) else None

    @property
    def order(self) -> dict[str, Any] | None:
        """A lookup's result when it found the order."""
        r = self.result
        if self.is_lookup and self.outcome == Outcome.OK and isinstance(r, dict) \
                and r.get("found") is not False:
            return r
        return None

    @property
    def draft_id(self) -> str | None:
        """The id a successful draft call answered with."""
        r = self.result
        if self.is_draft and self.outcome == Outcome.OK and isinstance(r, dict) \
                and isinstance(r.get("draft_id"), str):
            return r["draft_id"]
        return None

    @property
    def draft_text(self) -> str | None:
        inp = self.input
        return inp["text"] if isinstance(inp, dict) and isinstance(inp.get("text"), str) else None

    def key(self) -> str:
        """The call's identity for "the model has seen this result": name and input, an order
        code compared as the tool reads it."""
        return call_key(self.name, self.input)


def call_key(name: Any, inp: Any) -> str:
    if isinstance(inp, dict) and "order_code" in inp:
        code = OrderCode.parse_or_none(inp.get("order_code"))
        if code is not None:
            inp = {**inp, "order_code": str(code)}
    try:
        return f"{name}\x00" + json.dumps(inp, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return f"{name}\x00<{id(inp)}>"  # never equal to another call's


def records(items: Iterable[Any]) -> list[CallRecord]:
    """``CallRecord.from_dict`` over a hostile list, dropping what is not a record."""
    out = []
    for d in items if isinstance(items, (list, tuple)) else ():
        r = d if isinstance(d, CallRecord) else CallRecord.from_dict(d)
        if r is not None:
            out.append(r)
    return out


# ----------------------------------------------------------------------------- dates
def parse_date(v: Any) -> date | None:
    """A date from a database column or a tool result (``date``, ``datetime``, ``2026-11-20``,
    ``2026-11-20T10:00:00``); None for anything else."""
    if isinstance(v, datetime):
        return v.date()
    if isinstance(v, date):
        return v
    if isinstance(v, str) and len(v) >= 10:
        try:
            return date.fromisoformat(v[:10])
        except ValueError:
            return None
    return None


def iso_day(v: Any) -> str | None:
    """``yyyy-mm-dd`` for a date a database gave (text it cannot read stays as it is, cut)."""
    if v is None:
        return None
    d = parse_date(v)
    return d.isoformat() if d is not None else str(v)[:10]


_AGE_RE = re.compile(r"^(\d{1,9})\s*([mhdw])$")


def parse_since(value: str | None, *, now: datetime | None = None,
                flag: str = "--since") -> datetime | None:
    """``2026-11-30``, an ISO time, or an age ``30m`` / ``12h`` / ``7d`` / ``2w`` before now;
    None when not given. Blank is a usage error, as a blank ``--ticket`` is: ``--since "$AGE"``
    with AGE unset listed everything, without a word."""
    if value is None:
        return None
    v = value.strip()
    if not v:
        raise UsageError(f"{flag} is blank: give a date (2026-11-30), an ISO time "
                         "(2026-11-30T09:00) or an age (30m, 12h, 7d, 2w), or leave it out")
    now = now or datetime.now(timezone.utc)
    m = _AGE_RE.match(v.lower())
    try:
        if m:
            n, unit = int(m.group(1)), m.group(2)
            return now - {"m": timedelta(minutes=n), "h": timedelta(hours=n),
                          "d": timedelta(days=n), "w": timedelta(weeks=n)}[unit]
        dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
        return dt if dt.tzinfo is not None else dt.astimezone()  # local time, as a person means it
    except (OverflowError, ValueError):
        shown = " ".join(v.split())[:40]
        raise UsageError(f"{flag} {shown!r}: use a date (2026-11-30), an ISO time "
                         "(2026-11-30T09:00) or an age (30m, 12h, 7d, 2w) within the "
                         "calendar") from None


def parse_time(raw: Any) -> datetime | None:
    """An ISO time we wrote (``created_at``), timezone-aware; None when it is not one."""
    if not isinstance(raw, str):
        return None
    try:
        dt = datetime.fromisoformat(raw[:40].replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
