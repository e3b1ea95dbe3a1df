"""The claims a text makes, as structured values (``Claim``), read by the pattern floor.

The floor always runs (the model layer, ``checks.model_layer``, adds the claims it reads by
meaning; both go to the one verifier in ``checks.grounding``). It reads English and German, on
the text as ``normalize.fold`` leaves it (lookalike letters, soft hyphens and other invisibles,
dashes, typographic quotes folded), one sentence at a time:

- ``order``: an order code, in any case and form (``vocab.find_codes``), "for example" included;
- ``status``: a status stated as a fact, with its subject ("I'll make sure the payment is
  matched" states nothing; "shipped when your payment cleared" does), in either German word order
  ("wurde GH56JK78MN versandt", "dass es versandt wurde"), as a headline ("GH56JK78MN: shipped"),
  with us as the subject ("we shipped GH56JK78MN"); "I can confirm", "according to our records"
  are our own statement, not a hedge;
- ``not_found``: "we could not find your order" (not "... your payment");
- ``license``: the license issued, or not yet;
- ``date``: a date in any common form (``2026/12/24``, ``24.12.2026``, ``24.12.``, ``24/12``,
  ``20261224``, "the twenty-fourth of December", "24. Dezember", "am vierundzwanzigsten
  Dezember", "Christmas Eve"), tied to what it dates (placed / ship / delivery / refund); a day
  without its month ("due on the 24th", "am 24. geliefert") is month 0 and compared by the day
  alone (``date_in``), and only where a word of what it dates is near (not a bare "by"); a
  calendar week ("KW 51", "in der 50. Kalenderwoche", "calendar week 52") is month -N and holds
  the dates of that ISO week;
- ``frame``: a promised time frame ("within 3 days", "innerhalb von zwei Tagen");
- ``item`` / ``quantity`` / ``price``: a SKU, a count of an item before or after it ("twelve
  printed manuals", "two hardware license keys" for "Hardware license key (USB)", "Printed
  manual x3"), an amount of money (also in words: "forty-five euros", "fünfundvierzig Euro");
- ``promise``: a refund, credit, discount, replacement or compensation promised or reported as
  granted, in other words too ("We're refunding", "Refund approved!", "your payment will be
  returned", "I've gone ahead and refunded", "we'll cover the cost", "wir erstatten",
  "Rückerstattung genehmigt", "Ich habe die Rückzahlung veranlasst", German refund compounds and
  separable verbs: "wir schreiben Ihnen 10 Euro gut"); the customer's own words quoted as such
  ('You wrote: "..."') are not ours;
- ``draft``: the answer saying a reply was drafted or saved ("I drafted a reply", "which you can
  now review"), or naming a draft id.

Work is linear and bounded: every pattern has bounded gaps and no nested unbounded repeat, a
sentence is read in pieces of at most ``MAX_PIECE`` characters, and the caller's deadline is
looked at between pieces.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from datetime import date
from typing import Any, Iterable

from ..redact import one_line as safe_line
from ..vocab import find_codes, parse_date
from .needles import NEEDLES, PHRASES, WORDS
from .normalize import key

MAX_TEXT = 20_000     # characters of one text that are read
MAX_PIECE = 400       # characters of one sentence piece
MAX_PIECES = 2_000    # pieces of one text (a hard-wrapped line is read twice: alone and joined)
MAX_CLAIMS = 4_000    # claims of one text

# The codes our own prompts and messages give as the format's examples (tools.py, vocab).
FORMAT_EXAMPLES = frozenset({"GH56JK78MN", "ORD-20261234"})


@dataclass(frozen=True)
class Claim:
    """One fact a text states. ``value`` by kind: status -> a status word; not_found -> True;
    license -> bool; date -> frozenset of (year or None, month, day); frame -> the words;
    item -> a SKU or a product's words; product -> a product's name as written; quantity -> int
    (``what``: the item); item_count -> int (items the order holds); price -> cents;
    promise -> the promise's words; order -> the code; draft -> a draft id or "" (a reply
    said to be drafted); sent -> True (a reply said to have been sent to the customer)."""
    kind: str
    value: Any
    sentence: str
    start: int = 0
    order: str | None = None     # the order it is about; None: the ticket's
    what: str | None = None      # date: placed | ship | delivery | refund; quantity: the item
    quoted: bool = False         # inside text copied from a tool result or a question
    example: bool = False        # order: written as an example ("for example ...")
    hedged: bool = False         # date: conditional, reported or modal (checked only as a date)
    source: str = "floor"        # floor | model
    every: bool = False          # status, license: said of every order ("both of your orders have shipped")


def one_line(s: Any, n: int = 300) -> str:
    return safe_line(s, n)


def clip_text(v: Any) -> str:
    return v[:MAX_TEXT] if isinstance(v, str) else ""


class _Lazy:
    """A pattern compiled on its first use, and tried only on a text holding a needle of each of
    its needle groups (``needles.py``: groups of literal strings such that every match contains
    one string of each, derived from the pattern by ``tests/gen_needles.py``): ``ask`` pays for
    the patterns a text can match, in the checks' worker thread, not for all of them at import
    (compiling them all took ~220 ms; with one needle group instead of several, ``ask`` compiled
    71 patterns of which 16 matched). Until it is compiled, a pattern also wants the needles that
    every match holds as whole words (``needles.WORDS``) among the text's words: "is" inside
    "this" or "we" inside "went" compiled a pattern in vain (a compiled one keeps the cheaper
    substring test alone: what it would skip costs less than the words)."""

    __slots__ = ("_args", "_ic", "_needles", "_phrases", "_rx", "_words")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args, self._rx = (pattern, flags), None
        self._ic = bool(int(flags) & re.IGNORECASE)  # a plain bool: "&" of two RegexFlags is slow
        key = needle_key(pattern, flags)
        self._needles = NEEDLES.get(key)
        self._words = WORDS.get(key)
        self._phrases = PHRASES.get(key)
        _ALL.append(self)

    def get(self) -> re.Pattern:
        rx = self._rx
        if rx is None:  # two threads may both compile it: the same pattern either way
            rx = self._rx = re.compile(*self._args)
        return rx

    def may_match(self, text: str) -> bool:
        """False only when no match is possible anywhere in TEXT: for one of the needle groups,
        none of its needles is in it."""
        groups = self._needles
        if groups is None:
            return True
        hay = _lowered(text) if self._ic else text
        for group in groups:  # loops, not all(any(...)): this runs ~300 times a sentence
            for n in group:
                if n in hay:
                    break
            else:
                return False
        return True

    def worth_trying(self, text: str) -> bool:
        """``may_match``, and for a pattern not compiled yet ``words_hold`` too. False only when
        no match is possible anywhere in TEXT (a search of a window of it: ``_worth``)."""
        if not self.may_match(text):
            return False
        if self._rx is not None:
            return True
        return self.words_hold(text)

    def words_hold(self, text: str) -> bool:
        """False only when no match is possible anywhere in TEXT: for one of the needle groups,
        no needle is in it as the pattern holds it (a whole-word one among TEXT's words, another
        anywhere), or for one of the phrase groups, no phrase is in TEXT's words joined by one
        space. Says nothing of a search that ends before TEXT does."""
        words, phrases = self._words, self._phrases
        if words is None and phrases is None:
            return True
        hay = _lowered(text) if self._ic else text
        have, joined = _words_of(hay)
        if words is not None:
            for group, whole in zip(self._needles, words):
                if not whole:
                    continue
                for n in group:
                    if n in have if n in whole else n in hay:
                        break
                else:
                    return False
        if phrases is not None:
            for group in phrases:
                for ph in group:
                    if ph in joined:
                        break
                else:
                    return False
        return True

    def _worth(self, text: str, pos: int, endpos: int | None) -> bool:
        """``worth_trying`` of a search of TEXT[POS:ENDPOS]: a window short of the whole text is
        asked for its needles alone (a match lies within it, and no needle is taken from a
        lookaround; not for its words: the end of a window is a word's edge to ``\\b``, "is" of
        "isn" at ENDPOS 2), so a search of a few characters of a long text costs a few characters,
        not the text: ``sentences`` asks ~5 of them at every full stop."""
        if pos or (endpos is not None and endpos < len(text)):
            return self.may_match(text[pos:endpos])
        return self.worth_trying(text)

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match | None:
        if not self._worth(text, pos, endpos):
            return None
        return self.get().search(text, pos) if endpos is None else self.get().search(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int | None = None) -> re.Match | None:
        if not self._worth(text, pos, endpos):
            return None
        return self.get().match(text, pos) if endpos is None else self.get().match(text, pos, endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterable[re.Match]:
        if not self._worth(text, pos, endpos):
            return iter(())
        return self.get().finditer(text, pos) if endpos is None else self.get().finditer(text, pos, endpos)

    @property
    def groupindex(self) -> Any:
        return self.get().groupindex


_ALL: list[_Lazy] = []
# What a case-insensitive pattern's letter matches that lower() does not make that letter: the
# dotless i, the long s, and the dotted capital I (lower() makes it two characters, "i" and a
# combining dot, which would split "KİSTE"). tests/test_needles.py checks every cased character.
_IC_EXTRA = {0x130: "i", 0x131: "i", 0x17F: "s"}
_last_lowered: tuple[str, str] = ("", "")  # one entry: the ~60 promise patterns ask of one sentence
_last_words: tuple[str, frozenset[str], str] = ("", frozenset(), "  ")
_WORD_RUN = re.compile(r"\w+")  # a whole word is a run of what \b stands between


def _lowered(text: str) -> str:
    global _last_lowered
    last = _last_lowered  # one tuple, read and written whole: safe across the checks' threads
    if last[0] is text:
        return last[1]
    low = text.lower() if text.isascii() else text.translate(_IC_EXTRA).lower()
    _last_lowered = (text, low)
    return low


def _words_of(hay: str) -> tuple[frozenset[str], str]:
    """The words of HAY (the text, or as ``_lowered`` made it: the same words, lower-cased;
    tests/test_needles_words.py checks every character keeps its length and its ``\\w``), and
    the same joined by one space, a space before the first and after the last."""
    global _last_words
    last = _last_words
    if last[0] is hay:
        return last[1], last[2]
    found = _WORD_RUN.findall(hay)
    have, joined = frozenset(found), f" {' '.join(found)} "
    _last_words = (hay, have, joined)
    return have, joined


def needle_key(pattern: str, flags: int) -> str:
    """The key of a pattern's needles in ``needles.NEEDLES``."""
    return hashlib.blake2b(f"{flags}:{pattern}".encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def lazy_patterns() -> list[tuple[str, int]]:
    """Every pattern of the floor, as (pattern, flags): what ``tests/gen_needles.py`` reads."""
    return [x._args for x in _ALL]


def _lazy(p: str, flags: int = 0) -> Any:
    return _Lazy(p, flags)


def _rx(p: str) -> Any:  # the text is folded: a typographic apostrophe is "'" already
    return _Lazy(p, re.I)


def codes_in(text: str) -> list[tuple[int, str, str]]:
    """(position, CODE, as written) of the order codes in TEXT (``vocab.find_codes``)."""
    return [(f.start, str(f.code), f.written) for f in find_codes(text)]


# ----------------------------------------------------------------------------- sentences
_SPLIT_RE = _lazy(r"[.!?]+(?=[\s\"')\]]|$)|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_ABBR_RE = _lazy(r"\b(?:e\.g|i\.e|etc|approx|vs|no|nr|dr|mr|mrs|ms|st|jan|feb|mar|apr|jun|jul|aug|"
                      r"sep|sept|oct|nov|dec|z\.b|bzw|ca|usw|d\.h|u\.a)$", re.I)
_DAY_RE = _lazy(r"(?<![\d.,/-])(?:\d{1,2}\.)?\d{1,2}$")  # "24. Dezember", "bis 6.12. in der Hand"
_CLAUSE_RE = _lazy(r"[,;:()]|\s-\s|\b(?:but|however|although|though|whereas|while|aber|jedoch|doch|"
                        r"obwohl|allerdings)\b", re.I)


_NEXT_REACH = 24  # characters after a full stop the two patterns above can match (3 blanks, a month)
# A line break that a mail program or a person's hard wrap put inside a sentence: the line before
# ends in a letter, a digit or a comma (no full stop, colon or semicolon: a list's heading, a
# headline), and the next line goes on in the same paragraph (not blank, not a list item).
_WRAP_BEFORE_RE = re.compile(r"[^\W_][\"')\]]?,?[ \t]*\r?$")
_WRAP_AFTER_RE = re.compile(r"[ \t]{0,8}(?![-*+\u2022\u2013\u2014>#|]|\d{1,3}[.)]\s)\S")


def _wrapped_at(text: str, i: int) -> bool:
    """Is the line break at TEXT[i] a wrap inside a sentence (see above)?"""
    return _WRAP_BEFORE_RE.search(text, max(0, i - 4), i) is not None and \
        _WRAP_AFTER_RE.match(text, i + 1, i + 16) is not None


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, a long one cut into pieces of at most ``MAX_PIECE``
    characters at a space (a run-on answer costs the same per character as any other)."""
    return [(a, b) for a, b, _, _ in pieces_of(text)]


OVERLAP = 100  # characters of a long sentence read on either side of a piece cut out of it


def pieces_of(text: str) -> list[tuple[int, int, int, int]]:
    """(start, end, read from, read to) of each piece of TEXT (``sentences``): a piece cut out
    of a long sentence is read with up to ``OVERLAP`` characters of the sentence on either side
    (to a space), so a claim the cut went through ("we will | refund you") is read whole, in the
    piece it begins in (``extract`` keeps a piece's claims that begin between start and end)."""
    out: list[tuple[int, int, int, int]] = []
    start = 0

    def add(a: int, b: int) -> None:
        first, parts = a, []
        while b - a > MAX_PIECE:
            cut = text.rfind(" ", a + MAX_PIECE // 2, a + MAX_PIECE)
            cut = cut if cut > a else a + MAX_PIECE
            parts.append((a, cut))
            a = cut
        if text[a:b].strip():
            parts.append((a, b))
        if len(parts) == 1:
            out.append((*parts[0], *parts[0]))
            return
        for x, y in parts:
            lo = max(first, x - OVERLAP)
            if lo > first:  # from a word's start
                sp = text.find(" ", lo, x)
                lo = sp + 1 if sp >= 0 else lo
            hi = min(b, y + OVERLAP)
            if hi < b:  # to a word's end
                sp = text.rfind(" ", y, hi)
                hi = sp if sp > y else hi
            out.append((x, y, lo, hi))

    wrap_from: int | None = None  # where the lines a hard wrap may have cut begin
    for m in _SPLIT_RE.finditer(text):
        if m.group(0) == "\n" and _wrapped_at(text, m.start()):
            # a line a mail program may have wrapped inside a sentence: read as a line (as
            # every line is) and, below, with the lines it goes on in (as one sentence)
            wrap_from = start if wrap_from is None else wrap_from
            add(start, m.end())
            start = m.end()
            continue
        if m.group(0)[0] == "." and m.end() - start < MAX_PIECE and (
                _ABBR_RE.search(text, max(start, m.start() - 6), m.start())
                or (_DAY_RE.search(text, max(start, m.start() - 6), m.start())
                    and (_MONTH_NEXT_RE.match(text, m.end(), m.end() + _NEXT_REACH)
                         or _LOWER_NEXT_RE.match(text, m.end(), m.end() + _NEXT_REACH)))):
            # "24. Dezember", "am 24. geliefert", "bis 6.12. in der Hand"
            continue
        add(start, m.end())
        if wrap_from is not None:
            add(wrap_from, m.end())
            wrap_from = None
        start = m.end()
        if len(out) >= MAX_PIECES:
            return out[:MAX_PIECES]
    if text[start:].strip():
        add(start, len(text))
    if wrap_from is not None:
        add(wrap_from, len(text))
    return out[:MAX_PIECES]


REACH = 100  # characters before a claim that can hedge it, 60 after


_BOUNDS: dict[str, list[tuple[int, int]]] = {}


def clause_of(sent: str, a: int, b: int) -> tuple[str, str, str]:
    """(before, claim, after) of the clause of SENT holding SENT[a:b], within ``REACH``."""
    bounds = _BOUNDS.get(sent)
    if bounds is None:
        bounds = [m.span() for m in _CLAUSE_RE.finditer(sent)]
        if len(_BOUNDS) > 64:
            _BOUNDS.clear()
        _BOUNDS[sent] = bounds
    lo, hi = max(0, a - REACH), min(len(sent), b + 60)
    for i, (s, e) in enumerate(bounds):
        if e <= a:
            lo = max(lo, e)
        elif s >= b:
            # a condition after a comma is still the claim's: "the license is active, once the
            # payment is matched" / "ist aktiv, sobald ..." (the clause after it, up to its end)
            # (not "..., if you were wondering": that one reports nothing and hedges nothing)
            nxt = bounds[i + 1][0] if i + 1 < len(bounds) else len(sent)
            if sent[s] == "," and _COND_AFTER_RE.match(sent, e) and not HEDGE_REPORT.search(sent[e:nxt]):
                hi = min(len(sent), b + 60, nxt)
            else:
                hi = min(hi, s)
            break
    return sent[lo:a], sent[a:b], sent[b:hi]


# ----------------------------------------------------------------------------- hedges
_COND = (r"if|once|unless|whether|in\s+case|provided|as\s+soon\s+as|until|before|after|when|whenever|"
         r"wenn|sobald|falls|ob|bevor|nachdem|bis(?!\s+(?:zum|zur|spätestens|morgen|ende|anfang|mitte|\d)|\s*$)")
_REPORT = (r"say|says|said|mention|mentions|mentioned|wrote|write|writes|claim|claims|claimed|think|thinks|"
           r"believe|believes|asked|ask|asks|wonder|wondering|report|reported|according\s+to|question|"
           r"schreiben|schrieben|sagen|sagten|fragen|fragten|laut|erw[äa]hnen|meinen")
_INTENT = (r"will|would|should|could|can|may|might|shall|must|'ll|'d|going\s+to|expect|expected|likely|usually|"
           r"typically|normally|hopefully|soon|make\s+sure|ensure|see\s+to\s+it|check|checking|verify|"
           r"try|trying|hope|want|need|needs|as\s+soon|wird|werden|würde|sollte|könnte|kann|können|"
           r"voraussichtlich|sicherstellen|prüfen|bald")
_NEG = r"not|n't|never|no|cannot|unable|nothing|neither|nor|nicht|kein|keine|keinen|noch\s+nicht|nie|weder"
HEDGE_REPORT = _rx(rf"\b(?:{_REPORT})\b|\?")
HEDGE_COND = _rx(rf"\b(?:{_COND})\b")
_COND_AFTER_RE = _rx(rf"\s{{0,3}}(?:{_COND})\b")
HEDGE_INTENT = _rx(rf"(?:\b(?:{_INTENT})\b|'ll\b|'d\b)")
HEDGE_NEG = _rx(rf"(?:\b(?:{_NEG})\b|n't\b)")
_HEDGE_BEFORE = _rx(rf"\b(?:{_REPORT}|{_COND}|{_INTENT})\b|'ll\b|'d\b|\?")  # the three above, in one pass


_PAST_RE = _rx(r"\b(?:has|have|had|was|were|wurde|wurden)\b|\w(?:ed|ent|ived)\b")
_PRESENT_RE = _rx(r"\b(?:is|are|be|ist|sind|wird)\b")


# frames in which we state a fact ourselves, which the hedge words inside them ("can", "laut") do not hedge
_ASSERT_RE = _rx(r"\b(?:i|we)\s*(?:can|could|'m\s+(?:happy|glad|pleased)\s+to|am\s+(?:happy|glad|pleased)\s+to|"
                 r"are\s+(?:happy|glad|pleased)\s+to|'re\s+(?:happy|glad|pleased)\s+to)\s+(?:now\s+|already\s+)?"
                 r"(?:confirm|see|tell\s+you|assure\s+you|report|say|let\s+you\s+know)\b|"
                 r"\b(?:according\s+to|laut)\s+(?:(?:our|the|unserem|unseren|unserer|der|dem|des)\s+)?(?:\w+\s+)?(?:records?|system|data|database|"
                 r"tracking|lookup|daten|unterlagen|system|sendungsverfolgung)\b|"
                 r"\b(?:ich|wir)\s+(?:kann|können)\s+(?:ihnen\s+)?(?:bestätigen|mitteilen|sagen)\b|"
                 # eagerness, whose "can't" negates nothing: "We can't wait to refund you"
                 r"\b(?:can(?:'t|not|\s+not)|could(?:n't|\s+not)|can\s+hardly|could\s+hardly)\s+wait\s+(?:to|for)\b|"
                 r"\b(?:kann|können)\s+es\s+(?:kaum|gar\s+nicht)\s+erwarten\b")


def _asserted(before: str) -> str:
    return _ASSERT_RE.get().sub(" ", before) if before else before


# "as you asked", "wie gewünscht": what the customer wanted, not a report of what they said
_AS_ASKED_RE = re.compile(r"\b(?:as|like)\s+(?:you\s+)?(?:asked|requested|wished|wanted)(?:\s+(?:for|us))?\b|"
                          r"\bwie\s+(?:gewünscht|besprochen|gewollt|erbeten)\b", re.I)


def hedged(before: str, after: str = "", said: str = "", lead: bool = False) -> bool:
    """A claim whose clause is reported or a question anywhere, or conditional / intended /
    modal before it ("once it has shipped", "it should arrive", "I'll make sure it is paid"), or
    in the present tense with a condition after it ("the license is issued as soon as the
    payment is confirmed"; but "it shipped when your payment cleared" is a fact). "I can
    confirm", "according to our records" are our own statement, no hedge."""
    before = _asserted(before)
    if "ask" in after or "wish" in after or "want" in after or "request" in after or "wie" in after:
        after = _AS_ASKED_RE.sub(" ", after)
    if _HEDGE_BEFORE.search(before) or HEDGE_REPORT.search(after):
        return True
    general = bool(_PRESENT_RE.search(said) or not _PAST_RE.search(said))
    return general and bool(lead or HEDGE_COND.search(after[:40]) or _GENERIC_REASON.search(before[-40:]))


# how things work, given as a reason: "nothing has shipped because the license is sent by email"
# (present tense, a generic "the", not "your")
_GENERIC_REASON = _rx(r"\b(?:because|since|as|weil|da)\s+(?:the|a|an|der|die|das|ein|eine)\s+$")


_LEAD_COND_RE = _rx(rf"^\W{{0,3}}(?:{_COND})\b")  # "Once the payment is matched, the license is issued."
_PART_RE = re.compile(r"[;:]|\s[-\u2013\u2014]\s")


def _lead_at(sent: str, p: int) -> bool:
    """Does the part of SENT holding P (after its last ";" or ":") begin with a condition?
    "... not yet matched; once it is, your license is issued" is as conditional as a sentence
    that begins with "Once"."""
    cut = 0
    for m in _PART_RE.finditer(sent, max(0, p - REACH), p):
        cut = m.end()
    return bool(cut) and _LEAD_COND_RE.search(sent[cut:p]) is not None


# ----------------------------------------------------------------------------- statuses
_ADV = r"(?:(?:already|now|just|also|still|since|successfully|recently|finally|today|yesterday|both|all|each)\s+)?"
_AUX = (rf"(?:has|have|had|is|are|was|were|got|'s)(?P<neg>n't|\s+not|\s+never)?\s+{_ADV}(?:been\s+)?{_ADV}")
_STATUS_WORDS = {
    "shipped": r"shipped|dispatched|sent\s+out|sent\s+off|posted|mailed|handed\s+(?:over\s+)?to\s+the\s+carrier|"
               r"in\s+transit|on\s+(?:its|the|their)\s+way|out\s+for\s+delivery|left\s+(?:our|the)\s+(?:warehouse|depot|"
               r"facility|building)|picked\s+up\s+by\s+the\s+(?:carrier|courier)|handed\s+(?:over\s+)?to\s+(?:the\s+)?"
               r"(?:carrier|courier|dhl|ups|dpd|hermes|gls|fedex|usps|post|postal\s+service|royal\s+mail)|"
               r"with\s+(?:the\s+)?(?:courier|carrier|dhl|ups|dpd|hermes|gls|fedex|usps|postal\s+service|royal\s+mail)|"
               r"on\s+(?:the|a|its)\s+(?:delivery\s+)?(?:truck|van|lorry)|(?:loaded|put)\s+on(?:to)?\s+(?:the|a)\s+"
               r"(?:delivery\s+)?(?:truck|van|lorry)",
    "delivered": r"delivered|arrived", "cancelled": r"cancell?ed|voided|void|called\s+off",
    "refunded": r"refunded",
    "paid": r"(?:fully\s+)?paid(?:\s+in\s+full)?|settled(?:\s+in\s+full)?",
}
_CODE_SUBJ = r"(?=[\w-]{0,11}\d)[\w-]{10,12}"  # an order code as the subject: it holds a digit
_SUBJECT = r"(?:order|orders|it|parcel|parcels|package|packages|shipment|purchase|delivery|item|items|payment|bestellung|paket|sendung|zahlung)"
# the German middle field between the auxiliary and the participle: "wurde Ihnen gestern zugestellt",
# "ist heute erfolgreich versandt" (a closed list: a negation there is read by the pattern's own group)
_DE_MID = (r"(?:(?:bereits|schon|heute|gestern|soeben|eben|jetzt|nun|inzwischen|mittlerweile|erfolgreich|vorhin|"
           r"morgens|heute\s+morgen|gestern\s+abend|ihnen|dir|euch|an\s+sie|an\s+dich|per\s+\w{2,12}|beide|alle|bisher|bislang|"
           r"bei\s+(?:ihnen|dir)|zusammen\s+mit\s+(?:der\s+bestellung\s+|bestellung\s+)?(?=[\w-]{0,11}\d)[\w-]{10,12})\s+){0,3}")
# the subject after the verb in German ("Laut System wurde GH56JK78MN versandt", "Heute ist Ihr Paket zugestellt worden")
_DE_SUBJ = (r"(?:(?:(?:ihre|die|ihr|das|der)\s+)?(?:bestellung|paket|sendung|lieferung|zahlung|auftrag)\s+(?:[\w-]{10,12}\s+)?|"
            r"(?=[\w-]{0,11}\d)[\w-]{10,12}\s+)?")
# A payment said to be received, not matched to the order (below, ``_RECEIVED_RE``)
RECEIVED = "payment_received"
NOT = "not:"  # a status claimed not to be ("has not shipped"): "not:shipped"
# a German subject and a negation after an inverted verb: "Zugestellt ist die Bestellung noch nicht"
_DE_INV_NEG = (r"(?:\s+(?:(?:die|ihre|das|ihr|der|ihr)\s+(?:bestellung|sendung|lieferung|paket|ware|auftrag)(?:\s+[\w-]{10,12})?|"
               r"sie|es|(?=[\w-]{0,11}\d)[\w-]{10,12})\s+(?:(?:leider|bisher|bislang|aber|jedoch|bis\s+jetzt)\s+)?"
               r"(?P<neg>(?:noch\s+)?nicht)\b)?")
_STATUS_RES: list[tuple[str, Any]] = [(st, _rx(rf"\b{_AUX}(?:{w})\b")) for st, w in _STATUS_WORDS.items()]
_STATUS_RES += [
    ("paid", _rx(rf"\b(?:payment|it|order)(?:\s+(?:for|on|of)\s+(?:order\s+|your\s+order\s+)?[\w-]{{10,12}})?\s+{_AUX}"
                 r"(?:(?:fully\s+)?paid|confirmed|completed|matched|cleared|received|"
                 rf"processed|booked|allocated|assigned|successful|through|applied|registered|in(?=\s*(?:[.!,;]|$)))\b")),
    ("paid", _rx(rf"\b(?:order|it)\s+{_AUX}(?:fully\s+)?paid\b")),
    ("paid", _rx(r"\b(?:your|the)\s+payment(?:\s+(?:for|on|of)\s+(?:order\s+|your\s+order\s+)?[\w-]{10,12})?\s+"
                 r"(?:has\s+|have\s+)?(?:(?:already|just|now|finally)\s+)?(?:cleared|went\s+through|gone\s+through|arrived|"
                 r"came\s+through|come\s+through|been\s+received|been\s+booked|landed)\b")),
    ("paid", _rx(r"\b(?:matched|received|confirmed|allocated|got|booked|processed|registered|credited)\s+your\s+payment\b")),
    # still with us: "ORD-20261234 is still being packed", "wird gerade verpackt": not shipped
    ("shipped", _rx(rf"\b(?:{_SUBJECT}(?:\s+[\w-]{{10,12}})?|{_CODE_SUBJ}|they)\s+(?:is|are|'s)\s+(?:still\s+|currently\s+|now\s+|just\s+)*"
                    r"(?P<neg>being\s+(?:packed|prepared|picked|assembled|put\s+together|got\s+ready|made\s+ready)|"
                    r"waiting\s+to\s+be\s+(?:shipped|dispatched|packed|picked\s+up)|(?:still\s+)?in\s+our\s+warehouse)\b")),
    ("shipped", _rx(r"\b(?:wird|werden)\s+(?:gerade\s+|noch\s+|derzeit\s+|aktuell\s+|momentan\s+|jetzt\s+)*"
                    r"(?P<neg>verpackt|kommissioniert|gepackt|zusammengestellt|für\s+den\s+versand\s+vorbereitet)\b")),
    ("shipped", _rx(r"\b(?:liegt|liegen|ist|sind)\s+(?:noch\s+|derzeit\s+|aktuell\s+)*(?P<neg>(?:bei\s+uns\s+)?(?:in\s+unserem|im)\s+"
                    r"lager)\b")),
    # still with us, waiting for the carrier: "wartet auf die Abholung durch den Versanddienstleister",
    # "is waiting to be collected by the courier", "we're still preparing your parcel"
    ("shipped", _rx(r"\b(?:wartet|warten)\s+(?:noch\s+|derzeit\s+)*(?P<neg>auf\s+(?:die\s+)?abholung)\b|"
                    r"\b(?:is|are|'s)\s+(?:still\s+|currently\s+)*(?P<neg2>waiting\s+(?:for\s+(?:the\s+)?(?:carrier|courier|pick-?up|"
                    r"collection)|to\s+be\s+collected))\b")),
    ("shipped", _rx(r"\b(?:we|i)(?:'re|\s+are|'m|\s+am)\s+(?:still\s+|currently\s+|now\s+)*(?P<neg>preparing|packing|packaging|"
                    r"getting\s+ready)\s+(?:your|the)\s+(?:parcel|package|order|shipment)\b")),
    ("shipped", _rx(rf"\b{_SUBJECT}(?:\s+(?:for\s+|of\s+)?[\w-]{{10,12}})?\s+(?:(?:already|just|both|all|each)\s+)?(?:shipped|dispatched|went\s+out|"
                    r"left\s+our\s+warehouse|left\s+us|left\s+our\s+(?:hands|depot|building))\b")),
    # where a parcel on its way waits: "your parcel is at your local depot", "sitting at the post office"
    ("shipped", _rx(rf"\b(?:{_SUBJECT}(?:\s+[\w-]{{10,12}})?|{_CODE_SUBJ})\s+(?:is|are|'s)\s+(?:now\s+|already\s+|currently\s+)?"
                    r"(?:sitting\s+|waiting\s+(?:for\s+you\s+)?)?at\s+(?:your|the)\s+(?:local\s+|nearest\s+)?(?:depot|post\s+office|"
                    r"parcel\s+shop|pick-?up\s+point|collection\s+point|sorting\s+(?:centre|center|office)|"
                    r"distribution\s+(?:centre|center))\b")),
    # in the customer's locker or letterbox: "Das Paket liegt in Ihrer Packstation", "it's in your parcel locker"
    ("delivered", _rx(r"\b(?:liegt|liegen|ist|sind|befindet\s+sich|befinden\s+sich)\s+(?:(?:bereits|schon|jetzt|seit\s+\w{3,12}"
                      r"(?:\s+(?:morgen|mittag|abend|früh))?|heute|gestern)\s+){0,3}"
                      r"(?:in|an)\s+(?:ihrer|deiner|ihrem|deinem)\s+(?:packstation|postfiliale|filiale|paketbox|paketshop|"
                      r"briefkasten)\b|\b(?:is|are|'s)\s+(?:now\s+|already\s+)?(?:waiting\s+(?:for\s+you\s+)?)?in\s+"
                      r"your\s+(?:parcel\s+)?(?:locker|letterbox|letter\s+box)\b")),
    # "Ihre Bestellung ist schon bei DHL"
    ("shipped", _rx(r"\b(?:ist|sind|liegt|liegen|befindet\s+sich|befinden\s+sich)\s+(?:schon\s+|bereits\s+|jetzt\s+|inzwischen\s+)?"
                    r"bei\s+(?:dhl|dpd|ups|hermes|gls|fedex|der\s+(?:deutschen\s+)?post|dem\s+(?:paket)?dienst|dem\s+zusteller)\b")),
    ("delivered", _rx(rf"\b{_SUBJECT}(?:\s+(?:for\s+|of\s+)?[\w-]{{10,12}})?\s+(?:(?:already|just)\s+)?(?:arrived|"
                      r"was\s+handed\s+to\s+you)\b")),
    ("shipped", _rx(rf"\b(?:{_SUBJECT}(?:\s+[\w-]{{10,12}})?|{_CODE_SUBJ})\s+(?:has|have|was|were|is|are|'s)\s+(?:now\s+|already\s+|"
                    r"just\s+)?(?:been\s+)?(?:sent(?:\s+out)?|en\s+route|on\s+route|underway|under\s+way|in\s+the\s+post|"
                    r"gone\s+out)\b")),
    ("delivered", _rx(r"\bdelivery(?:\s+(?:of|for)\s+(?:your\s+order\s+|order\s+)?[\w-]{10,12})?\s+(?:was|has\s+been|is)\s+"
                      r"(?:successfully\s+)?(?:completed|successful|made|confirmed|complete)\b")),
    ("cancelled", _rx(rf"\b(?:we|i)(?:\s+have|'ve|\s+just|\s+already|\s+now){{0,3}}\s+(?:cancell?ed|voided)\s+"
                      rf"(?:your\s+orders?\b|the\s+orders?\b|it\b|(?:both|all|each)\s+(?:of\s+)?(?:your\s+|the\s+)?"
                      rf"orders\b|{_CODE_SUBJ})")),
    # the invoice settled, a transfer booked to the order, "All paid!", "Geld ... der Bestellung zugeordnet"
    ("paid", _rx(r"\b(?:invoice|bill|balance|rechnung)\s+(?:is|was|has\s+been|ist|wurde)\s+(?:now\s+|already\s+|fully\s+|bereits\s+|"
                 r"vollständig\s+|schon\s+)?(?:settled|paid(?:\s+in\s+full)?|cleared|beglichen|bezahlt)\b|"
                 r"\b(?:payment|transfer|money|funds)\s+(?:has\s+been|was|is)\s+(?:now\s+)?(?:booked|allocated|assigned|applied|"
                 r"matched)\s+(?:to|against)\s+(?:the|your)\s+order\b|^\W{0,3}(?:all|fully)\s+paid\b|"
                 r"\b(?:zahlung|geld|überweisung|betrag)\b(?:(?!nicht\b|noch\b|kein)[^.!?\n]){0,40}?\b(?:der\s+bestellung\s+|ihrer\s+"
                 r"bestellung\s+)zugeordnet\b")),
    # the order done with: "your order GH56JK78MN is complete", "Ihre Bestellung ist abgeschlossen"
    ("paid", _rx(rf"\b(?:(?:order|orders|purchase|it)(?:\s+[\w-]{{10,12}})?|{_CODE_SUBJ})\s+(?:is|are|'s|has\s+been|was|were)\s+"
                 r"(?:now\s+|fully\s+|already\s+|all\s+)?(?:complete|completed|fulfilled|finali[sz]ed)\b|"
                 r"\b(?:bestellung|auftrag)\s+(?:[\w-]{10,12}\s+)?(?:ist|wurde)\s+(?:jetzt\s+|bereits\s+|nun\s+|vollständig\s+)?"
                 r"(?:abgeschlossen|erledigt|abgewickelt)\b")),
    # stop 38 (blind pass): the matching done, the destination reached, signed for, handed to the courier,
    # cancelled because we had to
    ("paid", _rx(r"\b(?:zahlungs)?abgleich\w{0,3}\s+(?:(?:für|zu|zur|von)\s+(?:ihre\s+|die\s+|der\s+)?(?:bestellung\s+)?"
                 r"(?:[\w-]{10,12}\s+)?)?(?:ist|wurde)\s+(?:bereits\s+|inzwischen\s+|schon\s+|jetzt\s+|erfolgreich\s+){0,2}"
                 r"(?:erfolgt|abgeschlossen|durchgeführt|erledigt)\b")),
    ("paid", _rx(r"\bpayment\s+(?:matching|reconciliation)\s+(?:is|has\s+been|was)\s+(?:now\s+|already\s+)?(?:complete|completed|done|"
                 r"finished)\b|\b(?:payment|it)(?:\s+(?:for|on|of)\s+(?:order\s+)?[\w-]{10,12})?\s+(?:has\s+been|was|is)\s+"
                 r"(?:now\s+|already\s+|successfully\s+|fully\s+){0,2}reconciled\b")),
    ("delivered", _rx(r"\b(?:has|have|had)\s+(?:now\s+|already\s+|just\s+)?reached\s+(?:its|their|the)\s+(?:final\s+)?destination\b|"
                      r"\b(?:was|were|has\s+been|have\s+been)\s+(?:already\s+)?signed\s+for\b|"
                      r"\b(?:hat|haben)\s+(?:bereits\s+|schon\s+)?(?:ihr|sein)\s+ziel\s+erreicht\b")),
    ("shipped", _rx(r"\b(?:dem|der)\s+(?:kurier|paketdienst|zusteller|spediteur|versanddienstleister|paketboten|transportunternehmen|"
                    r"dhl|ups|dpd|hermes|gls|fedex|post)\s+(?:bereits\s+|schon\s+|heute\s+)?(?:übergeben|mitgegeben|ausgehändigt)\b")),
    ("cancelled", _rx(rf"\b(?:wir|ich)\s+(?:mussten|musste|haben|habe|müssen|muss)\s+(?:ihre\s+bestellung\s+|die\s+bestellung\s+|"
                      rf"{_CODE_SUBJ}\s+|sie\s+|es\s+)(?:leider\s+|bereits\s+|schon\s+){{0,2}}(?:stornieren|annullieren)\b")),
    ("cancelled", _rx(rf"\b(?:we|i)\s+(?:had\s+to|have\s+had\s+to|'ve\s+had\s+to)\s+(?:cancel|void)\s+(?:your\s+order\b|"
                      rf"the\s+order\b|it\b|{_CODE_SUBJ})")),
    # "gilt als bezahlt", "ist die Zahlung vollständig zugeordnet", "an der Packstation hinterlegt",
    # "Der Zusteller hat ORD-20261234 ausgeliefert"
    ("paid", _rx(r"\bgilt\s+(?:jetzt\s+|nun\s+|inzwischen\s+|bereits\s+|schon\s+){0,2}als\s+(?:vollständig\s+|komplett\s+)?"
                 r"(?:bezahlt|beglichen)\b|\b(?:wurde|ist)\s+(?:die\s+|ihre\s+)?(?:zahlung|überweisung)\s+(?:(?:bereits|schon|"
                 r"inzwischen|jetzt|nun|vollständig|komplett|erfolgreich)\s+){0,2}(?:zugeordnet|verbucht|bestätigt)\b")),
    ("delivered", _rx(r"\b(?:wurde|ist|wurden|sind)\s+" + _DE_SUBJ + _DE_MID + r"(?:an|in)\s+(?:der|die|ihrer|einer)\s+"
                      r"(?:packstation|postfiliale|filiale|paketshop|paketbox|abholstation)\s+(?:hinterlegt|abgegeben|"
                      r"zugestellt|eingelegt)\b")),
    ("delivered", _rx(rf"\b(?:der\s+)?(?:zusteller|kurier|paketbote|bote|fahrer|dhl|dpd|ups|hermes|gls)\s+hat\s+"
                      rf"(?:{_CODE_SUBJ}\s+|ihr\s+paket\s+|das\s+paket\s+|ihre\s+bestellung\s+|die\s+sendung\s+|es\s+)"
                      r"(?:(?:bereits|schon|heute|gestern|erfolgreich)\s+){0,2}(?:ausgeliefert|zugestellt|abgegeben|abgeliefert)\b")),
    # "Die Bestellung haben wir storniert" (the object first)
    ("cancelled", _rx(r"\b(?:bestellung|auftrag)\s+(?:[\w-]{10,12}\s+)?(?:haben|habe)\s+(?:wir|ich)\s+"
                      r"(?:(?!nicht\b|noch\b)\S{1,20}\s+){0,2}?(?P<neg>nicht\s+|noch\s+nicht\s+)?(?:storniert|annulliert)\b")),
    # "Ihre Bestellung ist jetzt storniert", "wurde bereits storniert"
    ("cancelled", _rx(r"\b(?:wurde|ist|wurden|sind)\s+(?:(?:bereits|schon|jetzt|inzwischen|nun|soeben|heute)\s+){0,2}"
                      r"(?P<neg>nicht\s+|noch\s+nicht\s+)?(?:storniert|annulliert)\b")),
    ("cancelled", _rx(rf"\b(?:wir|ich)\s+(?:haben|habe)\s+(?:ihre\s+bestellung\s+|die\s+bestellung\s+|{_CODE_SUBJ}\s+)"
                      rf"(?:\S{{1,20}}\s+){{0,2}}?(?:storniert|annulliert)\b")),
    ("delivered", _rx(rf"\b(?:{_SUBJECT}(?:\s+[\w-]{{10,12}})?|{_CODE_SUBJ})(?:\s+(?:has|have|was|were|is)|'s)\s+(?:now\s+|already\s+)?"
                      r"(?:been\s+)?(?:signed\s+for|dropped\s+off|left\s+(?:at|with)\s+(?:your|the)\s+(?:door|neighbou?r|"
                      r"address|mailbox|reception)|dropped\s+(?:off\s+)?(?:at|outside)\s+your\s+(?:front\s+|back\s+)?(?:door|"
                      r"doorstep|porch|address))\b")),
    # the courier's act, the order reaching the customer, the parcel at their door, their neighbour
    ("delivered", _rx(r"\b(?:courier|driver|carrier|postman|postwoman|dhl|ups|dpd|hermes|gls|fedex)\s+(?:has\s+|had\s+|just\s+)?"
                      r"(?:already\s+|just\s+)?(?:left|dropped(?:\s+off)?|delivered|handed(?:\s+over)?)\s+(?:it|them|the\s+(?:parcel|package|order)|your\s+(?:parcel|package|order))"
                      r"\s+(?:with|at|to|outside)\b")),
    ("delivered", _rx(rf"\b(?:{_SUBJECT}(?:\s+[\w-]{{10,12}})?|{_CODE_SUBJ})\s+(?:(?:has|have|had)\s+)?(?:already\s+|just\s+)?"
                      r"(?:reached|got\s+to)\s+you\b|\b(?:parcel|package|order|shipment|it)\s+(?:is|are|'s)\s+(?:now\s+|already\s+)?"
                      r"(?:at|outside|on)\s+your\s+(?:front\s+|back\s+)?(?:door|doorstep|porch)\b")),
    ("delivered", _rx(r"\b(?:nachbar|nachbarin|nachbarn)\s+(?:hat|haben)\s+(?:das\s+paket|die\s+sendung|ihre\s+bestellung|es)\s+"
                      r"(?:(?!nicht\b)\S{1,20}\s+){0,2}?(?:angenommen|entgegengenommen)\b")),
    ("shipped", _rx(rf"\b(?:we|i)(?:\s+have|'ve|\s+just|\s+already|\s+now){{0,3}}\s+(?:shipped|dispatched|sent\s+out|"
                    rf"posted|mailed)\s+(?:your\s+order\b|the\s+order\b|your\s+parcel\b|the\s+parcel\b|{_CODE_SUBJ})")),
    ("shipped", _rx(rf"\b(?:wir|ich)\s+(?:haben|habe)\s+(?:ihre\s+bestellung\s+|die\s+bestellung\s+|ihr\s+paket\s+|das\s+paket\s+|"
                    rf"{_CODE_SUBJ}\s+)(?:(?!(?:nicht|nie|niemals|kein\w*)\b)\S{{1,20}}\s+){{0,2}}?(?:versandt|verschickt|versendet|abgeschickt|rausgeschickt)\b")),
    # the payment said not to have come: "your payment has not reached us yet", "we haven't received your
    # payment", "Ihre Zahlung ist bei uns noch nicht eingegangen" (false where the lookup says it was received)
    (RECEIVED, _rx(r"\b(?:your|the)\s+(?:payment|transfer|bank\s+transfer|money|remittance)(?:\s+(?:for|on|of)\s+"
                   r"(?:order\s+)?[\w-]{10,12})?\s+(?:has|have|had|did)(?P<neg>n't|\s+not)\s+(?:yet\s+)?(?:reached\s+us|"
                   r"arrived|come\s+in|come\s+through|been\s+received|landed|reach\s+us|arrive)\b")),
    (RECEIVED, _rx(r"\b(?:we|i)(?:\s+(?:have|had|did|still))*(?P<neg>n't|\s+not|\s+never)\s+(?:yet\s+)?(?:received|got|seen|"
                   r"receive|get)\s+(?:your|the|any)\s+(?:payment|transfer|money)\b")),
    (RECEIVED, _rx(r"\b(?P<neg>no)\s+(?:payment|transfer|money)\s+(?:has|have)\s+(?:yet\s+)?(?:arrived|reached\s+us|come\s+in|"
                   r"been\s+received)\b")),
    (RECEIVED, _rx(r"\b(?:(?:ihre|die)\s+(?:zahlung|überweisung)\s+(?:ist|war)|(?:ist|war)\s+(?:ihre|die)\s+(?:zahlung|überweisung))"
                   r"\s+(?:bei\s+uns\s+)?(?:leider\s+)?(?P<neg>(?:noch\s+)?nicht)\s+(?:bei\s+uns\s+)?(?:eingegangen|angekommen|"
                   r"eingetroffen)\b")),
    (RECEIVED, _rx(r"\b(?:wir|ich)\s+(?:haben|habe)\s+(?:ihre|die)\s+(?:zahlung|überweisung)\s+(?:leider\s+)?"
                   r"(?P<neg>(?:noch\s+)?nicht)\s+erhalten\b")),
    # our own act denied: "we never handed it over to the carrier", "we haven't dispatched ORD-20261234 yet",
    # "the parcel never left our warehouse", "Wir haben das Paket noch nicht an den Paketdienst übergeben"
    ("shipped", _rx(rf"\b(?:we|i)(?P<neg>(?:\s+(?:still|have|had|did|do|'ve|'d))*(?:n't|\s+not|\s+never)(?:\s+(?:yet|actually|"
                    rf"even|ever|still))?)\s+(?:(?:shipped|ship|dispatched|dispatch|sent\s+out|send\s+out|posted|post|mailed|mail)\s+"
                    rf"(?P<obj>it|them|(?:your|the)\s+(?:order|parcel|package|shipment)|{_CODE_SUBJ})\b(?!\s+(?:to\s+(?:the\s+)?wrong|"
                    rf"separately|twice|again|by|with|via|from|as|in\s+(?:two|several|parts))\b)|(?:handed|hand|passed|pass|given|give)"
                    rf"\s+(?:over\s+)?(?P<obj2>it|them|(?:your|the)\s+(?:order|parcel|package|shipment)|{_CODE_SUBJ})\s+(?:over\s+|on\s+)?"
                    r"to\s+(?:the\s+)?(?:carrier|courier|dhl|ups|dpd|hermes|gls|fedex|usps|post|postal\s+service|royal\s+mail))\b")),
    ("shipped", _rx(rf"\b(?:{_SUBJECT}(?:\s+[\w-]{{10,12}})?|{_CODE_SUBJ})\s+(?P<neg>never|(?:has|have|had|did)(?:n't|\s+not|"
                    r"\s+never)(?:\s+yet)?)\s+(?:left|leave)\s+(?:our|the)\s+(?:warehouse|depot|facility|building|premises)\b")),
    ("shipped", _rx(rf"\b(?:wir|ich)\s+(?:haben|habe|hatten|hatte)\s+(?P<obj>ihre\s+bestellung|die\s+bestellung|ihr\s+paket|das\s+paket|"
                    rf"die\s+sendung|ihre\s+sendung|{_CODE_SUBJ}|sie|es)\s+(?:(?:leider|bisher|bislang|aber|doch)\s+)?"
                    r"(?P<neg>(?:noch\s+)?(?:nicht|nie|niemals)\s+)(?:(?:versandt|verschickt|versendet|abgeschickt)\b|"
                    r"an\s+(?:den|die|das)\s+(?:paketdienst|zusteller|kurier|spediteur|versanddienstleister|transportunternehmen|post)\s+"
                    r"(?:übergeben|weitergegeben)\b|an\s+(?:dhl|ups|dpd|hermes|gls|fedex)\s+(?:übergeben|weitergegeben)\b)")),
    ("paid", _rx(r"^\W{0,3}(?:payment|zahlung(?:seingang)?)(?:\s+(?:for|für)\s+[\w-]{10,12})?\s{0,2}[:-]?\s{0,2}"
                 r"(?:received|confirmed|cleared|matched|successful|complete|completed|erhalten|bestätigt|eingegangen|"
                 r"verbucht|zugeordnet)\b")),
    # German
    ("shipped", _rx(r"\b(?:wurde|ist|wurden|sind)\s+" + _DE_SUBJ + _DE_MID + r"(?P<neg>nicht\s+|noch\s+nicht\s+)?"
                    r"(?:versandt|versendet|verschickt|abgeschickt|unterwegs|an\s+(?:den\s+|die\s+)?(?:versand|paketdienst|"
                    r"zusteller|spediteur|dhl|ups|dpd|hermes|gls|fedex|post)\s+übergeben)\b")),
    ("shipped", _rx(r"\b(?:ist|sind)\s+(?:bereits\s+|schon\s+|jetzt\s+)?(?P<neg>nicht\s+|noch\s+nicht\s+)?(?:in\s+(?:der\s+)?zustellung|"
                    r"beim\s+(?:paketdienst|zusteller|versanddienstleister))\b")),
    ("shipped", _rx(r"\bbefinde[nt]\s+sich\s+(?:bereits\s+|schon\s+|jetzt\s+)?(?:im\s+versand|in\s+(?:der\s+)?zustellung|"
                    r"auf\s+dem\s+weg|beim\s+(?:paketdienst|zusteller|versanddienstleister)|in\s+transit)\b")),
    ("delivered", _rx(r"\b(?:wurde|ist|wurden|sind)\s+" + _DE_SUBJ + _DE_MID +
                      r"(?P<neg>nicht\s+|noch\s+nicht\s+)?(?:zugestellt|geliefert|ausgeliefert|angekommen|eingetroffen)\b")),
    ("cancelled", _rx(r"\b(?:wurde|ist)\s+" + _DE_SUBJ + _DE_MID + r"(?P<neg>nicht\s+)?(?:storniert|annulliert)\b")),
    # verb-final (subordinate clauses): "dass GH56JK78MN bereits versandt wurde"
    # the participle first: "dass sie versandt wurde"; "Zugestellt ist die Bestellung noch nicht" (its subject
    # and a negation after the verb: not delivered)
    ("shipped", _rx(r"\b(?:versandt|verschickt|versendet|abgeschickt)\s+(?:worden\s+)?(?:wurde|wurden|ist|sind)\b" + _DE_INV_NEG)),
    ("delivered", _rx(r"\b(?:zugestellt|geliefert|ausgeliefert)\s+(?:worden\s+)?(?:wurde|wurden|ist|sind)\b" + _DE_INV_NEG)),
    ("cancelled", _rx(r"\b(?:storniert|annulliert)\s+(?:worden\s+)?(?:wurde|wurden|ist|sind)\b" + _DE_INV_NEG)),
    ("paid", _rx(r"\b(?:bezahlt|beglichen)\s+(?:worden\s+)?(?:wurde|wurden|ist|sind)\b" + _DE_INV_NEG)),
    ("refunded", _rx(r"\b(?:wurde|ist)\s+" + _DE_MID + r"(?P<neg>nicht\s+)?(?:erstattet|zurückerstattet|zurückgezahlt)\b")),
    ("paid", _rx(r"\b(?:zahlung(?:seingang)?|betrag|überweisung|bezahlung)(?:\s+(?:für|zu|zur|von|auf|zum)\s+(?:ihre\s+|die\s+|der\s+)?"
                 r"(?:bestellung\s+)?[\w-]{10,12})?\s+(?:wurde|ist|wurden|sind)\s+(?:bereits\s+|inzwischen\s+|schon\s+|"
                 r"heute\s+|erfolgreich\s+|jetzt\s+|bei\s+uns\s+|auf\s+unserem\s+konto\s+|vollständig\s+|"
                 r"(?:ihrer|der)\s+bestellung\s+(?:[\w-]{10,12}\s+)?){0,3}"
                 r"(?P<neg>nicht\s+|noch\s+nicht\s+)?"
                 r"(?:eingegangen|bestätigt|zugeordnet|verbucht|erhalten|gebucht|angekommen|bearbeitet|verarbeitet|"
                 r"abgeschlossen|erfolgt|da)\b")),
    ("paid", _rx(r"\b(?:wurde|ist|wurden|sind)\s+(?:bereits\s+|schon\s+|inzwischen\s+)?(?:vollständig\s+|komplett\s+|erfolgreich\s+)?"
                 r"(?P<neg>nicht\s+|noch\s+nicht\s+)?bezahlt\b")),
    ("paid", _rx(r"\b(?:wir\s+haben|ich\s+habe)\s+(?:\S{1,20}\s+){0,3}?(?:zahlung|überweisung)\s+(?:\S{1,20}\s+){0,3}?"
                 r"(?:erhalten|zugeordnet|verbucht|bestätigt)\b")),
    ("shipped", _rx(r"\b(?:ging|gingen|geht|ist|sind)\s+(?:bereits\s+|schon\s+|heute\s+|gestern\s+)?(?:in\s+den\s+versand|"
                    r"raus|auf\s+dem\s+weg(?:\s+zu\s+ihnen)?|hat\s+unser\s+lager\s+verlassen)\b|"
                    r"\bhat\s+(?:bereits\s+|heute\s+)?unser\s+lager\s+verlassen\b")),
    # an adversarial pass's status wordings (stop 48), by class
    # our own act: "We've sent your order GH56JK78MN", "Wir haben Ihre Bestellung heute losgeschickt"
    ("shipped", _rx(r"\b(?:we|i)(?:'ve|\s+have|\s+had)?\s+(?:now\s+|already\s+|just\s+|today\s+|finally\s+){0,2}"
                    r"(?:sent|dispatched|posted|mailed|shipped)\s+(?:out\s+|off\s+)?(?:your|the)\s+(?:order|parcel|package|"
                    r"shipment|items?)\b")),
    ("shipped", _rx(r"\b(?:wir|ich)\s+(?:haben|habe)\s+(?:ihre|die|ihr|das|ihren|den)\s+(?:bestellung|paket|sendung|lieferung|"
                    r"auftrag)\s+(?:[\w-]{10,12}\s+)?(?:(?:heute|gestern|bereits|schon|soeben|eben|jetzt|nun)\s+){0,2}"
                    r"(?:losgeschickt|abgeschickt|verschickt|versandt|versendet|rausgeschickt|auf\s+den\s+weg\s+gebracht)\b")),
    # a payment matched in other words: "Your payment for GH56JK78MN is complete", "We have assigned
    # your payment to the order", "Die Bestellung GH56JK78MN ist beglichen"
    ("paid", _rx(r"\b(?:your|the)\s+payment(?:\s+(?:for|on|of)\s+(?:order\s+|your\s+order\s+)?[\w-]{10,12})?\s+"
                 r"(?:is|was|has\s+been)\s+(?:now\s+|already\s+)?(?:complete|settled|done)\b")),
    ("paid", _rx(r"\b(?:we|i)(?:'ve|\s+have|\s+had)?\s+(?:now\s+|already\s+|just\s+|successfully\s+){0,2}(?:assigned|allocated|"
                 r"matched|applied|booked|linked|reconciled)\s+(?:your|the)\s+(?:payment|transfer|money)\s+(?:to|against|with)\s+"
                 r"(?:your|the)\s+order\b")),
    ("paid", _rx(r"\b(?:bestellung|rechnung|auftrag)\s+(?:[\w-]{10,12}\s+)?(?:ist|wurde)\s+(?:bereits\s+|vollständig\s+|"
                 r"schon\s+){0,2}beglichen\b")),
    # a payment said to be here: "We have your payment" (true of one received, not yet matched)
    (RECEIVED, _rx(r"\b(?:we|i)\s+(?:have|'ve)\s+(?:now\s+|already\s+)?(?:got\s+)?your\s+(?:payment|transfer|money)\b")),
    # a delivered order said not to be: "still in transit", "has not yet arrived", "noch unterwegs"
    (NOT + "delivered", _rx(r"\b(?:is|are|'s)\s+still\s+(?:in\s+transit|on\s+(?:its|the|their)\s+way|underway|out\s+for\s+"
                            r"delivery|with\s+the\s+(?:carrier|courier))\b|\b(?:has|have)\s+not\s+(?:yet\s+)?(?:arrived|been\s+"
                            r"delivered)\b|\b(?:hasn't|haven't)\s+(?:yet\s+)?(?:arrived|been\s+delivered)\b|\bnot\s+(?:been\s+)?"
                            r"delivered\s+yet\b|\b(?:ist|sind)\s+noch\s+unterwegs\b|\bnoch\s+nicht\s+(?:angekommen|zugestellt|"
                            r"geliefert|eingetroffen)\b")),
    # a shipped order said not to be: "still awaiting dispatch", "wartet noch auf den Versand"
    (NOT + "shipped", _rx(r"\b(?:still\s+)?(?:awaiting|waiting\s+for|pending)\s+(?:dispatch|shipment|shipping)\b|"
                          r"\bwartet\s+(?:noch\s+)?auf\s+(?:den\s+|seinen\s+|ihren\s+)?versand\b|\bnoch\s+nicht\s+(?:versandt|"
                          r"verschickt|versendet|abgeschickt)\b")),
    # a cancelled order said to be in the works: "is being processed", "wird bearbeitet"
    (NOT + "cancelled", _rx(r"\b(?:order|bestellung|auftrag)\s+(?:[\w-]{10,12}\s+)?(?:is|wird)\s+(?:currently\s+|now\s+|gerade\s+|"
                            r"derzeit\s+|jetzt\s+)?(?:being\s+processed|being\s+prepared|being\s+packed|bearbeitet|vorbereitet|"
                            r"verpackt)\b")),
    # the records or the carrier saying so: "Our records show ORD-20261234 as delivered", "The carrier
    # confirmed delivery of ORD-20261234"
    *[(st, _rx(rf"\bshow(?:s|ed|ing)?\s+(?:[\w-]{{10,12}}|it|your\s+order|the\s+order)\s+as\s+(?:being\s+|having\s+been\s+)?"
              rf"(?:{w})\b")) for st, w in (("delivered", "delivered"), ("shipped", "shipped|dispatched|sent"),
                                         ("cancelled", "cancell?ed"), ("paid", "paid"))],
    ("delivered", _rx(r"\b(?:carrier|courier|dhl|ups|dpd|hermes|gls|fedex|post|tracking)\s+(?:has\s+|have\s+)?(?:now\s+|already\s+)?"
                      r"confirm(?:ed|s)\s+(?:the\s+)?delivery\b")),
]
_PENDING_RE = _rx(r"\b(?:pending|awaiting|waiting\s+(?:for|on))\s+(?:the\s+|your\s+|a\s+)?payment\b|\bpayment\s+(?:is\s+)?"
                  r"(?:still\s+)?(?:pending|outstanding)\b|\bnot\s+(?:yet\s+)?(?:been\s+)?(?:able\s+to\s+)?match(?:ed)?\b|"
                  r"\bpayment\s+(?:has|have|is|was)(?:n't|\s+not)\s+(?:yet\s+)?(?:been\s+)?(?:matched|confirmed|cleared)\b|"
                  r"\bwartet\s+(?:noch\s+)?auf\s+(?:die\s+|ihre\s+)?zahlung\b|\bzahlung\s+(?:ist\s+)?(?:noch\s+)?(?:ausstehend|offen)\b|"
                  r"\bnoch\s+nicht\s+(?:(?:der|ihrer|zur)\s+bestellung\s+)?(?:[\w-]{10,12}\s+)?"
                  r"(?:zugeordnet|zuordnen|bestätigt|eingegangen|(?:vollständig\s+)?bezahlt)\b|"
                  r"\b(?:has|have|is|was)(?:n't|\s+not)\s+(?:yet\s+)?(?:been\s+)?(?:fully\s+)?paid\b|"
                  r"\b(?:is|remains)\s+(?:still\s+)?unpaid\b|\b(?:ist|bleibt)\s+(?:noch\s+)?unbezahlt\b")
_HEADLINE_STATUS_RE = _rx(rf"(?:^\W{{0,3}}|\b{_CODE_SUBJ}\s{{0,2}}(?:[:\u2192\u21d2\u2013\u2014-]|->|=>)\s{{0,2}})(shipped|dispatched|delivered|"
                          r"cancell?ed|paid|versandt|versendet|verschickt|zugestellt|storniert|bezahlt)(?=[^\w]*$|\s*[.!,;]|\s+(?:on|today|yesterday|am|heute|gestern)\b)")
_HEADLINE_WORD = {"versandt": "shipped", "versendet": "shipped", "verschickt": "shipped", "dispatched": "shipped", "zugestellt": "delivered",
                  "storniert": "cancelled", "canceled": "cancelled", "bezahlt": "paid"}
# "Payment status: matched" (the payment's own status, in the words a system shows)
_PAYMENT_FIELD_RE = _rx(r"\bpayment\s+status\s{0,3}(?:is\s+|:\s*|=\s*)?(?:now\s+|still\s+)?[\"\x27]?(matched|confirmed|complete|"
                        r"completed|cleared|settled|received|pending|unmatched|open|outstanding)\b")
_PAYMENT_FIELD = {"matched": "paid", "confirmed": "paid", "complete": "paid", "completed": "paid", "cleared": "paid",
                  "settled": "paid", "received": RECEIVED, "pending": "pending_payment", "unmatched": "pending_payment",
                  "open": "pending_payment", "outstanding": "pending_payment"}
_STATUS_FIELD_RE = _rx(r"\bstatus\s{0,3}(?:is\s+|:\s*|=\s*|of\s+\S{1,20}\s+is\s+|ist\s+)?(?:now\s+|still\s+|jetzt\s+)?[\"\x27]?"
                       r"(pending[\s_]payment|paid|license[\s_]issued|shipped|delivered|cancell?ed|refunded)\b")
_SKIP_SUBJECT = {"draft", "reply", "message", "email", "e-mail", "ticket", "request", "lookup", "search",
                 "license", "licence", "key", "code", "refund", "it's", "question", "answer", "note", "entwurf",
                 "antwort", "nachricht", "lizenz", "anfrage", "invoice", "receipt", "rechnung",
                 # what else a sentence may say was cancelled or arrived: not the order
                 "meeting", "webinar", "event", "appointment", "call", "flight", "train", "termin", "veranstaltung",
                 "newsletter", "letter", "brief"}
# what arrives, goes through or is cancelled when it is a payment: not the order ("your transfer
# has arrived", "the payment was cancelled")
_PAYMENT_SUBJECT = {"transfer", "payment", "money", "funds", "remittance", "deposit", "überweisung", "zahlung", "geld",
                    "betrag"}
_SUBJECT_NOUN_RE = _rx(r"\b(?:(?P<pay>transfer|payment|money|funds|remittance|deposit|überweisung|zahlung|geld|betrag)|"
                      r"orders?|parcels?|packages?|shipment|purchase|delivery|items?|bestellung|paket|sendung|lieferung|"
                      r"(?=[\w-]{0,11}\d)[\w-]{10,12})\b")
_OF_BEFORE_RE = re.compile(r"\b(?:for|of|on|to|für|zu|zur|zum|von|auf)\s+(?:your\s+|the\s+|ihre[rnm]?\s+|die\s+|der\s+|dem\s+)?"
                           r"(?:order\s+|bestellung\s+)?$", re.I)


def _payment_is_subject(before: str) -> bool:
    """Is the last subject-like noun before a status verb a payment ("The money you sent has
    arrived"; not "The payment for your order has arrived", whose order stands after "for")?"""
    last = None
    tail = before[-60:]
    for m in _SUBJECT_NOUN_RE.finditer(tail):
        if m.group("pay") or not _OF_BEFORE_RE.search(tail, 0, m.start()):
            last = m
    return last is not None and bool(last.group("pay"))


_PREP = {"for", "of", "about", "regarding", "re", "für", "zu", "zur", "zum", "von", "über", "bezüglich", "betreffend"}
_PERSON = {"you", "i", "we", "they", "customer", "he", "she", "sie", "wir", "ich"}


def _prev_word(sent: str, a: int) -> str:
    m = re.search(r"([\w'-]{1,20})\W{0,3}$", sent[max(0, a - 25):a])
    return m.group(1).lower() if m else ""


# a sentence without one of these words states no status (one cheap pass before ~40 patterns)
_STATUS_CUE = ("ship", "dispatch", "sent", "send", "post", "mail", "transit", "way", "deliver", "arriv", "cancel", "void",
               "abgleich", "reconcil", "matching", "complete", "fulfil", "finali", "abgeschlossen", "erledigt", "abgewickelt",
               "ziel", "destination", "kurier", "übergeben",
               "called off", "reached", "got to", "door", "nachbar", "angenommen", "settled", "rechnung", "invoice",
               "gilt", "hinterlegt",
               "zugeordnet", "booked", "allocated", "assigned",
               "refund", "paid", "pay", "left", "picked", "handed", "courier", "carrier", "route", "signed", "dropped",
               "truck", "van", "lorry", "packstation", "postfiliale", "paketbox", "paketshop", "briefkasten", "locker",
               "letterbox", "letter box", "depot", "pickup", "pick-up", "dhl", "dpd", "hermes", "gls", "fedex", "sorting",
               "gone", "went", "versand", "versend", "verschick", "abgeschickt", "unterwegs", "zustell", "zugestellt",
               "geliefert", "angekommen", "eingetroffen", "storn", "annull", "erstatt", "zurück", "zahlung", "betrag",
               "bezahlt", "überweisung", "befinde", "lager", "raus", "status", "pending", "await", "wait", "wartet",
               "ausstehend", "offen", "match", "beglichen", "dhl", "ups", "dpd", "hermes", "gls", "fedex", "eingang",
               "da", "weg", "receiv", "confirm", "clear", "complet", "success", "process", "book", "alloc", "assign", "appl",
               "regist", "erhalten", "bestätigt", "zugeordnet", "verbucht", "gebucht", "bearbeitet", "verarbeitet",
               "abgeschlossen", "erfolgt", "got", "credited", "pack", "warehouse", "prepar", "assembl", "kommission",
               "zusammengestellt", "being", "geschickt", "unterwegs", "bearbeit", "beglichen", "show")


# the German status patterns, and the words one of them needs: an English sentence skips them
_DE_STATUS = frozenset(i for i, (_, rx) in enumerate(_STATUS_RES) if rx._args[0].startswith(
    (r"\b(?:wurde", r"\bbefinde", r"\b(?:ging", r"\b(?:wir|ich)", r"\b(?:wir\s+haben", r"\b(?:versandt", r"\b(?:zugestellt",
     r"\b(?:storniert", r"\b(?:bezahlt", r"\b(?:zahlung", r"\b(?:bestellung|sie)")))
_DE_STATUS_CUE = ("wurde", "ist", "sind", "befinde", "ging", "geht", "haben", "habe", "mussten", "musste", "müssen", "muss",
                  "bezahlt", "beglichen", "versandt",
                  "verschickt", "versendet", "abgeschickt", "zugestellt", "geliefert", "storniert", "annulliert", "zahlung",
                  "überweisung", "betrag", "raus", "lager", "erstattet")


# A payment said to be received, not matched to the order: "We have received your payment", "Ihre
# Überweisung ist eingegangen". True of a paid order, and of a pending_payment one whose lookup says
# the payment was received (``status_detail``: "payment received, not yet matched to the order").
_RECEIVED_RE = _rx(r"\b(?:received|arrived|landed|come\s+in|came\s+in|eingegangen|erhalten|angekommen|eingetroffen)\b")
_MATCHED_RE = _rx(r"\b(?:matched|confirmed|cleared|allocated|assigned|booked|applied|processed|settled|(?:fully\s+)?paid|"
                  r"through|zugeordnet|bestätigt|verbucht|gebucht|bezahlt|beglichen|abgeschlossen|verarbeitet|bearbeitet)\b")


def _status_claims(sent: str) -> Iterable[tuple[int, str]]:
    low = sent.lower()
    if not any(w in low for w in _STATUS_CUE):
        return
    lead = _LEAD_COND_RE.search(sent) is not None
    german = any(w in low for w in _DE_STATUS_CUE)
    for i, (st, rx) in enumerate(_STATUS_RES):
        if i in _DE_STATUS and not german:
            continue
        for m in rx.finditer(sent):
            neg = "neg" in rx.groupindex and bool(m.group("neg") or ("neg2" in rx.groupindex and m.group("neg2")))
            if neg and st not in CONTRADICTS:
                continue
            pw = _prev_word(sent, m.start())
            if pw in _PREP or pw in _SKIP_SUBJECT or (st == "paid" and pw in _PERSON and "payment" not in m.group(0).lower()) \
                    or (st != "paid" and pw in _PAYMENT_SUBJECT):
                continue
            before, said, after = clause_of(sent, m.start(), m.end())
            if st != "paid" and (_payment_is_subject(before) or m.group(0).split(None, 1)[0].lower() in _PAYMENT_SUBJECT):
                continue  # "The money you sent has arrived", "your payment arrived": the payment's, not the order's
            if _NOT_ALL_RE.search(before):
                continue  # "Nicht alle Ihre Bestellungen sind verschickt": some, not which
            if not neg and _NONE_OF_RE.search(before):
                if st not in CONTRADICTS or not _NONE_TAIL_RE.match(after):
                    continue  # not "neither of your orders has shipped to the wrong address"
                neg = True  # "neither of your orders has shipped": not shipped, said of each
            if (not neg and HEDGE_NEG.search(before[-12:])) or \
                    hedged(before, after, said, lead or _lead_at(sent, m.start())):
                continue
            if _SYMPATHY_RE.search(before[-60:]):
                continue  # "I'm sorry the parcel arrived damaged": the customer's news, not our claim
            if not neg:
                if st == "paid" and _RECEIVED_RE.search(m.group(0)) and not _MATCHED_RE.search(m.group(0)):
                    st = RECEIVED  # "we have received your payment": true of a payment not yet matched
                yield m.start(), st
                continue
            subject = before[-80:] + " " + m.group(0)
            if _PRONOUN_END_RE.search(before):
                subject = sent[:m.end()]  # "we are still preparing your parcel; it hasn't been handed to the carrier"
            if "obj" in rx.groupindex and (m.group("obj") or ("obj2" in rx.groupindex and m.group("obj2"))):
                subject = sent  # our own act denied of an object: "we never handed it over to the carrier"
            if _NEG_SUBJECT_RE.search(subject) or find_codes(subject, 1):
                yield m.start(), NOT + st  # not "the replacement has not shipped", "we haven't delivered on that"
    for m in _PENDING_RE.finditer(sent):
        before, said, after = clause_of(sent, m.start(), m.end())
        if not hedged(before, after, said, lead):
            yield m.start(), "pending_payment"
    for m in _HEADLINE_STATUS_RE.finditer(sent):
        w = m.group(1).lower()
        yield m.start(), _HEADLINE_WORD.get(w, w)
    for m in _STATUS_FIELD_RE.finditer(sent):
        yield m.start(), re.sub(r"[\s_]+", "_", m.group(1).lower()).replace("canceled", "cancelled")
    for m in _PAYMENT_FIELD_RE.finditer(sent):
        yield m.start(), _PAYMENT_FIELD[m.group(1).lower()]


# a claim about every order of the ticket: "both of your orders have shipped", "beide Bestellungen
# wurden versandt", "all your orders are on their way" -- true only if true of each one
# (plural orders with a determiner: "all orders are shipped by DHL" and "each order is shipped
# separately" are policies, "both parcels" may be the parcels of one order)
# "neither of your orders has shipped", "none of the orders", "keine Ihrer Bestellungen": the status
# after it is negated, and said of each order
_NONE_OF = (r"\b(?:neither|none|not\s+one|not\s+a\s+single\s+one)\s+(?:of\s+)?(?:your|the|my|these|those)\s+(?:two\s+|three\s+)?"
            r"(?:orders|purchases)\b|\bneither\s+order\b|\bkeine\s+(?:ihrer|der|dieser)\s+(?:beiden\s+|zwei\s+|drei\s+)?"
            r"bestellungen\b|\b(?:neither|none)\s+of\s+(?:them|the\s+two|both)\b|\bneither\b(?=\s+(?:has|have|was|were|is|are|had)\b|\s*$)|"
            r"\bneither\s+(?=[\w-]{0,11}\d)[\w-]{10,12}\s+nor\s+(?=[\w-]{0,11}\d)[\w-]{10,12}\b|"
            r"\bweder\s+(?=[\w-]{0,11}\d)[\w-]{10,12}\s+noch\s+(?=[\w-]{0,11}\d)[\w-]{10,12}\b|"
            r"\bweder\s+(?:die|das|der)\s+(?:eine|erste|einen)\s+noch\s+(?:die|das|der|den)\s+(?:andere|zweite)n?\b|"
            r"\bneither\s+the\s+(?:one|first)\s+nor\s+the\s+(?:other|second)\b")
_NONE_OF_RE = _rx(_NONE_OF)
_NOT_ALL_RE = _rx(r"\b(?:not\s+(?:all|every|each)|nicht\s+(?:alle|jede|sämtliche))\b")
_NONE_TAIL_RE = _rx(r"\s*(?:(?:yet|for|in\s+full|so\s+far|already|today|yesterday|this\s+week|noch|bisher|bislang|jetzt|heute)\b\s*)*[\s.!)\"']*$")
# its alternatives one by one: "does any of them occur in the sentence?" asks each of them, so
# each is skipped by its own needles (the whole pattern's needles are their union, which most
# sentences of an answer hold: it was a fifth of the floor's regular-expression time)
_EVERY_ORDER_PARTS = (
    r"\b(?:your|the|my|ihre|die)\s+(?:orders|purchases|bestellungen)\s+(?:(?:have|are|were|had|sind|wurden|haben)\s+)?"
    r"(?:now\s+|jetzt\s+)?(?:all|both|each|beide|alle)\b",
    _NONE_OF,
    r"(?<!of\s)(?<!von\s)(?<!between\s)(?<!among\s)(?<!from\s)\b(?:your|the|my|these|those)\s+"
    r"(?:two|three|four|2|3|4)\s+(?:orders|purchases)\b",
    r"(?<!von\s)(?<!aus\s)(?<!zwischen\s)\b(?:ihre|die|diese)\s+(?:zwei|drei|vier|2|3|4)\s+bestellungen\b",
    r"\bboth\s+(?:of\s+)?(?:your\s+|the\s+|my\s+|these\s+|those\s+)?(?:orders|purchases|licen[cs]es)\b",
    r"(?<!not\s)\b(?:all|each)\s+(?:of\s+)?(?:your|the|my|these|those)\s+(?:two\s+|three\s+)?(?:orders|purchases|"
    r"licen[cs]es)\b",
    r"\bboth\s+of\s+them\b",
    r"(?<!ihrer\s)(?<!ihren\s)(?<!einer\s)\bbeiden?\s+(?:ihrer\s+|ihre\s+|der\s+|die\s+)?(?:bestellungen|lizenzen)\b",
    r"(?<!nicht\s)\b(?:alle|sämtliche)n?\s+(?:ihrer|ihre|diese)\s+(?:zwei\s+|drei\s+)?(?:bestellungen|lizenzen)\b",
)
EVERY_ORDER_RE = _rx("|".join(_EVERY_ORDER_PARTS))
_EVERY_ORDER_ANY = tuple(_NONE_OF_RE if x is _NONE_OF else _rx(x) for x in _EVERY_ORDER_PARTS)


def every_order_in(sent: str) -> bool:
    """``EVERY_ORDER_RE.search(sent) is not None``: a top-level alternation matches somewhere
    exactly when one of its alternatives does (no back-references between them)."""
    return any(rx.search(sent) is not None for rx in _EVERY_ORDER_ANY)

BOTH_RE = _rx(r"\b(?:both|beide|sowohl)\b")
# a coordinated subject: the words between two of its codes, and between the last and the verb
_COORD_RE = _rx(r"\s{0,3}(?:,|&|\+|/|\band\b|\bund\b|\bsowie\b|\bplus\b|,?\s{0,3}\bas\s+well\s+as\b|,?\s{0,3}\b(?:together|along)\s+"
                r"with\b|,?\s{0,3}\bzusammen\s+mit\b|,?\s{0,3}\b(?:just\s+)?like\b|,?\s{0,3}\b(?:ebenso\s+|genau\s+|genauso\s+)?wie\b|"
                r",\s{0,3}(?:and|und)\b)\s{0,3}(?:(?:order|bestellung|auftrag)\s{1,3})?\Z")
_PRONOUN_END_RE = _rx(r"\b(?:it|they|es|sie)\s*$")
_NOT_SUBJECT_RE = _rx(r"\b(?:i|we|you|ich|wir|du|checked|looked|found|searched|reviewed|compared|between|of|from|among|"
                     r"about|regarding|for|geprüft|nachgesehen|gefunden|nachgeschaut|verglichen|zwischen|von|für|zu)\b")
_SUBJECT_GAP_RE = _rx(r"[\s,]{0,4}(?:(?:both|too|also|each|all|beide|auch|jeweils|alle)[\s,]{1,4})?\Z")  # "both GH56JK78MN and ORD-20261234 have shipped"


# ----------------------------------------------------------------------------- license
# what the order's license is called, a subscription (an "Abo") included: "your subscription is active"
_LIC = (r"(?:licen[cs]e(?:\s+(?:key|number|code))?s?|(?:activation|product|serial|registration)\s+(?:key|code|number)s?|"
        r"lizenz(?:(?:schlüssel|code|key|nummer)(?:n|s)?|en)?|aktivierungs(?:schlüssel|codes?)|produktschlüssel|seriennummern?|"
        r"(?<!newsletter\s)(?<!newsletter-)(?<!mailing\s)(?<!e-mail\s)(?:subscriptions?|abos?|abonnements?))")
_LIC_OF = (r"(?:,\s{0,2}(?:for|of|für)\s+[^,.;:!?]{1,60}?,|\s+(?:for|of|on|für|zu|zur|zum|auf)\s+(?:(?:your\s+|the\s+|ihre\s+|die\s+|ihrer\s+)?(?:order\s+|bestellung\s+)?"
           r"[\w-]{1,14}(?:\s+[\w-]{1,14}){0,2}?|"
           r"(?:both|all|each|beide|alle)\s+(?:of\s+)?(?:your\s+|the\s+|ihre\s+)?(?:orders|bestellungen)))?(?:\s+(?:itself|selbst))?")
_LIC_RES = [
    _rx(rf"\b{_LIC}{_LIC_OF}\s+{_AUX}(?:issued|sent|emailed|e-mailed|mailed|generated|activated|ready|available|delivered|"
        r"attached|enclosed|included\s+below|below|on\s+(?:its|the)\s+way|in\s+your\s+inbox|forwarded|resent|re-sent|"
        r"active|live)\b"),
    _rx(rf"\b{_LIC}{_LIC_OF}\s{{0,2}}(?:is|:|ist|lautet)\s{{0,2}}[\"']?(?:[a-z0-9]{{4,6}}-){{2,5}}[a-z0-9]{{4,6}}\b"),
    _rx(rf"\byou\s*(?:can\s+now|'ll\s+find|will\s+find|can\s+find)\s+(?:activate|use|download|redeem|find)?\s*(?:your|the)\s+"
        rf"{_LIC}(?:{_LIC_OF}\s+in\s+your\s+(?:inbox|e-?mail|account|mailbox))?"),
    _rx(rf"\b{_LIC}{_LIC_OF}\s+(?:ist|liegt|befindet\s+sich|sind|liegen|befinden\s+sich)\s+(?:bereits\s+|schon\s+|jetzt\s+|nun\s+)?in\s+ihrem\s+"
        r"(?:postfach|e-?mail-postfach|konto|kundenkonto|posteingang)\b"),
    _rx(rf"\b{_LIC}{_LIC_OF}\s+finden\s+sie\s+(?:jetzt\s+|nun\s+|bereits\s+)?in\s+ihrem\s+(?:postfach|e-?mail-postfach|konto|"
        r"kundenkonto|posteingang)"),
    _rx(rf"\b(?:sie\s+finden|finden\s+sie)\s+(?:ihre|die|ihren|den)\s+{_LIC}(?:\s+(?!in\b|im\b)\S{{1,20}}){{0,4}}?\s+"
        r"(?:jetzt\s+|nun\s+|bereits\s+|schon\s+|ab\s+sofort\s+)?(?:in\s+ihrem|im)\s+(?:postfach|e-?mail-postfach|konto|"
        r"kundenkonto|posteingang)\b"),
    _rx(rf"\b{_LIC}{_LIC_OF}\s+(?:is|are|ist|sind)\s+(?:still\s+|noch\s+)?(?P<neg>pending|outstanding|on\s+hold|ausstehend|"
        r"offen|in\s+bearbeitung)\b"),
    # the German verb last, a negation before it read ("dass die Lizenz noch nicht ausgestellt ist": not issued)
    _rx(rf"\b{_LIC}{_LIC_OF}\s+(?:haben|hat)\s+(?:wir|ich)\s+(?:(?!nicht\b|noch\s+nicht\b|nie\b)\S{{1,20}}\s+){{0,3}}?"
        r"(?P<neg>(?:noch\s+)?(?:nicht|nie)\s+)?(?:geschickt|gesendet|zugeschickt|verschickt|gemailt|ausgestellt|übermittelt|"
        r"zugestellt)\b"),
    _rx(rf"\b{_LIC}{_LIC_OF}\s+(?:(?!nicht\b|noch\s+nicht\b|nie\b)\S{{1,20}}\s+){{0,3}}?(?P<neg>(?:noch\s+)?(?:nicht|nie)\s+)?"
        r"(?:zugeschickt|verschickt|gesendet|ausgestellt|übermittelt)\s+(?:worden\s+)?(?:wurde|ist)\b"),
    _rx(rf"\b(?:here(?:'s|\s+is)|hier\s+ist|anbei)\s+(?:your|the|ihr|der)\s+(?:new\s+|neuer\s+)?{_LIC}"),
    _rx(rf"^\W{{0,3}}{_LIC}\s{{0,2}}[:-]?\s{{0,2}}(?:issued|sent|activated|ausgestellt|verschickt|aktiviert)\b"),
    _rx(rf"\b(?:issued|sent|emailed|e-mailed|mailed|forwarded|resent|re-sent|delivered)\s+(?:you\s+)?(?:your|the)\s+"
        rf"(?:new\s+)?{_LIC}"),
    _rx(rf"\b(?:wir|ich)\s+(?:haben|habe)\s+(?:\S{{1,20}}\s+){{0,3}}?(?:[\w-]{{1,30}}-)?{_LIC}(?:\s+(?!nicht\b|noch\s+nicht\b)\S{{1,20}}){{0,3}}?"
        r"\s+(?P<neg>(?:noch\s+)?nicht\s+)?(?:geschickt|gesendet|"
        r"zugeschickt|verschickt|gemailt|ausgestellt|übermittelt|erstellt|zugestellt|aktiviert|freigeschaltet|erteilt)\b"),
    _rx(rf"\b(?P<neg>no\s+)?{_LIC}\s+(?:(?:has|was)\s+(?:yet\s+)?(?:been\s+)?)?issued\b"),
    _rx(rf"\b{_LIC}{_LIC_OF}\s+(?:is\s+|has\s+)?(?P<neg>yet\s+to\s+be|not\s+yet)\s+(?:issued|sent)\b"),
    _rx(rf"\b{_LIC}{_LIC_OF}\s+(?:wurde|ist|wurden|sind)\s+(?:(?:bereits|schon|heute|gestern|soeben|ihnen|dir|per|"
        r"e-?mail|mail|an|ihre|e-?mail-adresse|erfolgreich|jetzt|nun|allerdings|leider|jedoch|aber|derzeit|momentan|"
        r"bisher|bislang|aktuell)\s+){0,4}(?P<neg>nicht\s+|noch\s+nicht\s+)?"
        r"(?:ausgestellt|erteilt|verschickt|versendet|versandt|erstellt|generiert|erzeugt|zugeschickt|gesendet|zugestellt|gemailt|übermittelt|"
        r"aktiviert|freigeschaltet|aktiv)\b"),
    # telegraphic, as an answer to the staffer writes it: "license already issued", "licence: not yet issued"
    _rx(rf"\b{_LIC}\s{{0,2}}[:-]?\s{{0,2}}(?:already|now|just)\s+(?:issued|sent|activated|generated)\b|"
        rf"\b{_LIC}\s{{0,2}}[:-]?\s{{0,2}}(?P<neg>not\s+(?:yet\s+)?|still\s+not\s+)(?:issued|sent|activated|generated)\b"),
    # the German verb first: "Für beide Bestellungen sind die Lizenzen bereits ausgestellt"
    _rx(rf"\b(?:wurde|ist|wurden|sind)\s+(?:die|ihre|der|ihr|den)\s+{_LIC}\s+(?:(?:bereits|schon|jetzt|nun|inzwischen|heute|gestern)\s+)?"
        r"(?P<neg>nicht\s+|noch\s+nicht\s+)?(?:ausgestellt|erteilt|verschickt|versendet|versandt|erstellt|generiert|zugeschickt|"
        r"gesendet|zugestellt|aktiviert|freigeschaltet)\b"),
    # stop 38: "The licence for GH56JK78MN went out to your inbox", "doesn't have a licence on it yet",
    # "steht die Lizenzausstellung noch aus"
    _rx(rf"\b{_LIC}{_LIC_OF}\s+(?:went\s+out|has\s+gone\s+out|was\s+sent\s+out|landed\s+in\s+your\s+(?:inbox|mailbox))\b"),
    _rx(rf"\b(?P<neg>doesn't\s+have|does\s+not\s+have|don't\s+have|do\s+not\s+have|has\s+no|have\s+no)\s+(?:a\s+|any\s+)?"
        rf"{_LIC}\b(?!\s+(?:question|problem|issue|number\s+to\s+hand))"),
    _rx(r"\b(?:lizenz\w*|aktivierung\w*)\s+steht\s+(?P<neg>noch\s+aus)\b"),
    _rx(r"\bsteht\s+(?:die|ihre)\s+(?:lizenz\w*|aktivierung\w*)\s+(?P<neg>noch\s+aus)\b"),
    _rx(rf"\b(?P<neg>(?:noch\s+)?keine(?:n)?)\s+{_LIC}\b"),
    # not licensed yet, the license still to come: "ist noch nicht lizenziert; die Lizenz folgt später"
    _rx(r"\b(?:ist|sind|is|are)\s+(?:still\s+)?(?P<neg>noch\s+nicht|nicht|not\s+yet|not)\s+(?:lizenziert|licen[cs]ed)\b"),
    _rx(rf"\b{_LIC}{_LIC_OF}\s+(?P<neg>folgt\s+(?:noch|später|in\s+kürze|bald|separat)|kommt\s+(?:noch|später|bald)|"
        r"will\s+follow|follows\s+(?:later|soon|shortly|separately))\b"),
    # the license as something the customer can use now: "You can now activate it", "Sie können ... ab sofort nutzen"
    _rx(r"\byou\s+can\s+(?:now\s+)?(?:activate|unlock)\s+(?:it|the\s+(?:software|program|app|product|license|licence)|"
        r"your\s+(?:software|program|app|product|license|licence|copy))\b|\byou\s+can\s+(?:now\s+)?(?:start\s+)?(?:use|using)\s+"
        r"(?:the\s+software|your\s+(?:software|license|licence|copy))\b|\byou\s+can\s+(?:activate|unlock|use)\s+(?:\S{1,20}\s+){1,3}?"
        r"(?:now|right\s+away|immediately|straight\s+away)\b"),
    _rx(r"\b(?:sie|du)\s+(?:können|kannst)\s+(?:\S{1,20}\s+){0,3}?(?:ab\s+sofort|jetzt|nun|sofort)\s+(?:\S{1,20}\s+){0,2}?"
        r"(?:nutzen|aktivieren|verwenden|freischalten|benutzen)\b"),
    # a key given as such, an account unlocked, the activation mail sent, "the key we sent"
    _rx(r"\b(?:your|ihr)\s+(?:[\w-]{1,20}\s+){0,2}?(?:key|schlüssel|code|licen[cs]e(?:\s+key)?|lizenz(?:schlüssel)?)\s{0,2}"
        r"(?:is|:|ist|lautet)\s{0,2}[\"']?(?:[a-z0-9]{3,6}-){2,5}[a-z0-9]{3,6}\b"),
    _rx(r"\b(?:we|i)(?:'ve|\s+have)?\s+(?:now\s+|just\s+|already\s+)?(?:unlocked|activated|enabled)\s+(?:your\s+)?(?:account|"
        r"access|license|licence|product|software|copy)\b"),
    _rx(r"\b(?:activation|license|licence)\s+(?:e-?mail|mail|message)\b[^.!?\n]{0,20}?\b(?:went\s+out|was\s+sent|has\s+been\s+sent|"
        r"is\s+on\s+its\s+way|is\s+in\s+your\s+inbox|arrived|has\s+gone\s+out)\b"),
    _rx(r"\b(?:the|your)\s+(?:key|code|licen[cs]e(?:\s+key)?)\s+(?:we|i)(?:'ve|\s+have)?\s+(?:just\s+)?(?:sent|emailed|e-mailed|"
        r"mailed|gave\s+you)\b"),
]


# a negation just before the license: "has not yet been sent", "no license key has been sent"
_LIC_NEG_BEFORE_RE = re.compile(r"(?:\bnot|n't|\bnever|\bnicht|\bno|\bkeine?[nrs]?)\s+(?:yet\s+)?(?:been\s+)?$", re.I)
_LIC_CUE = ("licen", "lizenz", "subscri", "abo", "key", "schlüssel", "code", "number", "nummer", "activat", "unlock", "nutzen", "aktivier",
            "verwenden", "freischalt", "benutzen", "software", "enabled")


# licenses in general, in the present: "Licenses are issued by email", "Lizenzen werden per E-Mail verschickt"
_GENERIC_LIC_RE = _rx(r"^\W{0,3}(?:licen[cs]es|licen[cs]e\s+keys|lizenzen|lizenzschlüssel)\s+(?:are|get|werden)\s+")


def _license_claims(sent: str) -> Iterable[tuple[int, bool, int]]:
    low = sent.lower()
    if not any(w in low for w in _LIC_CUE):
        return
    lead = _LEAD_COND_RE.search(sent) is not None
    generic = _GENERIC_LIC_RE.search(sent)
    for rx in _LIC_RES:
        for m in rx.finditer(sent):
            if generic and generic.start() <= m.start() < generic.end():
                continue  # "Licenses are issued by email": how it works
            neg = bool(m.groupdict().get("neg")) or bool(
                _LIC_NEG_BEFORE_RE.search(sent[max(0, m.start() - 20):m.start()]))
            before, said, after = clause_of(sent, m.start(), m.end())
            if not hedged(before, after, said, lead or _lead_at(sent, m.start())):
                yield m.start(), not neg, m.end()


# ----------------------------------------------------------------------------- not found
NOTFOUND_RE = _rx(r"\b(?:could\s+not|couldn't|can't|cannot|were\s+unable\s+to|was\s+unable\s+to|unable\s+to|"
                  r"did\s+not|didn't|not\s+able\s+to)\s+(?:find|locate)\b|\bnot\s+found\b|\bno\s+(?:such\s+)?order\s+"
                  r"(?:with|under|matching|for)\b|\b(?:does\s+not|doesn't)\s+exist\b|\bno\s+record\s+of\b|"
                  r"\b(?:konnten|können|konnte)\s+(?:\S{1,20}\s+){0,4}?nicht\s+finden\b|\bnicht\s+gefunden\b|"
                  r"\bkeine\s+bestellung\s+(?:mit|unter|zu)\b|\bexistiert\s+nicht\b")
NOTFOUND_EXCEPT = _rx(r"^[^.!?]{0,40}?\b(?:code|number|reference)\s+in\s+(?:your|the|this)\b|^[^.!?]{0,40}?\bin\s+"
                      r"(?:your|the|this)\s+(?:message|question|email|e-mail|text|request)\b")
# what was not found, when it is not the order: "we couldn't find your payment on order X"
_NOT_ORDER_RE = _rx(r"^\s{0,3}(?:(?:any|a|an|the|your|its|our|this|that|ihre|die|den|eine|einen|keine)\s+)?"
                    r"(?:record\s+of\s+(?:your\s+|the\s+)?)?(?:payment|transfer|transaction|license|licence|key|email|"
                    r"e-mail|invoice|receipt|refund|tracking|message|attachment|zahlung|überweisung|lizenz|rechnung)")
_NOT_ORDER_BEFORE_RE = _rx(r"\b(?:payment|transfer|transaction|license|licence|invoice|receipt|tracking|zahlung|"
                           r"überweisung|lizenz|rechnung)\b[^.!?]{0,30}$")


def _not_found_claims(sent: str) -> Iterable[int]:
    for m in NOTFOUND_RE.finditer(sent):
        tail = sent[m.end():m.end() + 60]
        if NOTFOUND_EXCEPT.search(tail) or _NOT_ORDER_RE.search(tail):
            continue
        if "nicht" in m.group(0).lower() and _NOT_ORDER_BEFORE_RE.search(sent[max(0, m.start() - 40):m.end()]):
            continue
        before, _, after = clause_of(sent, m.start(), m.end())
        if "exist" in m.group(0).lower() and _NOT_ORDER_NOUN_RE.search(sent) and \
                not _ORDER_NOUN_RE.search(before) and not find_codes(before, 1):
            continue  # "No, it simply doesn't exist yet, because the licence is only created ...": the license's
        if HEDGE_REPORT.search(before) or HEDGE_REPORT.search(after) or HEDGE_COND.search(before) or \
                re.search(r"\b(?:will|would|may|might|wird|würde)\b", before, re.I):
            continue
        yield m.start()


# ----------------------------------------------------------------------------- dates
_MONTHS = {"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
           "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
           "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
           "januar": 1, "jänner": 1, "jaenner": 1, "februar": 2, "märz": 3, "maerz": 3, "mai": 5, "juni": 6,
           "juli": 7, "oktober": 10, "okt": 10, "dezember": 12, "dez": 12}
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH_NEXT_RE = _lazy(rf"\s{{1,3}}(?:(?:{_MON})\b|kalenderwoche\b|kw\b)", re.I)  # "24. Dezember", "50. Kalenderwoche"
_LOWER_NEXT_RE = _lazy(r"[ \t]{1,3}[a-zäöüß]")  # case matters: a new sentence begins with a capital
_UNITS = ["", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth"]
ORDINALS = {w: i for i, w in enumerate(_UNITS) if w}
ORDINALS.update({"tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14, "fifteenth": 15,
                 "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19, "twentieth": 20,
                 "thirtieth": 30})
for _tens, _n in (("twenty", 20), ("thirty", 30)):
    for _i, _u in enumerate(_UNITS[1:], 1):
        if _n + _i <= 31:
            ORDINALS[f"{_tens}-{_u}"] = _n + _i
_ORD = (r"(?:twenty|thirty)[-\s]?(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth)|tenth|eleventh|"
        r"twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
        r"thirtieth|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth")


# German ordinals, by stem ("vierundzwanzigsten", "dritte", "ersten", "einunddreißigster")
_DE_UNITS = {"erst": 1, "zweit": 2, "dritt": 3, "viert": 4, "fünft": 5, "sechst": 6, "siebt": 7, "siebent": 7,
             "acht": 8, "neunt": 9}
_DE_TEENS = {"zehnt": 10, "elft": 11, "zwölft": 12, "dreizehnt": 13, "vierzehnt": 14, "fünfzehnt": 15,
             "sechzehnt": 16, "siebzehnt": 17, "achtzehnt": 18, "neunzehnt": 19, "zwanzigst": 20, "dreißigst": 30}
_DE_CARD = {"ein": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9}
DE_ORDINALS = {**_DE_UNITS, **_DE_TEENS}
for _w, _i in _DE_CARD.items():
    DE_ORDINALS[f"{_w}undzwanzigst"] = 20 + _i
DE_ORDINALS["einunddreißigst"] = 31
_DE_ORD = ("(?:" + "|".join(sorted(DE_ORDINALS, key=len, reverse=True)) + ")e[nrsm]?")


def _ordinal(w: str) -> int | None:
    w = re.sub(r"^(twenty|thirty)[-\s]?", r"\1-", w.lower())
    n = ORDINALS.get(w)
    if n is None:
        n = DE_ORDINALS.get(re.sub(r"e[nrsm]?$", "", w.replace("ss", "ß")))
    return n if n is not None and n <= 31 else None
_Y = r"(?:,?\s{1,3}(?:of\s+)?(\d{4}))?"
_DATE_RES = (
    ("ymd", _lazy(r"(?<![\d.-])(\d{4})\s?([-/.])\s?(\d{1,2})\2(\d{1,2})(?![\d])")),
    ("md", _lazy(rf"\b({_MON})\.?\s{{1,3}}(?:the\s+)?(\d{{1,2}})(?:st|nd|rd|th)?\b{_Y}", re.I)),
    ("dm", _lazy(rf"(?<![\d.,])(\d{{1,2}})(?:st|nd|rd|th|ten|te|ter)?\.?\s{{1,3}}(?:of\s{{1,3}})?({_MON})\b\.?{_Y}", re.I)),
    ("wdm", _lazy(rf"\b(?:the\s+)?({_ORD}|{_DE_ORD})\.?\s{{1,3}}(?:of\s{{1,3}})?({_MON})\b{_Y}", re.I)),
    ("mwd", _lazy(rf"\b({_MON})\s{{1,3}}(?:the\s+)?({_ORD})\b{_Y}", re.I)),
    ("num", _lazy(r"(?<![\d./-])(\d{1,2})([./-])(\d{1,2})\2(\d{4})(?![\d])")),
    ("dmy2", _lazy(r"\b(?:am|bis|zum|vom|ab|den)\s(\d{1,2})\.(\d{1,2})(?:\.(?!\d)|(?![\d.,]))", re.I)),  # "am 24.12(.)"
    ("ymd8", _lazy(r"(?<![\w-])(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?![\w-])")),  # "20261224"
    # a calendar week (month -N: compared by ISO week, ``date_in``): "KW 51", "KW51/2026", "week 51",
    # "calendar week 51 of 2026", "in der 51. Kalenderwoche"
    ("kw", _lazy(r"\b(?:kw|cw|kalenderwoche|calendar\s{1,3}week|week)\s?[-.]?\s?(\d{1,2})(?![\d.,:-]\d|/\d{1,3}(?!\d))\b"
                 r"(?:\s?/\s?(\d{4})\b|,?\s{1,3}(?:of\s{1,3}|des\s{1,3}jahres\s{1,3})?(\d{4})\b)?", re.I)),
    ("kw2", _lazy(r"(?<![\d.,])(\d{1,2})\.\s{0,3}(?:kalenderwoche|kw)\b(?:\s{1,3}(\d{4})\b)?", re.I)),
    ("dm2", _lazy(r"(?<![\d./-])(\d{1,2})\.(\d{1,2})\.(?![\d])")),  # "Lieferung: 24.12."
    ("md2", _lazy(r"(?<![\d./-])(?!24/7\b)(\d{1,2})/(\d{1,2})(?![\d/]|[.,]\d)")),  # "24/12", "11/19": either order
    ("hol", _lazy(r"(?<!\bbefore\s)(?<!\bafter\s)(?<!\baround\s)(?<!\bvor\s)(?<!\bnach\s)(?<!\buntil\s)(?<!\bbis\s)"
                  r"(?<!\bover\s)(?<!\bum\s)(?<!\bseit\s)(?<!\bsince\s)\b(christmas\s+eve|christmas\s+day|christmas|"
                  r"boxing\s+day|new\s+year'?s\s+eve|new\s+year'?s(?:\s+day)?|heilig(?:abend|en\s+abend)|"
                  r"(?:ersten|zweiten|erster|zweiter)\s+weihnachts(?:feier)?tag|weihnachten|silvester|neujahr|"
                  r"valentine'?s\s+day|halloween)\b", re.I)),
    # a day without its month: "due on the 24th", "by the twentieth.", "am 24. geliefert", "am vierundzwanzigsten"
    # (month 0: compared by the day alone, ``date_in``); only where nothing but an end or a link word follows
    ("d", _lazy(rf"\b(?:on|by|before|until|till|from|for|after)\s+(?:the\s+)?(\d{{1,2}}(?:st|nd|rd|th)|{_ORD})\b"
                r"(?=\s*(?:[.,;:!?)]|$)|\s+(?:at|and|or|so|as|when|if|please|latest|between|in\s+the\s+(?:morning|"
                r"afternoon|evening)|of\s+(?:this|the|next)\s+month)\b)", re.I)),
    ("d", _lazy(rf"\b(?:am|bis\s+zum|zum|vom|ab\s+dem|bis|den)\s+(\d{{1,2}}\.(?!\d)|{_DE_ORD}\b)"
                r"(?=\s*(?:[,;:!?)]|$)|\s+(?!mal\b)(?:[a-zäöüß]|um\b|des\s+monats|dieses\s+monats))")),
)


_MONTH_STUBS = ("jan", "feb", "mar", "mär", "apr", "may", "mai", "jun", "jul", "aug", "sep", "oct", "okt", "nov",
                "dec", "dez", "jän", "jaen")
_HOLIDAY_STUBS = ("christmas", "heilig", "weihnacht", "new year", "silvester", "neujahr", "valentine", "halloween",
                  "boxing")
_NEEDS_MONTH = frozenset({"md", "dm", "wdm", "mwd"})
_NEEDS_DIGIT = frozenset({"ymd", "num", "dmy2", "dm2", "md2", "ymd8", "kw", "kw2"})
_HOLIDAYS = {"christmas eve": {(None, 12, 24)}, "heiligabend": {(None, 12, 24)}, "heiligen abend": {(None, 12, 24)},
             "christmas day": {(None, 12, 25)}, "christmas": {(None, 12, 25)}, "boxing day": {(None, 12, 26)},
             "weihnachten": {(None, 12, 24), (None, 12, 25), (None, 12, 26)}, "new years eve": {(None, 12, 31)},
             "silvester": {(None, 12, 31)}, "new years": {(None, 1, 1)}, "neujahr": {(None, 1, 1)},
             "valentines day": {(None, 2, 14)}, "halloween": {(None, 10, 31)}}
for _a in ("ersten", "erster"):
    _HOLIDAYS[f"{_a} weihnachtstag"] = _HOLIDAYS[f"{_a} weihnachtsfeiertag"] = {(None, 12, 25)}
for _a in ("zweiten", "zweiter"):
    _HOLIDAYS[f"{_a} weihnachtstag"] = _HOLIDAYS[f"{_a} weihnachtsfeiertag"] = {(None, 12, 26)}
# with a digit (str.isdecimal is re's \d) a text may hold a date; without one, only these name one
_DATE_CUE = _lazy(rf"\b(?:{_MON})\b|\b(?:on|by|before|until|till|from|for|after)\s+the\s+(?:{_ORD})\b|"
                  rf"\b(?:am|zum|vom|bis|den|dem)\s+{_DE_ORD}\b|christmas|heilig|weihnacht|new\s+year|silvester|neujahr|valentine|"
                  r"halloween|boxing", re.I)


_DIGIT_RE = re.compile(r"\d")


def find_dates(text: str) -> list[tuple[int, int, frozenset]]:
    """(start, end, {(year or None, month, day)}) of the dates written in TEXT (folded)."""
    out: list[tuple[int, int, frozenset]] = []
    digits = _DIGIT_RE.search(text) is not None  # \d is a decimal digit (isdecimal), in C
    if not digits and not _DATE_CUE.search(text):
        return out
    taken = bytearray(len(text))  # the characters of a date already read (a linear test of overlap)
    low = text.lower()
    months = any(w in low for w in _MONTH_STUBS)
    holiday = any(w in low for w in _HOLIDAY_STUBS)
    for kind, rx in _DATE_RES:
        if (kind in _NEEDS_MONTH and not months) or (kind in _NEEDS_DIGIT and not digits) or \
                (kind == "hol" and not holiday):
            continue  # cheap gates: most sentences hold no month name, no digit, no holiday
        for m in rx.finditer(text):
            if taken.find(1, m.start(), m.end()) >= 0:
                continue
            g = m.groups()
            if kind == "ymd":
                cands = {(int(g[0]), int(g[2]), int(g[3]))}
            elif kind == "md":
                cands = {(int(g[2]) if g[2] else None, _MONTHS[g[0].lower()], int(g[1]))}
            elif kind == "dm":
                cands = {(int(g[2]) if g[2] else None, _MONTHS[g[1].lower()], int(g[0]))}
            elif kind == "wdm":
                cands = {(int(g[2]) if g[2] else None, _MONTHS[g[1].lower()], _ordinal(g[0]) or 0)}
            elif kind == "mwd":
                cands = {(int(g[2]) if g[2] else None, _MONTHS[g[0].lower()], _ordinal(g[1]) or 0)}
            elif kind == "num":
                a, b, y = int(g[0]), int(g[2]), int(g[3])
                cands = {(y, b, a)} if g[1] == "." else {(y, b, a), (y, a, b)}
            elif kind == "ymd8":
                cands = {(int(g[0]), int(g[1]), int(g[2]))}
            elif kind in ("kw", "kw2"):
                y = g[1] or (g[2] if kind == "kw" else None)
                week = int(g[0])
                cands = {(int(y) if y else None, -week, 0)} if 1 <= week <= 53 else set()
            elif kind == "dm2":
                cands = {(None, int(g[1]), int(g[0]))}
            elif kind == "md2":
                a, b = int(g[0]), int(g[1])
                cands = {(None, a, b), (None, b, a)}
            elif kind == "hol":
                cands = set(_HOLIDAYS.get(re.sub(r"\s+", " ", g[0].lower().replace("'", "")).replace("new years day", "new years"),
                                          ()))
            elif kind == "d":
                w = g[0].rstrip(".")
                day = int(re.sub(r"\D", "", w)) if w[:1].isdigit() else _ordinal(w)
                cands = {(None, 0, day or 0)}
            else:
                cands = {(None, int(g[1]), int(g[0]))}
            cands = {c for c in cands if c[1] < 0 or (1 <= c[1] <= 12 or (kind == "d" and c[1] == 0)) and 1 <= c[2] <= 31}
            if cands:
                # "vom 18.11.": the date is its digits, so the word before it ("Ihre Bestellung vom") says what it dates
                a = m.start(1) if kind == "dmy2" else m.start()
                out.append((a, m.end(), frozenset(cands)))
                taken[m.start():m.end()] = b"\x01" * (m.end() - m.start())
    return sorted(out)


def iso_date(v: Any) -> tuple[int, int, int] | None:
    d = parse_date(v)
    return (d.year, d.month, d.day) if d is not None else None


def date_in(cands: frozenset, allowed: set) -> bool:
    """Is one of CANDS in ALLOWED: a candidate without a year matches on month and day, one
    without a month (month 0: "the 24th") on the day alone, a calendar week (month -N: "KW 51")
    holds a date of ALLOWED in ISO week N (of its year, if it names one)."""
    return any(_in_week(c, allowed) if c[1] < 0 else (c in allowed) if c[0] is not None else
               any(a[2] == c[2] and (c[1] == 0 or a[1] == c[1]) for a in allowed) for c in cands)


def _in_week(c: tuple, allowed: set) -> bool:
    for a in allowed:
        if a[1] < 1 or a[0] is None:
            continue
        try:
            y, w, _ = date(a[0], a[1], a[2]).isocalendar()
        except ValueError:
            continue
        if w == -c[1] and (c[0] is None or c[0] == y):
            return True
    return False


def shown_date(c: tuple) -> str:
    """A date candidate as the findings write it: 2026-12-24, ?-12-24, ?-00-24 (a day alone),
    KW 51 / 2026-KW 51 (a calendar week)."""
    if c[1] < 0:
        return f"{c[0]}-KW {-c[1]}" if c[0] else f"KW {-c[1]}"
    return f"{c[0] or '?'}-{c[1]:02d}-{c[2]:02d}"


_DATE_WHAT = (
    ("delivery", _rx(r"deliver|arriv|expected|estimated|\beta\b|reach|\bdue\b|\bby\b|liefer|zustell|zugestellt|"
                     r"ankommen|ankunft|eintreff|trifft|voraussichtlich|erwartet|liefertermin|zustellung|\bkommt\b|\bkommen\b|"
                     r"\bshows?\s+up\b|\bland(?:s|ing)?\b|\bget\s+to\s+you\b|\bwith\s+you\b|\bbei\s+ihnen\b|"
                     r"\bat\s+your\s+door\b|\b(?:have|get|receive|expect)\s+(?:it|them)\b|\bexpect\s+(?:the|your)\s+"
                     r"(?:parcel|package|order|delivery|shipment)\b|\bbe\s+there\b|\bin\s+your\s+hands\b|"
                     r"\bin\s+(?:der|den)\s+h(?:and|änden)\b|\b(?:haben|erhalten|bekommen)\s+sie\s+(?:das|ihr|die|ihre)\s+"
                     r"(?:paket|sendung|bestellung|lieferung)\b")),
    ("placed", _rx(r"placed|\bordered\b|order\s+date|purchas|bought|made\s+on|submitted|bestellt|aufgegeben|"
                   r"bestelldatum|gekauft|bestellung\s+(?:[\w-]{10,12}\s+)?vom|stammt\s+vom|stammen\s+vom|datiert|"
                   r"\border\s+(?:[\w-]{10,12}\s+)?(?:of|from|dated)\s+(?:the\s+)?$")),
    ("ship", _rx(r"shipped|dispatched|sent\s+out|posted|versandt|versendet|verschickt|abgeschickt")),
    ("refund", _rx(r"refund|erstatt")),
)


# what the customer is asked to do by a day: "please reply by the 10th if the parcel has not arrived" dates the reply
_ASK_BY_RE = _rx(r"\b(?:reply|respond|answer|write\s+(?:to\s+us|back)|get\s+back\s+to\s+us|let\s+us\s+know|contact\s+us|"
                 r"get\s+back\s+to\s+you|contact\s+you|(?:wir|ich)\s+(?:melden|melde)\s+(?:uns|mich)|"
                 r"call\s+us|tell\s+us|antworten\s+sie|melden\s+sie\s+sich|schreiben\s+sie\s+uns|rückmeldung)\s+"
                 r"(?:\S{1,20}\s+){0,4}$")
# the date of the customer's own message: "your message of 28 November", "Ihre Nachricht vom 28.11."
_THEIR_DATE_RE = _rx(r"\b(?:your\s+(?:message|e-?mail|mail|letter|request|enquiry|inquiry|note|call|ticket|complaint)|"
                     r"ihre[rmn]?\s+(?:nachricht|e-?mail|mail|anfrage|schreiben|anruf|beschwerde)|you\s+(?:wrote|"
                     r"contacted\s+us|called|emailed|e-mailed)|sie\s+(?:schrieben|haben\s+uns\s+geschrieben))\s+"
                     r"(?:of|from|on|dated|vom|am|von)?\s*(?:the\s+)?$")
_DAY_ONLY_CTX = _rx(r"\b(?:have|get|receive|expect)\s+(?:it|them)\b|\bbe\s+there\b|deliver|arriv|\bdue\b|\beta\b|expected|estimated|liefer|zustell|ankomm|ankunft|eintreff|trifft|\bkommt\b|"
                    r"reach|\bland|with\s+you|bei\s+ihnen|placed|ordered|order\s+date|purchas|bought|bestellt|"
                    r"aufgegeben|gekauft|shipped|dispatched|versandt|versendet|verschickt|refund|erstatt|"
                    r"in\s+your\s+hands|in\s+(?:der|den)\s+h(?:and|änden)\b")


_NEW_CLAUSE_RE = _lazy(r",\s{0,2}(?!Ihnen\b)[A-ZÄÖÜ]")  # ", Ihre Lieferung ...", not ", bei Ihnen"


def date_context(sent: str, a: int, b: int, lo: int = 0) -> str | None:
    """What the date at SENT[a:b] dates: the nearest cue before it (after ``lo``, the end of
    the date before), else the nearest after it within a few words (not past a semicolon or a new
    clause: "closed on Christmas Day; it is due on 3 December" does not date the delivery with
    Christmas, nor "Die Aktion läuft bis 6. Dezember, Ihre Lieferung kommt ..." the delivery)."""
    before = [(m.end(), k) for k, rx in _DATE_WHAT for m in rx.finditer(sent, max(lo, a - 50), a)]
    if before:
        cue_end, what = max(before)
        # the cue before is the last clause's when "und"/"and" stands between it and the date
        # (``_AND_RE``, below), and a German verb comes last: "wurde am 18.11. aufgegeben und
        # wird am 3.12. zugestellt"
        if not (_AND_RE.search(sent, cue_end, a) and (after := _cue_after(sent, b))):
            return what
        return after
    return _cue_after(sent, b)



def _cue_after(sent: str, b: int) -> str | None:
    """The nearest cue after the date at SENT[:b] within a few words (see ``date_context``)."""
    semi, new = sent.find(";", b, b + 30), _NEW_CLAUSE_RE.search(sent, b, b + 30)
    end = min(semi if semi >= 0 else b + 30, new.start() if new else b + 30)  # "bis 6. Dezember, Ihre Lieferung ..."
    after = [(m.start(), k) for k, rx in _DATE_WHAT for m in rx.finditer(sent, b, end)]
    return min(after)[1] if after else None


_NUMW = r"\d{1,3}|an?|one|two|three|four|five|six|seven|a\s+few|ein(?:em|en)?|zwei|drei|vier|fünf|sechs|sieben|wenigen"
FRAME_RE = _rx(rf"\bwithin\s{{1,3}}(?:the\s+next\s+)?(?:{_NUMW})(?:\s?(?:-|to)\s?\d{{1,3}})?"
               r"\s{0,3}(?:business\s+|working\s+)?(?:hours?|days?|weeks?)\b|\b(?:by|until|before)\s+(?:tomorrow|"
               r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|next\s+week|the\s+end\s+of\s+(?:the|this)"
               r"\s+week)\b|\bin\s(?:\d{1,3}|two|three|four|five|a\s+few)\s?(?:-\s?\d{1,3}\s?)?(?:business\s+|working\s+)?"
               rf"(?:days|weeks)\b|\b(?:tomorrow|next\s+week)\b|\binnerhalb\s+(?:von\s+|der\s+nächsten\s+)?(?:{_NUMW})\s+"
               r"(?:werk|arbeits|geschäfts)?(?:tagen|tag|wochen|woche|stunden)\b|\b(?:bis\s+)?morgen\b|"
               r"\b(?:nächste|kommende)\s+woche\b|\bin\s+(?:\d{1,3}|zwei|drei|vier|fünf|wenigen)\s+(?:werk)?(?:tagen|wochen)\b")


# ----------------------------------------------------------------------------- items, prices
SKU_RE = _lazy(r"(?<![\w-])[A-Z]{2,6}-[A-Z0-9]{1,8}(?![\w-])")
ITEM_CTX_RE = _rx(r"\b(?:skus?|items?|contains?|includes?|included|consists?|quantity|qty|ordered|artikel|enthält|"
                  r"umfasst|positionen?)\b|\u00d7")
WORDNUM = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                      "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
WORDNUM.update({"a": 1, "an": 1, "single": 1, "a single": 1, "a dozen": 12, "dozen": 12, "a pair of": 2,
                "a couple of": 2, "both": 2, "ein": 1, "eine": 1, "einen": 1, "eins": 1, "zwei": 2, "drei": 3,
                "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "elf": 11,
                "zwölf": 12, "zwanzig": 20, "dutzend": 12, "ein dutzend": 12, "einen einzigen": 1, "ein einziges": 1,
                "eine einzige": 1, "einzigen": 1, "einzige": 1, "einem einzigen": 1, "einer einzigen": 1})
_QTY = "|".join(sorted((re.escape(w).replace(r"\ ", r"\s+") for w in WORDNUM), key=len, reverse=True))
QTY_BEFORE_RE = _rx(rf"(?<![\w.:/-])(\d{{1,4}}|{_QTY})\s{{0,2}}(?:\u00d7|x|\*)?\s{{0,2}}(?:(?:copies|units|pieces|stück|"
                    r"exemplare?)\s+(?:of\s+)?)?(?:the\s+|der\s+|des\s+)?(?:\w{1,12}\s+)?$")
# "Printed manual x3", "printed manual, quantity 2", "Handbuch (Menge: 2)"
QTY_AFTER_RE = _rx(r"\s{0,2}[(,:-]?\s{0,2}(?:\u00d7|x|\*|qty\.?|quantity|menge|anzahl|stückzahl)\s{0,2}[:=]?\s{0,2}(\d{1,4})\b")
# Items named in other words than the order's ("two USB sticks" for one "Hardware license key
# (USB)", "drei Handbücher", "a USB hub" in an order without one): a count, up to three words,
# then a product noun of this list, in a sentence that says what the order holds. Nouns of one
# group name the same kind of thing; a noun of no item's group is an item the order does not have.
_ITEM_GROUPS = {
    "key": "key keys stick sticks dongle dongles token tokens schlüssel",
    "manual": "manual manuals handbook handbooks guide guides booklet booklets handbuch handbücher anleitung "
              "anleitungen broschüre broschüren",
    "cable": "cable cables cord cords kabel",
    "case": "case cases sleeve sleeves cover covers pouch pouches bag bags hülle hüllen etui etuis tasche taschen",
    "hub": "hub hubs", "adapter": "adapter adapters adaptor adaptors",
    "charger": "charger chargers ladegerät ladegeräte netzteil netzteile",
    "shirt": "shirt shirts t-shirt t-shirts tee tees hoodie hoodies",
    "mug": "mug mugs cup cups tasse tassen becher", "sticker": "sticker stickers aufkleber",
    "poster": "poster posters", "pen": "pen pens stift stifte kugelschreiber",
    "book": "book books buch bücher", "disc": "dvd dvds cd cds disc discs disk disks",
    "mouse": "mouse mice maus mäuse", "keyboard": "keyboard keyboards tastatur tastaturen",
    "headset": "headset headsets headphones kopfhörer", "speaker": "speaker speakers lautsprecher",
    "battery": "battery batteries akku akkus batterie batterien", "drive": "drive drives laufwerk laufwerke",
}
# words that end an item's description: "3 days for the manual" counts days, not manuals
_ITEM_GLUE = (r"(?:for|the|with|and|or|of|in|to|from|on|at|by|per|than|days?|weeks?|hours?|times|und|oder|mit|für|von|"
              r"zu|im|der|die|das|den|dem|des|tage?n?|wochen?|stunden?|mal)")
ITEM_GROUP = {w: g for g, ws in _ITEM_GROUPS.items() for w in ws.split()}
_HEADS = "|".join(sorted((re.escape(w) for w in ITEM_GROUP), key=len, reverse=True))
COUNTED_ITEM_RE = _rx(rf"(?<![\w.,:/-])(?P<q>\d{{1,4}}|{_QTY})(?:(?<=\d)[x\u00d7]\s{{1,2}}|\s{{1,2}}(?:x\s{{1,2}}|\u00d7\s{{0,2}})?)"
                      rf"(?P<mods>(?:(?!{_ITEM_GLUE}\b)[^\W\d_][\w-]{{0,19}}\s{{1,2}}){{0,3}}?)(?P<pre>[^\W\d_]{{1,12}}-)?(?P<h>{_HEADS})(?![\w-])")
COUNTED_AFTER_RE = _rx(rf"(?<![\w-])(?P<mods>(?:(?!{_ITEM_GLUE}\b)[^\W\d_][\w-]{{0,19}}\s{{1,2}}){{0,3}}?)(?P<pre>[^\W\d_]{{1,12}}-)?"
                       rf"(?P<h>{_HEADS})\s{{0,2}}[x\u00d7*]\s{{0,2}}(?P<q>\d{{1,4}})\b")
# the item is the subject that holds the things counted: "the manual has 3 guides inside"
_ITEM_SUBJECT_RE = _rx(rf"\b(?:{_HEADS})\s+(?:itself\s+)?(?:has|have|had|contains?|includes?|holds?|comes\s+with|hat|enthält|"
                       r"umfasst)\s+$|\b(?:inside|in|within|im|in\s+der|in\s+dem)\s+(?:the\s+|your\s+|this\s+)?(?:[\w-]+\s+)?"
                       rf"(?:{_HEADS})\b")
# a relative clause about something else: "the manual, which covers 3 different keys" (after a
# comma: "I can confirm that your parcel contains ..." is no relative clause)
_RELATIVE_RE = _rx(r"^\W{0,3}(?:which|that|who|welche[rs]?)\s+\w+")
# the sentence says what the order holds (or held, or will bring)
# not the order's items: the shop's, other customers', what was sent back, what a customer may buy
ITEM_ELSEWHERE_RE = _rx(r"\b(?:shop|store|stock|customers|wishlist|catalogu?e|sent\s+back|back\s+from|returned|website|"
                        r"web\s+site|online|help\s+cent(?:re|er)|knowledge\s+base|webseite|internetseite|range|basket|"
                        r"saved\s+for\s+later|warenkorb|sortiment|"
                        r"different\s+customer|markt|elektronikmarkt|lager|kunden|zurückgeschickt|zurückgesendet|"
                        r"wunschliste|katalog)\b")
_OFFER_RE = _rx(r"\b(?:can|could|may|might|kann|können|könnten)\b")
ITEM_HOLD_RE = _rx(r"\b(?:contains?|containing|includes?|included|including|consists?\s+of|ordered|bought|purchased|"
                   r"(?:came|comes|ships|shipped)\s+with|packed|along\s+with|together\s+with|zusammen\s+mit|"
                   r"(?:order|parcel|package|box|shipment|bestellung|paket)\s+(?:[\w-]{10,12}\s+)?(?:has|had|hat)|in\s+(?:the|your)\s+(?:package|parcel|box|order|shipment)|holds?|held|"
                   r"befinde[nt]\s+sich|in\s+(?:ihrem|ihrer|dem|der)\s+(?:paket|sendung|bestellung|lieferung)|"
                   r"receive|received|get|got|find|inside|contents|inhalt|lieferumfang|enthält|enthalten|beinhaltet|bestellt|gekauft|umfasst|geliefert|"
                   r"erhalten|bekommen|im\s+paket|in\s+ihrer\s+bestellung|verpackt|eingepackt|lieferschein|packing\s+slip|"
                   r"delivery\s+note)\b|\u00d7")


# how many items the order holds: "your order has three items", "Ihre Bestellung umfasst zwei Artikel"
ITEM_COUNT_RE = _rx(rf"(?<![\w.,:/-])(?P<q>\d{{1,3}}|{_QTY})\s{{1,2}}(?:different\s+|separate\s+|verschiedene\s+)?"
                    r"(?:line\s+)?(?:items?|articles?|products?|positions?|artikeln?|positionen|produkten?)\b"
                    r"(?!\s+(?:is\s+|are\s+|was\s+|were\s+)?(?:missing|left|damaged|broken|faulty|defective|out\s+of\s+stock|"
                    r"back-?ordered|on\s+back-?order|still\s+to\s+come|to\s+follow|fehlt|fehlen|beschädigt|defekt)\b)")
# what makes such a count the order's: it follows the order and a verb of holding ("your order
# has three items", "ORD-20261234 contains 2 items", "Ihre Bestellung besteht aus drei Artikeln",
# "your order of one item"), the customer's or our act ("you ordered three items", "we shipped 3
# items", "Sie haben zwei Artikel bestellt"), a possessive ("your 3 items", "Ihre drei Artikel"),
# "all N items of your order", or "there are N items in your order" / "In Ihrem Paket befinden
# sich drei Artikel". A count elsewhere in the sentence is not ("free shipping starts at 3 items").
_COUNT_Q = r"(?:(?:just|only|exactly|a\s+total\s+of|in\s+total|insgesamt|nur|genau|all|alle)\s+)?$"
_COUNT_LEAD_RE = _rx(
    r"(?:\b(?:your|the|this|that|ihre|die|diese|ihr|das|dieses)\s+(?:order|parcel|package|shipment|box|purchase|bestellung|"
    r"paket|sendung|lieferung|auftrag)(?:\s+[\w-]{10,12})?|\b(?=[\w-]{0,11}\d)[\w-]{10,12}|\bit)\s+"
    r"(?:(?:now|still|only|just|also|nur)\s+)?(?:has|had|holds?|held|contains?|contained|includes?|included|consists\s+of|"
    r"(?:is|was)\s+made\s+up\s+of|came\s+with|comes\s+with|hat|hatte|umfasst|umfasste|enthält|enthielt|beinhaltet|"
    r"besteht\s+aus|bestand\s+aus|of|with|mit)\s+" + _COUNT_Q + "|"
    r"\b(?:you|we|i)\s+(?:have\s+|'ve\s+|had\s+)?(?:ordered|bought|purchased|shipped|sent|delivered|packed)\s+"
    r"(?:(?:to\s+)?you\s+)?" + _COUNT_Q + "|"
    r"\b(?:your|ihre)\s+" + _COUNT_Q)
_COUNT_LEAD_VERB_LAST_RE = _rx(r"\b(?:sie|wir|ich)\s+(?:haben|hatten|habe)\s+(?:ihnen\s+)?" + _COUNT_Q)
_COUNT_VERB_LAST_RE = _rx(r"\s+(?:bei\s+uns\s+)?(?:bestellt|gekauft|geschickt|gesendet|verschickt|versandt|versendet|"
                          r"geliefert|erhalten|bekommen)\b")
_COUNT_ALL_RE = _rx(r"\b(?:all|alle)\s+$")
_COUNT_OF_ORDER_RE = _rx(r"\s+(?:of|in|from|aus)\s+(?:your|ihrer|der)\s+(?:order|bestellung)\b|\s+ihrer\s+bestellung\b")
_COUNT_THERE_RE = _rx(r"\b(?:there\s+(?:are|were|is)|es\s+(?:sind|waren|ist)|befinde[nt]\s+sich|sind|liegen|are)\s+" + _COUNT_Q)
_IN_ORDER_RE = _rx(r"\bin\s+(?:your|the|this|ihrer|ihrem|der|dem|dieser|diesem)\s+(?:order|parcel|package|box|shipment|"
                   r"bestellung|paket|sendung|lieferung)\b")
_COUNT_IS_IN_RE = _rx(r"\s+(?:is|are|was|were|ist|sind|war|waren|befinde[nt]\s+sich)\s+(?:now\s+|jetzt\s+)?in\s+(?:your|ihrer|ihrem)\s+"
                     r"(?:order|parcel|package|box|bestellung|paket|sendung)\b")
ITEM_COUNT_ADJ_RE = _rx(rf"\b(?:your|the|this)\s+(?P<q>\d{{1,2}}|{_QTY})-(?:item|article|product)\s+(?:order|parcel|package)\b")


def count_is_the_orders(sent: str, a: int, b: int) -> bool:
    """Is the count of items at SENT[a:b] ("three items") said of the order (see above)?"""
    lo = max(0, a - 80)
    if _COUNT_LEAD_RE.search(sent, lo, a) or _COUNT_IS_IN_RE.match(sent, b):
        return True
    if _COUNT_LEAD_VERB_LAST_RE.search(sent, lo, a) and _COUNT_VERB_LAST_RE.match(sent, b):
        return True
    if _COUNT_ALL_RE.search(sent, lo, a):
        return _COUNT_OF_ORDER_RE.match(sent, b) is not None
    if _COUNT_THERE_RE.search(sent, lo, a):
        before, _, after = clause_of(sent, a, b)
        return _IN_ORDER_RE.match(after.lstrip()) is not None or _IN_ORDER_RE.search(before) is not None or \
            _IN_ORDER_RE.match(sent, b + 1) is not None
    return False


# a count of each parcel, not of the order: "each parcel holds one item"
_EACH_RE = _rx(r"\b(?:each|every|per|jede[rsnm]?|pro)\s+(?:order|parcel|package|box|shipment|bestellung|paket|sendung)\s+"
               r"(?:[\w-]+\s+){0,2}$")
_ONE = frozenset({"1", "one", "single", "a single", "einen einzigen", "ein einziges", "eine einzige", "einzigen", "einzige",
                  "einem einzigen", "einer einzigen"})
_WHICH_RE = _rx(r"\b(?:that|which|der|die|das|welche[rs]?)\b")  # "one item, the key, that needs ...": which one, not how many
_AND_RE = _rx(r"[^,;.]{0,40}?\s(?:and|und|as\s+well\s+as|sowie)\s")
_INTO_RE = _rx(r"\b(?:into|onto|in|at|from|to|an|auf|aus|von)\s+$")  # "plug it into a USB hub"


def part_of(sent: str, a: int, b: int) -> tuple[int, int]:
    """(start, end) of the part of SENT between semicolons that holds SENT[a:b]."""
    end = sent.find(";", b)
    return sent.rfind(";", 0, a) + 1, end if end >= 0 else len(sent)


def label_group(label: str) -> str:
    head = re.findall(r"[^\W\d_]+", label.partition("(")[0].lower())
    word = head[-1] if head else ""
    return ITEM_GROUP.get(word, word)


def _counted_items(sent: str, labels: tuple[str, ...]) -> Iterable[tuple[int, int, str, str | None]]:
    """(position, count, the words, the order's item they name or None) of the items SENT counts
    in words other than the order's own names (those are read by their names)."""
    if not ITEM_HOLD_RE.search(sent) or ITEM_ELSEWHERE_RE.search(sent):
        return
    groups: dict[str, str] = {}
    for label in labels:
        groups.setdefault(label_group(label), label)
    hits = list(COUNTED_ITEM_RE.finditer(sent))
    if "x" in sent or "\u00d7" in sent or "*" in sent:
        hits += COUNTED_AFTER_RE.finditer(sent)
    for m in hits:
        if any(_label_re(x).search(sent, m.start("mods"), m.end("h")) for x in labels):
            continue  # named as in the order: the names' own reading counts it
        if not ITEM_HOLD_RE.search(sent, *part_of(sent, m.start(), m.end())):
            continue  # "your order contains the key; a USB-C adapter is handy": another part of the sentence
        if m.group("q").lower() == "both" and _AND_RE.match(sent, m.end("h")):
            continue  # "both key and manual are included": one of each
        before, _, after = clause_of(sent, m.start(), m.end())
        relative = _RELATIVE_RE.search(before) is not None and sent[:m.start() - len(before)].rstrip().endswith(",")
        before = _asserted(before)  # "I can confirm that your parcel contains two USB sticks": no offer
        if HEDGE_COND.search(before) or HEDGE_REPORT.search(before) or HEDGE_NEG.search(before[-25:]) or \
                HEDGE_NEG.search(after[:30]) or _OFFER_RE.search(before) or _OFFER_RE.search(after[:40]) or \
                _INTO_RE.search(sent, 0, m.start()) or \
                _ITEM_SUBJECT_RE.search(before[-40:]) or relative:
            continue  # "if you ordered two", "you wrote that you got two", "doesn't include a hub", "... ist nicht enthalten",
            # "the manual has 3 guides inside"
        w = " ".join(m.group("q").lower().split())
        n = int(w) if w.isdigit() else WORDNUM.get(w)
        if n is None:
            continue
        head = m.group("h").lower()
        what = " ".join((m.group("mods") + (m.group("pre") or "") + m.group("h")).split())
        yield m.start(), n, what, groups.get(ITEM_GROUP[head])


# an item of the order said not to be in it: "your order does not include the manual", "there is
# no manual in it", "Das Handbuch haben Sie nicht mitbestellt", "Ihre Bestellung enthält kein
# Handbuch" (a count of 0, checked against its line items: false of an order that holds one)
_DENY_DET = r"(?:(?:a|an|the|any|your|ein|eine|einen|einem|das|die|den|der|ihr|ihre|ihren)\s+)?"
_DENY_ITEM = rf"(?P<mods>(?:(?!{_ITEM_GLUE}\b|no\b|kein\w*)[^\W\d_][\w-]{{0,19}}\s{{1,2}}){{0,2}}?)(?:[^\W\d_]{{1,12}}-)?(?P<h>{_HEADS})(?![\w-])"
_DENIED_ITEM_RES = [
    _rx(rf"\b(?:does|do|did)(?:n't|\s+not)\s+(?:include|contain|have|come\s+with|hold)\s+{_DENY_DET}{_DENY_ITEM}"),
    _rx(rf"\b(?:you|we|i)\s+(?:did|have|had)(?:n't|\s+not)\s+(?:ordered|order|bought|buy|purchased|purchase)\s+{_DENY_DET}{_DENY_ITEM}"),
    _rx(rf"\bthere\s+(?:is|was|are|were)\s+no\s+{_DENY_ITEM}\s+in\s+(?:it|them|your\s+order|the\s+order|"
        r"(?:your|the)\s+(?:parcel|package|shipment))\b"),
    _rx(rf"\bno\s+{_DENY_ITEM}\s+(?:is|was|are|were)\s+(?:included|part\s+of\s+(?:your|the)\s+order)\b"),
    _rx(rf"\b(?:the\s+|a\s+|an\s+|your\s+)?{_DENY_ITEM}\s+(?:is|was|are|were)(?:n't|\s+not)\s+(?:(?:part\s+of|in|included\s+in)\s+"
        r"(?:your|the|this)\s+order\b|part\s+of\s+(?:it|them)\b)"),
    _rx(rf"\b(?:your|the)\s+order\s+(?:has|had|contains|contained|includes|included)\s+no\s+{_DENY_ITEM}"),
    _rx(rf"\b{_DENY_DET}{_DENY_ITEM}\s+haben\s+sie\s+(?:leider\s+|aber\s+)?nicht\s+(?:mit)?bestellt\b"),
    _rx(rf"\b{_DENY_DET}{_DENY_ITEM}\s+(?:ist|war|sind|waren)\s+nicht\s+(?:teil|bestandteil)\s+ihrer\s+bestellung\b"),
    _rx(rf"\b(?:ihre|die)\s+bestellung\s+(?:enthält|enthielt|umfasst|beinhaltet)\s+kein(?:e|en)?\s+{_DENY_ITEM}"),
    _rx(rf"\bsie\s+haben\s+kein(?:e|en)?\s+{_DENY_ITEM}\s+(?:mit)?bestellt\b"),
]
_DENY_CUE = ("not", "n't", "no ", "nicht", "kein")
# the item of another thing: "does not include a manual for the USB hub" (not "for your order")
_DENY_OF_OTHER_RE = _rx(r"\s+(?:for|of|für|zu|zum|zur|von)\s+(?!(?:your|the|this|ihre[rmn]?|die|diese[rmn]?)\s+(?:order|bestellung)\b)")


def _denied_items(sent: str, labels: tuple[str, ...]) -> Iterable[tuple[int, str]]:
    """(position, the order's item) of each item of LABELS that SENT says the order does not hold."""
    low = sent.lower()
    if not any(w in low for w in _DENY_CUE):
        return
    groups: dict[str, str] = {}
    for label in labels:
        groups.setdefault(label_group(label), label)
    lead = _LEAD_COND_RE.search(sent) is not None
    for rx in _DENIED_ITEM_RES:
        for m in rx.finditer(sent):
            label = groups.get(ITEM_GROUP[m.group("h").lower()])
            if label is None or _DENY_OF_OTHER_RE.match(sent, m.end()):
                continue  # an item the order does not hold, said not to be in it, or another thing's
            before, said, after = clause_of(sent, m.start(), m.end())
            if hedged(before, after, said, lead or _lead_at(sent, m.start())) or HEDGE_COND.search(before):
                continue  # "if your order does not include a manual", "you wrote that ..."
            yield m.start(), label


# a product named as in the order: "includes a PhotoFlux Team license" (capitalised words before a product noun)
PRODUCT_RE = _lazy(
    r"\b(?:[Cc]ontains?|[Ii]ncludes?|[Oo]rdered|[Bb]ought|[Pp]urchased|[Ee]nthält|[Bb]estellt|[Uu]mfasst|"
    r"(?:[Yy]our|[Ii]hre?)\s+(?:order|purchase|Bestellung)\s+(?:of|for|über))\s+(?:a|an|the|one|1|your|ein|eine|einen|"
    r"Ihre?n?)?\s{0,2}((?:[A-Z][\w-]{1,30}\s){1,4}(?:[Ll]icen[cs]e|[Bb]undle|[Ee]dition|[Ss]eats?|[Ss]ubscription|"
    r"[Pp]lan|[Ll]izenz|[Pp]aket|[Aa]bo)s?)\b")
MONEY_RE = _lazy(
    r"(?:(?P<cur1>[€$£]|eur|usd|gbp)\s?(?P<a1>\d{1,6}(?:[.,]\d{3})*(?:[.,]\d{1,2})?)(?![\d])|"
    r"(?<![\w.,])(?P<a2>\d{1,6}(?:[.,]\d{3})*(?:[.,]\d{1,2})?)(?:[.,]-{1,2})?\s?(?P<cur2>[€$£]|eur\b|euros?\b|usd\b|"
    r"dollars?\b|gbp\b|pounds?\b|cents?\b|bucks\b))", re.I)
# an amount without its currency after a word that prices something: "the manual was 12.50", "it
# came to 40.00", "kostet 15,00" (two decimals: a version "12.5" or a count is no price)
BARE_PRICE_RE = _rx(r"\b(?:costs?|costed|was|were|is|are|came\s+to|comes\s+to|come\s+to|totall?ed|priced\s+at|"
                    r"kostet|kostete|kosteten|betrug|beträgt|macht|machte|hat|hatte|haben|hatten)\s+(?:only\s+|just\s+|nur\s+|"
                    r"a\s+total\s+of\s+)?"
                    r"(?<![\w.,])(?P<a>\d{1,5}[.,]\d{2})(?![\d%/:]|[.,-]\d|\s?(?:[€$£%]|eur|euro|usd|dollar|gbp|pound|cent|"
                    r"percent|prozent|kg|cm|mm|gb|mb|x\b|uhr|am\b|pm\b|h\b))")
# the customer's own account of an amount, before it in the sentence
_THEIR_AMOUNT_RE = _rx(r"\b(?:you|the\s+customer|they|sie|du)\s+(?:wrote|said|say|mention(?:ed|s)?|told\s+us|reported|"
                       r"claim(?:ed|s)?|think|believe|schreiben|schrieben|schreibst|sagen|sagten|sagst|meinen|erwähnen|"
                       r"erwähnten)\b|\b(?:according\s+to\s+you|laut\s+ihrer\s+nachricht|your\s+(?:message|e-?mail|bank)\s+"
                       r"(?:says|said|shows?))\b")
# the item an amount is the price of, named just before it: "the USB key was 25.00 EUR and the
# manual 15.00 EUR", "Der USB-Stick kostete 25,00 €" (not "the key and the manual cost 40.00",
# not a total: those are the order's amounts, checked as such)
_PRICE_VERB = (r"(?:(?:was|were|is|are|costs?|costed|came\s+to|comes\s+to|came\s+in\s+at|at|for|hat|kostete|kostet|kosten|"
               r"kosteten|für|zu|je|each|itself|alone|allein|only|just|nur|priced\s+at|'s\s+price\s+(?:was|is)|"
               r"price\s+(?:was|is)|preis\s+(?:war|ist|betrug|beträgt)|you\s+paid|we\s+charged|cost\s+you|haben\s+(?:wir|sie)|"
               r"hat\s+(?:sie|uns))\s{1,3}){0,3}")
_PRICED_ITEM_RE = _rx(rf"(?:(?P<mods>(?:(?!{_ITEM_GLUE}\b|samt\b|plus\b|sowie\b)[^\W\d_][\w-]{{0,19}}\s{{1,2}}){{0,2}}?)"
                      rf"(?:[^\W\d_]{{1,12}}-)?(?P<h>{_HEADS})|(?P<sku>[A-Z]{{2,6}}-[A-Z0-9]{{1,8}}))(?:'s)?"
                      rf"\s{{0,2}}(?:\([^()]{{0,30}}\)\s{{0,2}})?{_PRICE_VERB}(?:[:=(\u2013\u2014-]\s{{0,3}})?"
                      r"(?:eur\s?|€\s?|\$\s?|usd\s?|£\s?)?$")
# "you paid 15.00 EUR for the key", "25,00 € für das Handbuch": the item after the amount
_PRICE_FOR_RE = _rx(rf"[^\s\d]{{0,6}}\s{{0,3}}(?:eur|euros?|€|usd|dollars?|\$)?\s{{0,3}}(?:for|für)\s+(?:the|your|den|das|die|ihr|ihren)\s+"
                    rf"(?P<mods>(?:(?!{_ITEM_GLUE}\b)[^\W\d_][\w-]{{0,19}}\s{{1,2}}){{0,2}}?)(?:[^\W\d_]{{1,12}}-)?(?P<h>{_HEADS})(?![\w-])")
_AMOUNT_RE = _lazy(r"[\d.,\s]{0,16}")
_TRAIL_RE = _lazy(r"[^;,\d]{0,40}")  # what follows an amount up to the next one: "... 40.00 EUR in total"
_PRICE_JOINT_RE = _rx(r"\b(?:total|totals|totalled|together|combined|in\s+all|altogether|overall|insgesamt|zusammen|"
                      r"gesamt\w*|\w*summe|both|beide|beiden|plus|with|mit|samt|sowie|make|makes|macht|ergibt)\b|&|\+")
COUNTED_HEAD_RE = _rx(rf"(?<!\w)(?:{_HEADS})(?!\w)")
GROUP = "group:"  # a price's ``what``: an item named in other words, by its group ("group:key")
TOTAL = "total:"  # a price's ``what``: the amount called the total ("Total: 40.00 EUR", "40.00 EUR in total")
# what calls the amount just after it a total: "Total: 25.00 EUR", "your order total was", "Gesamtbetrag: 25,00 EUR",
# "insgesamt 40,00 €", "the total came to EUR 40.00" (not "a total refund of", "Zwischensumme")
_TOTAL_BEFORE_RE = _lazy(r"(?:\b(?:(?:order|grand|invoice|overall)\s+)?(?:total|sum|amount\s+due)(?:\s+(?:amount|price|cost|paid|charged|"
                         r"due))?|\b(?:gesamt(?:betrag|summe|preis|kosten)?|rechnungsbetrag|endbetrag|endsumme|summe|insgesamt|"
                         r"in\s+total|altogether|all\s+together)(?:\s+(?:bezahlt|berechnet))?)(?:\s{1,3}(?:of|for|von|für|der|des)\s{1,3}"
                         r"(?:(?:your|the|ihrer|der|ihre|die)\s{1,3})?(?:(?:order|bestellung|auftrags?)\s{1,3})?(?=[\w-]{0,11}\d)[\w-]{10,12})?"
                         r"\s{0,3}(?:[:=]|-\s|was|is|came\s+to|"
                         r"comes\s+to|amounts\s+to|amounted\s+to|of|beträgt|betrug|belief\s+sich\s+auf|beläuft\s+sich\s+auf|macht|"
                         r"machte|lautet|lautete|von)?\s{0,3}(?:(?:only|just|exactly|nur|genau)\s{1,3})?(?:[€$£]|eur|usd|gbp)?\s{0,2}$",
                         re.I)
_TOTAL_AFTER_RE = _lazy(r"\s{0,3}(?:(?:in\s+)?total|insgesamt|altogether|in\s+all|gesamt)\b", re.I)


def called_total(sent: str, a: int, b: int, labels: tuple[str, ...]) -> bool:
    """Is the amount at SENT[a:b] called the total: a total word just before it ("Total: 25.00
    EUR"), or just after it with no item named before it in its clause, or several ("you paid
    40.00 EUR in total", "the key and the manual cost 40.00 EUR in total"; not "the USB key came
    to 25.00 EUR in total")?"""
    if _TOTAL_BEFORE_RE.search(sent, max(0, a - 90), a):
        return True
    if not _TOTAL_AFTER_RE.match(sent, _CUR_TAIL_RE.match(sent, b).end()):
        return False
    lead = clause_of(sent, a, b)[0]
    if not (any(_label_re(x).search(lead) for x in labels) or COUNTED_HEAD_RE.search(lead)):
        return True
    return _JOINED_RE.search(lead) is not None  # "the key and the manual cost 40.00 EUR in total"


_JOINED_RE = _rx(r"\b(?:and|und|both|beide|beiden|sowie|plus|together\s+with|zusammen\s+mit)\b|&|\+")
_CUR_TAIL_RE = _lazy(r"\s{0,2}(?:[€$£]|eur\b|euros?\b|usd\b|dollars?\b|gbp\b|pounds?\b)?")
# a difference of two prices, not a price: "10.00 EUR more expensive than the manual", "differ by 10.00 EUR"
_DIFF_BEFORE_RE = _rx(r"\b(?:differ(?:s|ence)?(?:\s+in\s+price)?\s+(?:by|of)|difference\b[^.;]{0,30}?\b(?:is|was|of)|"
                      r"(?:unterscheiden|unterschied)\w*\b[^.;]{0,30}?\b(?:um|von|beträgt|ist))\s+(?:eur\s?|€\s?|\$\s?)?$")
# a threshold of a policy, not an amount of the order: "Shipping is free for orders over €50",
# "Versandkostenfrei ab 50 €", "for purchases of at least 30 EUR"
_THRESHOLD_RE = _rx(r"\b(?:orders?|purchases?|baskets?|carts?|bestellungen|bestellung|einkäufe|einkauf|bestellwert|"
                    r"warenwert|einkaufswert)\s+(?:over|above|from|of|worth|exceeding|ab|über|von|mit|im\s+wert\s+von)"
                    r"\s+(?:at\s+least\s+|more\s+than\s+|mindestens\s+|mehr\s+als\s+)?(?:eur\s?|€\s?|\$\s?|£\s?)?$|"
                    r"\b(?:versandkostenfrei|kostenlos|gratis|free|entfallen|entfällt)\s+(?:ab|über|from|over|above)\s+"
                    r"(?:eur\s?|€\s?|\$\s?|£\s?)?$")
_DIFF_AFTER_RE = _rx(r"\s{0,2}(?:eur|euros?|€|usd|dollars?|\$)?\s{0,2}(?:more|less|cheaper|dearer|higher|lower|mehr|weniger|"
                     r"teurer|günstiger|billiger)\b")
_WOULD_AMOUNT_RE = _rx(r"\b(?:would|could|might|würde|würden|hätte|hätten|wäre|wären|könnte|könnten)\b")
_PRICE_CTX_RE = _rx(r"\b(?:price[sd]?|cost|costs|total|paid|charged?|amount|preis|kost|kostet|kostete|gekostet|betrag|summe|"
                    r"gesamt|bezahlt|came\s+to|comes\s+to)")
_EN_UNITS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen " \
            "seventeen eighteen nineteen".split()
_EN_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_DE_UNITS = "ein zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn fünfzehn sechzehn " \
            "siebzehn achtzehn neunzehn".split()
_DE_TENS = "zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig".split()
NUMWORDS = {**{w: i for i, w in enumerate(_EN_UNITS, 1)}, **{w: 10 * i for i, w in enumerate(_EN_TENS, 2)},
            **{w: i for i, w in enumerate(_DE_UNITS, 1)}, **{w: 10 * i for i, w in enumerate(_DE_TENS, 2)},
            "eins": 1, "sieb": 7, "sech": 6, "hundred": 100, "hundert": 100}
_NW = "|".join(sorted(NUMWORDS, key=len, reverse=True))
# an amount in words: "forty-five euros", "fünfundvierzig Euro" (at most six number words, no nesting)
WORD_MONEY_RE = _rx(rf"\b((?:(?:{_NW})(?:[-\s]|und|and\s)?){{1,6}})\s?(euros?|eur|dollars?|usd|pounds?|gbp|bucks)\b")
# the cents after it: "vierzig Euro und fünfzig Cent", "forty euros and fifty cents"
WORD_CENTS_RE = _rx(rf"\s{{1,3}}(?:und|and)\s{{1,3}}((?:(?:{_NW})(?:[-\s]|und|and\s)?){{1,3}})\s?(?:cents?|ct)\b")


SKU_PRICE_RE = _lazy(r"(?<![\w-])(?!ORD-)[A-Z]{2,6}-[A-Z0-9]{1,8}(?![\w-])\s{0,2}(?:[:=]\s{0,2}|(?:1\s?[x×]|[x×]\s?1)\s{1,2})?"
                     r"(?P<a>\d{1,5}[.,]\d{2})(?![\d%]|[.,]\d|\s?(?:[€$£]|eur|euro|usd|dollar|gbp|pound))")
_WORD_MONEY_CUE = _rx(r"euro|eur\b|dollar|usd|pound|gbp|buck")


def priced_item(sent: str, p: int, labels: tuple[str, ...]) -> str | None:
    """The item whose price the amount at SENT[p] states, when it is named alone just before
    the amount ("the manual 15.00 EUR", "Der USB-Stick kostete nur 15,00 €") or just after it
    ("15.00 EUR for the key"): one of LABELS, or ``GROUP`` + the group of the word that names
    it; None when nothing is named so, or the amount is a total ("the key and the manual cost
    40.00", "... 40.00 EUR in total")."""
    if not labels:
        return None
    m = _PRICED_ITEM_RE.search(sent, max(0, p - 60), p)
    if m is not None:
        lead, between = clause_of(sent, m.start(), m.start() + 1)[0][-40:], sent[m.start():p]
        trail = _TRAIL_RE.match(sent, _AMOUNT_RE.match(sent, p).end()).group(0)
    else:
        m = _PRICE_FOR_RE.match(sent, _AMOUNT_RE.match(sent, p).end())
        if m is None:
            return None
        lead, between, trail = clause_of(sent, p, p + 1)[0][-40:], sent[p:m.start("h")], ""
    lead = re.split(r"\d", lead)[-1]  # after the amount before it, if any: "was 15.00 EUR and the manual ..."
    if _PRICE_JOINT_RE.search(f"{lead} {between} {trail}") or COUNTED_HEAD_RE.search(lead) or \
            any(_label_re(x).search(lead) for x in labels):
        return None
    sku = m.groupdict().get("sku")
    if sku:
        named = [x for x in labels if x.lower() == sku.lower()]
        return named[0] if named else None
    span = sent[m.start("mods"):m.end("h")]
    for x in labels:
        if _label_re(x).search(span):
            return x
    return GROUP + ITEM_GROUP[m.group("h").lower()]


def words_number(w: str) -> int | None:
    """The number of W written in words ("forty-five", "fünfundvierzig", "one hundred and twenty"), or None."""
    toks = re.findall(_NW, w.lower().replace("ss", "ß") if "dreiss" in w.lower() else w.lower())
    if not toks:
        return None
    total, cur = 0, 0
    de = "und" in w.lower() and not re.search(r"\band\b", w.lower())
    pend = 0
    for t in toks:
        v = NUMWORDS[t]
        if v == 100:
            cur = (cur or 1) * 100
        elif de and v < 10 and not pend:
            pend = v  # German: the unit comes before "und" and its ten
        elif v >= 20 and pend:
            cur += v + pend
            pend = 0
        else:
            cur += v
    return total + cur + pend


def money_cents(amount: str, currency: str) -> int | None:
    a = amount
    if re.fullmatch(r"\d{1,6}(?:[.,]\d{3})+", a):  # 1.500 / 1,500: thousands
        a = re.sub(r"[.,]", "", a)
    elif re.search(r"[.,]\d{1,2}$", a):
        whole, frac = re.split(r"[.,](?=\d{1,2}$)", a)
        a = re.sub(r"[.,]", "", whole) + "." + frac.ljust(2, "0")
    try:
        v = float(a)
    except ValueError:
        return None
    return int(round(v)) if currency.lower().startswith("cent") else int(round(v * 100))


# ----------------------------------------------------------------------------- promises
_NOUN = (r"(?:refunds?|credits?|discounts?|vouchers?|coupons?|compensation|reimbursements?|money\s+back|"
         r"gift\s+cards?|replacements?|free\s+(?:months?|upgrade|replacement|copy|license)|"
         r"(?:teil|voll|sofort|kaufpreis|zahlungs|geld|gesamt|kulanz)?(?:rückerstattung|erstattung|rückzahlung|zurückzahlung|rückbuchung|rücküberweisung|"
         r"rückvergütung|gutschrift|entschädigung)(?:sbetrag)?|rabatt|gutschein|ersatz[a-zäöüß]{0,12}|nachlass|"
         r"goodwill(?:\s+(?:gesture|credit|payment))?|gesture\s+of\s+goodwill|"
         r"preisnachlass|kulanz[a-zäöüß]{0,10}|geld-zurück|(?:price\s+)?reductions?|chargebacks?)"
         r"(?!\s+(?:request|policy|question|inquiry|enquiry|form|claim|application|process|antrag|anfrage))")
_GIVE = (r"issue[sd]?|issuing|process(?:ed|ing)?|give|given|giving|send|sent|sending|arrange[ds]?|arranging|approved?|"
         r"approving|initiated?|initiating|grant(?:ed|ing)?|offer(?:ed|ing)?|appl(?:y|ied|ying)|provided?|providing|"
         r"add(?:ed|ing)?|extend(?:ed|ing)?|authori[sz]ed?|authori[sz]ing|confirm(?:ed|ing)?|organi[sz]ed?|ship(?:ped)?|"
         r"put\s+through|push(?:ed)?\s+through|raised?|lodged?|book(?:ed)?|pa(?:y|id)\s+out|set\s+up|"
         r"releas(?:e|ed|ing)|trigger(?:ed)?|start(?:ed)?")
_SUBJ = r"(?:we|i|our\s+(?:team|support|billing|manager|department)|the\s+(?:team|shop|store)|support)"
# words that may stand between the subject and the verb ("I've gone ahead and refunded", "we have today credited")
_FILL = (r"(?:(?:(?:gone|went|go|going)\s+ahead\s+and|now|already|just|also|fully|today|personally|successfully|"
         r"kindly|gladly|happily|immediately|quickly|partially|since|then|meanwhile|indeed|this\s+morning|"
         r"[a-z]{3,14}ed\s+(?:and|&))\s+){0,3}")
_WILL = (r"(?:will|'ll|shall|are\s+going\s+to|am\s+going\s+to|can|have|'ve|has|are|am|is|'re|'m|would\s+like\s+to|"
         r"'d\s+like\s+to|(?:would|'d|are|am)\s+(?:be\s+)?(?:happy|glad|pleased)\s+to|just|already|now|"
         # intent and eagerness: "We want to refund you", "We can't wait to refund you", "we look forward to refunding you"
         r"(?:want|wish|intend|plan)\s+to|(?:would|'d)\s+love\s+to|(?:have\s+|'ve\s+)?decided\s+to|"
         r"(?:are|am|'re|'m)\s+(?:(?:so|very|really)\s+)?(?:eager|keen|delighted|thrilled|excited|ready|about|happy|glad|pleased)\s+to|"
         r"(?:are\s+|am\s+|'re\s+|'m\s+)?look(?:ing)?\s+forward\s+to|can(?:'t|not|\s+not)\s+wait\s+to|can\s+hardly\s+wait\s+to)")
PROMISE_RES = [
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*(?:now\s+|already\s+|gladly\s+|happily\s+|also\s+|immediately\s+|just\s+)?"
        rf"(?:{_GIVE})\b[^.!?\n]{{0,40}}?\b{_NOUN}"),
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*{_FILL}"
        r"(?:refund|reimburse|credit|compensate|repay|pay\s+(?:you\s+)?back)(?:s|d|ed|ing)?\b"),
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*{_FILL}(?:{_GIVE}|replaced?|replacing|exchanged?|swapped|swap)\b[^.!?\n]{{0,50}}?"
        r"(?:free\s+of\s+charge|at\s+no\s+(?:extra\s+|additional\s+)?(?:cost|charge)|for\s+free|free\b|"
        r"kostenlos|gratis|umsonst)"),
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*{_FILL}(?:send|ship|mail|post|give|get|replace)\s+(?:you\s+)?(?:it\s+with\s+)?"
        r"(?:a\s+)?(?:new|another|fresh|second|replacement)\s+(?:one|copy|key|unit|device|item|manual|license|licence)\b"),
    _rx(rf"\b{_NOUN}\b[^.!?\n]{{0,40}}?(?:\b(?:(?:has|have|had)\s+been|is|was|will\s+be|is\s+being|are|were)|'s(?:\s+been)?)\s+"
        r"(?:now\s+|already\s+|fully\s+|just\s+)?(?:approved|granted|issued|processed|authori[sz]ed|arranged|initiated|"
        r"confirmed|on\s+(?:its|the|their)\s+way|underway|under\s+way|in\s+progress|sent|applied|added|credited|"
        r"guaranteed|made|complete|completed|done|finished|paid|booked|released|transferred|scheduled|"
        r"being\s+processed|going\s+through|through|in\s+motion|yours|on\s+the\s+house|on\s+us)\b"),
    _rx(rf"\b{_NOUN}\b[^.!?\n]{{0,40}}?\b(?:has|have|had)\s+(?:now\s+|already\s+|just\s+)?(?:gone\s+(?:out|through)|"
        r"left|landed|cleared)\b"),
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*{_FILL}(?:revers|void)(?:e|ed|ing)?\s+(?:the|your|this|that)\s+(?:\w+\s+)?"
        r"(?:charge|payment|transaction|debit)"),
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*{_FILL}(?:cover(?:ed|ing)?|absorb(?:ed)?|bear|pay\s+for|take\s+care\s+of)\s+(?:the|all|any|"
        r"your)\s+(?:\w+\s+)?(?:costs?|fees?|charges?|shipping|postage|expenses?)\b"),
    _rx(r"\bconsider\s+it\s+(?:refunded|credited|replaced|reimbursed|compensated)\b"),
    # a contraction that lost its apostrophe: "Well refund you", "Ive refunded"
    _rx(r"\b(?:well|weve|ive|ill)\s+(?:now\s+|already\s+|just\s+)?(?:refund|reimburse|credit|compensate|repay)(?:s|d|ed|ing)?\b"),
    _rx(r"\b(?:bekommen|erhalten)\s+sie\s+(?:\S{1,20}\s+){0,3}?(?:erstattet|zurückerstattet|gutgeschrieben|ersetzt|"
        r"zurücküberwiesen|zurück)\b"),
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*{_FILL}(?:add(?:ed)?|credit(?:ed)?|put|transfer(?:red)?|sen[dt]|pa(?:y|id)|return(?:ed)?|"
        r"move[d]?|wire[d]?)\s+(?:[€$£]\s?\d[\d.,]{0,8}|\d[\d.,]{0,8}\s?(?:[€$£]|eur\b|euros?\b|dollars?\b)|the\s+(?:full\s+)?"
        r"amount|the\s+money|your\s+money)\s+(?:back\s+)?(?:to|into|onto|on)\s+(?:your|the)\s+(?:\w+\s+)?(?:account|card|balance|"
        r"wallet|bank)"),
    # a refund request / claim / Antrag granted is a refund granted
    _rx(r"\b(?:refund|reimbursement|replacement|compensation|[a-zäöü]{0,10}erstattungs|entschädigungs|kulanz)[\s-]{0,2}"
        r"(?:request|claim|application|antrag|anfrage)\b[^.!?\n]{0,30}?\b(?:approved|granted|accepted|genehmigt|bewilligt|"
        r"angenommen|stattgegeben)\b|\b(?:approved|granted|accepted|genehmigt|bewilligt)\s+(?:your|the|ihren|den)\s+"
        r"(?:refund\s+|erstattungs)?(?:request|claim|antrag)\b|\bantrag\s+auf\s+(?:rück)?erstattung\s+(?:\S{1,20}\s+){0,2}?"
        r"(?:genehmigt|bewilligt|angenommen)\b"),
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*{_FILL}(?:replace|replaced|exchange|exchanged|swap|swapped)\s+(?:it|them|this|that|the\s+\w+|"
        r"your\s+\w+)"),
    _rx(r"(?:[€$£]\s?\d[\d.,]{0,8}|\b\d[\d.,]{0,8}\s?(?:[€$£]|eur\b|euros?\b|dollars?\b))\s+(?:(?:is|are|will\s+be|have\s+been|"
        r"has\s+been)\s+)?(?:coming\s+back|on\s+(?:its|the|their)\s+way|refunded|credited|returned|being\s+refunded|"
        r"back\s+to\s+you|unterwegs|zurück)"),
    _rx(r"\b(?:ein|eine|einen)\s+(?:neue[rns]?|weitere[rns]?)\s+\S{2,30}\s+(?:geht|ist|wird|kommt)\s+(?:\S{1,20}\s+){0,2}?"
        r"(?:raus|unterwegs|auf\s+dem\s+weg|verschickt|versandt)\b"),
    _rx(rf"\b(?:sie|du)\s+(?:haben|hast)\s+(?:\S{{1,20}}\s+){{0,3}}?{_NOUN}\s+(?:\S{{1,20}}\s+){{0,2}}?(?:erhalten|bekommen)\b"),
    _rx(r"\blet\s+me\s+(?:\w+\s+)?(?:refund|reimburse|credit|compensate|replace|issue\s+(?:you\s+)?a\s+refund)\b"),
    _rx(r"\b(?:get|have)\s+(?:that|it|this|the\s+\w+|your\s+\w+)\s+(?:fully\s+)?(?:refunded|reimbursed|credited|replaced|"
        r"waived)\b"),
    _rx(r"\b(?:your|the)\s+(?:account|card|balance|wallet|konto)\s+(?:will\s+be|has\s+been|is\s+being|was|wird|wurde)\s+"
        r"(?:now\s+|already\s+|bereits\s+)?(?:credited|refunded|reimbursed|topped\s+up|gutgeschrieben)\b"),
    _rx(rf"\byou\s*(?:are|'re)\s+(?:now\s+)?(?:due|owed)\s+(?:a\s+|an\s+|your\s+)?(?:full\s+|partial\s+)?{_NOUN}"),
    _rx(r"\b(?:refunding|crediting|reimbursing|replacing)\s+(?:(?:it|that|this|you|the\s+order|your\s+order)\s+)?(?:now|"
        r"right\s+away|today|immediately)\b"),
    _rx(r"\b(?:knock|take|shave)\s+(?:[€$£]\s?\d[\d.,]{0,8}|\d[\d.,]{0,8}\s?(?:%|[€$£]|eur|euros?|dollars?|percent|pounds?))\s+"
        r"off\b"),
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*{_FILL}(?:handle|handled|sort\s+out|sorted\s+out|take\s+care\s+of|took\s+care\s+of|"
        rf"organi[sz]e|look\s+after)\s+(?:the|a|an|your)\s+(?:full\s+|partial\s+)?{_NOUN}"),
    _rx(rf"\b(?:expect|look\s+out\s+for|watch\s+(?:out\s+)?for|look\s+forward\s+to)\s+(?:a|an|your|the)\s+(?:full\s+|partial\s+|"
        rf"complete\s+)?{_NOUN}"),
    _rx(rf"\bmake\s+(?:it|this|that|things)\s+(?:up\s+to\s+you|right|good)\s+(?:\S{{1,12}}\s+){{0,2}}?with\s+(?:a|an|your)\s+"
        rf"(?:full\s+|partial\s+)?{_NOUN}"),
    _rx(r"\b(?:get|receive|getting|receiving)\s+(?:every\s+(?:cent|penny)|(?:all|the\s+full|the|your)\s+(?:of\s+your\s+)?"
        r"(?:money|amount|payment|purchase\s+price|price|cost|total|fee)s?|[€$£]?\d[\d.,]{0,9}\s?(?:[€$£]|eur|euros?|"
        r"dollars?)?)\s+back\b"),
    _rx(r"(?:^|[:-])\W{0,3}(?:fully\s+)?(?:refunded|reimbursed|credited)(?:\s+in\s+full)?\s*(?:[.!]|$)"),
    # "the money (has been) returned", "die Zahlung wurde zurückgebucht"
    _rx(r"\b(?:the|your)\s+(?:money|payment|amount|funds|purchase\s+price)\s+(?:(?:has|have)\s+been\s+|was\s+|were\s+|is\s+|"
        r"will\s+be\s+)?(?:now\s+|already\s+|fully\s+)?(?:returned|refunded|sent\s+back|paid\s+back|given\s+back|reimbursed)\b|"
        r"\b(?:zahlung|betrag|geld|summe|kaufpreis)\s+(?:wurde|ist|wird)\s+(?:(?:bereits|schon|jetzt|ihnen|dir|vollständig)\s+){0,2}"
        r"(?:zurückgebucht|zurücküberwiesen|zurückerstattet|erstattet|zurückgezahlt|gutgeschrieben)\b"),
    # "your money is coming back to you", "the refund is on its way back"
    _rx(r"\b(?:money|payment|funds|amount|refund|purchase\s+price)\s+(?:is|are|will\s+be|'s)\s+(?:\w+\s+)?(?:coming\s+back|"
        r"heading\s+back|on\s+(?:its|the)\s+way\s+back)\b"),
    # "I've pushed the refund through"
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*{_FILL}(?:push(?:ed)?|put|got|get|rush(?:ed)?|fast-?track(?:ed)?)\s+(?:the|your|a)\s+(?:full\s+)?"
        rf"{_NOUN}\s+through\b"),
    # "a full credit note has been raised for your order"
    _rx(r"\bcredit\s+note\b[^.!?\n]{0,30}?\b(?:has\s+been|have\s+been|was|is)\s+(?:now\s+|already\s+)?(?:raised|issued|created|"
        r"sent|applied|booked)\b|\b(?:raised|issued|created)\s+(?:you\s+)?(?:a|the)\s+(?:full\s+)?credit\s+note\b"),
    # something given free: "you'll get a new manual for free", "Sie bekommen die Handbücher kostenlos"
    _rx(r"\byou(?:'ll|\s+will|'re\s+getting|\s+are\s+getting|\s+get|\s+receive)\s+(?:get\s+|receive\s+|be\s+sent\s+)?"
        r"(?:\S{1,20}\s+){0,4}?(?:for\s+free|free\s+of\s+charge|at\s+no\s+(?:extra\s+|additional\s+)?(?:cost|charge)|free)\b|"
        r"\b(?:sie|du)\s+(?:bekommen|erhalten|bekommst|erhältst)\s+(?:\S{1,25}\s+){0,4}?(?:kostenlos|gratis|umsonst|"
        r"ohne\s+(?:zusätzliche\s+|weitere\s+)?kosten)\b"),
    _rx(rf"\b{_NOUN}\b[^.!?\n]{{0,40}}?\b(?:went\s+(?:out|through)|cleared|landed)\b"),
    _rx(r"\b(?:payment|money|amount|funds|total|purchase\s+price|sum)\s+(?:will\s+be|is|should\s+be|'ll\s+be)\s+(?:\w+\s+)?"
        r"back\s+(?:on|in|to|into)\s+(?:your|the)\b"),
    _rx(rf"\b{_NOUN}\b[^.!?\n]{{0,30}}?\b(?:will|should|is\s+going\s+to)\s+(?:\w+\s+)?(?:arrive|reach\s+you|show\s+up|"
        r"appear|land|ship|go\s+out|be\s+(?:with\s+you|in\s+your|back\s+on|visible|credited|paid|shipped|sent))\b|"
        rf"\b{_NOUN}\s+(?:ships|goes\s+out|leaves|is\s+shipping|erscheint|kommt|geht\s+raus)\b"),
    _rx(rf"\b{_NOUN}\s{{0,2}}[:-]?\s{{0,2}}(?:approved|granted|confirmed|authori[sz]ed|issued|processed|initiated|on\s+its\s+way|"
        r"sent|done|complete|completed|paid|booked|credited|"
        r"genehmigt|bestätigt|veranlasst|freigegeben|angewiesen|ausgelöst|gewährt|erfolgt|durchgeführt|ausgezahlt)\b"),
    _rx(rf"\b(?:approved|granted|authori[sz]ed|processed|issued|initiated|arranged|applied|added)\s+(?:you\s+)?"
        rf"(?:a|an|your|the)\s+(?:full\s+|partial\s+|complete\s+|\d{{1,3}}\s?%\s+)?{_NOUN}"),
    _rx(rf"\byou\s*(?:will|'ll|are\s+going\s+to|can\s+expect(?:\s+to)?|should|are\s+getting|are\s+entitled\s+to|"
        r"qualify\s+for|are\s+eligible\s+for|will\s+be|'re\s+getting|'re\s+entitled\s+to|get|receive)\s+(?:get\s+|"
        r"receive\s+|be\s+getting\s+|see\s+|getting\s+|be\s+receiving\s+)?(?:a\s+|an\s+|your\s+|the\s+)?(?:full\s+|"
        rf"partial\s+|complete\s+|\d{{1,3}}\s?%\s+|store\s+|account\s+|shop\s+|extra\s+|special\s+)?(?:{_NOUN}|(?:your\s+)?money\s+(?:back|returned|refunded))"),
    _rx(r"\byou\s*(?:will|'ll|are\s+going\s+to|have|'ve|were|are|'re|got|get)\s+(?:now\s+|already\s+|just\s+)?"
        r"(?:be\s+|been\s+|being\s+)?(?:fully\s+|partially\s+)?(?:refunded|reimbursed|credited|compensated|"
        r"paid\s+back)\b"),
    _rx(r"\b(?:(?:your|the)\s+)?(?:payment|money|amount|purchase\s+price|charge|funds|total|cost|costs|price|fee|fees)\s+"
        r"(?:will\s+be|is\s+being|"
        r"has\s+been|was|will|is\s+going\s+to\s+be|gets)\s+(?:fully\s+)?(?:returned|refunded|reversed|paid\s+back|"
        r"credited\s+back|reimbursed|sent\s+back|given\s+back|be\s+returned|come\s+back|voided)\b|"
        r"\b(?:your|the)\s+(?:payment|money|amount|funds)\s+(?:is|are|will\s+be)\s+(?:already\s+|now\s+)?"
        r"on\s+(?:its|the|their)\s+way\s+back\b"),
    _rx(r"\b(?:full|partial)\s+refund\s+(?:is|has\s+been)\b|\b(?:discount|coupon|voucher|promo|rabatt|gutschein)\s*-?\s*"
        r"code\b|\b\d{1,3}\s?%\s+(?:off|discount|rabatt|nachlass)\b"),
    _rx(r"\b(?:refund|rückerstattung|erstattung)\s+(?:of|in\s+the\s+amount\s+of|über|von|in\s+höhe\s+von)\s+"
        r"(?:[€$£]|\d)"),
    _rx(r"\bwe\s+(?:are|'re)\s+(?:now\s+)?(?:refunding|reimbursing|crediting|compensating|returning\s+your\s+(?:money|payment))\b"),
    _rx(rf"\b{_SUBJ}\s*(?:have\s+|'ve\s+|has\s+)?(?:decided|agreed|chosen|opted)\s+to\s+(?:refund|reimburse|credit|"
        r"compensate|waive|give\s+you|offer\s+you|issue|send\s+you)\b"),
    _rx(r"\b(?:waive|waived|waiving)\s+(?:the\s+|your\s+|this\s+|any\s+|all\s+)?(?:\w{1,16}\s+)?(?:fees?|charges?|costs?|"
        r"payment)\b"),
    _rx(r"\b(?:fees?|charges?|costs?|shipping|postage)\b[^.!?\n]{0,30}?\b(?:will\s+be|has\s+been|have\s+been|is|are|was|were|"
        r"'s\s+been|'ve\s+been)\s+(?:now\s+|already\s+|fully\s+|completely\s+)?waived\b"),
    _rx(r"\b(?:gebühr|gebühren|kosten|versandkosten)\s+(?:\S{1,20}\s+){0,2}?(?:erlassen|storniert|gestrichen)\b|"
        r"\b(?:erlassen|streichen)\s+wir\s+(?:ihnen\s+)?(?:die|alle)\s+(?:gebühr|gebühren|kosten)\b"),
    # stop 38: "we'll knock the manual off your bill", "your first year of updates is on us", "auf unsere Kosten",
    # "I'll have the 40 EUR charge reversed", "ziehen wir Ihnen 20 % vom Rechnungsbetrag ab"
    _rx(r"\bknock(?:ed|ing)?\s+(?:\S{1,20}\s+){0,4}?off\s+(?:your|the)\s+(?:bill|invoice|total|price|order)\b|"
        r"\bknock(?:ed|ing)?\s+off\s+(?:the|your|\d)"),
    _rx(r"(?<!decision\s)(?<!choice\s)(?<!call\s)(?<!fault\s)(?<!blame\s)(?<!mistake\s)(?<!error\s)(?<!onus\s)(?<!that\s)"
        r"(?<!responsibility\s)\b(?:is|are|'s|will\s+be|'ll\s+be)\s+(?:entirely\s+|completely\s+|fully\s+|totally\s+)?"
        r"on\s+(?:us|the\s+house)\b(?!\s+to\b)"),
    _rx(r"\bauf\s+(?:unsere|meine)\s+kosten\b|\bat\s+our\s+(?:own\s+)?(?:expense|cost)\b"),
    _rx(r"\b(?:have|get)\s+(?:the|your|this|that)\s+(?:\S{1,20}\s+){0,3}?(?:charge|payment|transaction|fee|debit)s?\s+"
        r"(?:reversed|refunded|waived|cancell?ed|removed|voided|credited\s+back)\b"),
    _rx(r"\b(?:ziehen|rechnen)\s+wir\s+(?:ihnen\s+)?(?:\S{1,20}\s+){0,4}?(?:vom|von\s+(?:der|ihrer|dem|ihrem))\s+"
        r"(?:rechnung\w*|preis|betrag|kaufpreis|gesamtbetrag|bestellwert)\s+ab\b|\b\d{1,3}\s?(?:%|prozent)\s+(?:vom|von\s+(?:der|ihrer|dem|ihrem))\s+"
        r"(?:rechnung\w*|preis|betrag|kaufpreis|gesamtbetrag|bestellwert)\b"),
    # German
    _rx(r"\b(?:wir|ich)\s+(?:werden\s+|haben\s+|habe\s+|möchten\s+|würden\s+)?(?:ihnen\s+|dir\s+)?(?:den\s+|die\s+|das\s+|"
        r"ihren?\s+)?(?:\S{1,20}\s+){0,5}?(?:erstatten|erstattet|zurückerstatten|zurückerstattet|zurückzahlen|zurückgezahlt|"
        r"gutschreiben|gutgeschrieben|entschädigen|entschädigt|überweisen\s+zurück|zurückgebucht|zurückbuchen|"
        r"zurücküberwiesen|zurücküberweisen|rückerstattet|ausgezahlt|auszahlen)\b"),
    # eagerness before an infinitive: "Wir freuen uns, Ihnen den Betrag zu erstatten", "Wir können es kaum
    # erwarten, Ihnen einen kostenlosen Ersatz zu schicken", "Es ist uns eine Freude, ... gutzuschreiben"
    _rx(rf"\b(?:(?:wir|ich)\s+(?:freuen\s+uns|freue\s+mich|(?:können|kann)\s+es\s+(?:kaum|gar\s+nicht)\s+erwarten)|"
        rf"es\s+ist\s+(?:uns|mir)\s+eine\s+(?:große\s+)?freude)\s*,?\s+(?:\S{{1,20}}\s+){{0,6}}?"
        rf"(?:zu\s+(?:erstatten|ersetzen|überweisen|entschädigen)|zurückzuerstatten|zurückzuzahlen|gutzuschreiben|"
        rf"zurückzuüberweisen|auszuzahlen|zurückzubuchen|{_NOUN}\b(?:\s+\S{{1,20}}){{0,3}}?\s+(?:zu\s+(?:schicken|senden|"
        rf"geben|gewähren|schenken|liefern|bieten)|anzubieten|zuzuschicken|zuzusenden))\b"),
    _rx(r"\b(?:betrag|kaufpreis|geld|summe|rechnungsbetrag)\s+(?:ist|wird|geht|kommt|läuft|fließt)\s+(?:\S{1,20}\s+){0,2}?"
        r"(?:unterwegs|auf\s+dem\s+weg|zurück|zu\s+ihnen\s+zurück)\b"),
    _rx(rf"\b(?:{_NOUN}|nachlass)\s+(?:ist|wird|wurde|läuft)\s+(?:bereits\s+|schon\s+|jetzt\s+)?(?:in\s+die\s+wege\s+geleitet|"
        r"in\s+bearbeitung|bearbeitet|läuft|eingeleitet|angestoßen)\b|\b(?:erstattung|rückerstattung|rückzahlung|gutschrift)\s+"
        r"läuft\b"),
    _rx(rf"\b(?:wir|ich)\s+(?:kümmern|kümmere)\s+(?:uns|mich)\s+(?:\S{{1,20}}\s+){{0,2}}?um\s+(?:die|eine|ihre|den|einen)\s+"
        rf"{_NOUN}"),
    _rx(r"\b(?:betrag|kaufpreis|geld|summe|rechnungsbetrag)\s+(?:\S{1,20}\s+){0,3}?(?:erstattet|zurückerstattet|gutgeschrieben|"
        r"zurücküberwiesen|zurückgezahlt|ausgezahlt|zurückgebucht)\s+(?:wird|wurde|ist|werden)\b"),
    _rx(rf"\b{_NOUN}\s+(?:\S{{1,20}}\s+){{0,3}}?(?:bekommen|erhalten)\s+sie\b"),
    _rx(r"\b(?:schicken|senden|liefern|geben|schicke|sende)\s+(?:wir\s+)?(?:ihnen\s+|dir\s+)?(?:\S{1,20}\s+){0,2}?(?:ein(?:en)?|eine)\s+"
        r"(?:neue[nrs]?|weitere[nrs]?|zweite[nrs]?)\s"),
    _rx(r"\b(?:der|ihr|den|die|das)\s+(?:gesamte\s+|volle\s+)?(?:betrag|kaufpreis|summe|geld|rechnungsbetrag)\s+"
        r"(?:wurde|wird|ist|werden)\s+(?:\S{1,20}\s+){0,3}?(?:gutgeschrieben|erstattet|zurückerstattet|zurückgebucht|"
        r"zurücküberwiesen|zurückgezahlt|ausgezahlt|rückerstattet|zurückgeschickt|zurückgesendet)\b"),
    _rx(r"\b(?:erstatten|überweisen|zahlen|schreiben)\s+wir\s+(?:ihnen\s+|dir\s+)?(?:\S{1,20}\s+){0,4}?(?:zurück|gut)?"),
    _rx(rf"\b(?:gewähren|schicken|senden|geben|bieten|schenken|erteilen)\s+wir\s+(?:ihnen\s+|dir\s+)?(?:\S{{1,20}}\s+){{0,4}}?"
        rf"{_NOUN}"),
    _rx(rf"\b{_NOUN}(?:\s+(?:des|der|ihres|ihrer|für\s+den|für\s+die)\s+[\w-]{{1,20}})?\s+(?:ist|sind)\s+"
        r"(?:bereits\s+|schon\s+|jetzt\s+|nun\s+)?(?:unterwegs|auf\s+dem\s+weg|veranlasst|"
        r"genehmigt|erfolgt|durchgeführt|abgeschlossen|angewiesen|raus|verschickt|versandt|bewilligt|akzeptiert)\b"),
    _rx(rf"\b(?:wir|ich)\s+(?:werden|haben|habe|möchten|würden|gewähren|schicken|senden|geben|bieten)\s+(?:ihnen\s+|dir\s+)?"
        rf"(?:\S{{1,20}}\s+){{0,4}}?{_NOUN}"),
    _rx(rf"\b(?:sie|du)\s+(?:erhalten|bekommen|erhältst|bekommst)\s+(?:\S{{1,20}}\s+){{0,3}}?(?:{_NOUN}|ihr\s+geld\s+zurück|"
        r"geld\s+zurück|(?:ihr|dein|das)\s+geld\s+(?:\S{1,20}\s+){0,4}?zurück)"),
    _rx(r"\b(?:sie|du)\s+(?:erhalten|bekommen|erhältst|bekommst)\s+(?:\S{1,20}\s+){0,4}?(?:zurückerstattet|erstattet|"
        r"gutgeschrieben|ersetzt|zurücküberwiesen|zurückgezahlt|zurück)\b"),
    _rx(r"\b(?:wir|ich)\s+(?:werden\s+|haben\s+|habe\s+|würden\s+|möchten\s+)?(?:\S{1,20}\s+){0,4}?(?:ersetzen|ersetzt|"
        r"umtauschen|umgetauscht|austauschen|ausgetauscht)\b"),
    _rx(r"\b(?:wir|ich)\s+(?:tauschen|schreiben|zahlen|buchen|überweisen|erstatten|tausche|schreibe|zahle|buche|"
        r"überweise|erstatte|schicken|senden)\s+(?:\S{1,20}\s+){0,5}?(?:um|aus|gut|zurück)\b"),
    _rx(r"\b(?:wir|ich)\s+(?:werden\s+|würden\s+)?(?:übernehmen|tragen|erstatten|übernehme|trage)\s+(?:\S{1,20}\s+){0,2}?"
        r"(?:kosten|versandkosten|gebühr|gebühren|rücksendekosten)\b|\b(?:kosten|versandkosten|gebühren?|rücksendekosten)\s+"
        r"(?:\S{1,20}\s+){0,2}?(?:übernehmen|tragen|erstatten)\s+wir\b"),
    _rx(rf"\b{_NOUN}\s+(?:wurde|ist|wird)\s+(?:(?:bereits|heute|soeben|gerade|schon|ihnen|dir|per|e-?mail|post)\s+){{0,3}}"
        r"(?:zugeschickt|zugesandt|geschickt|gesendet|zugestellt|ausgestellt|genehmigt|bestätigt|"
        r"veranlasst|freigegeben|angewiesen|ausgelöst|gewährt|erteilt|überwiesen|gutgeschrieben|durchgeführt|"
        r"abgeschlossen|ausgezahlt|bearbeitet|verschickt|versandt|erfolgen|bewilligt|stattgegeben|akzeptiert)\b"),
    _rx(r"\b(?:ihr|das)\s+geld\s+(?:wird|wurde|kommt)\s+(?:\S{1,20}\s+){0,3}?(?:zurück\w{0,12}|\w{0,6}erstattet|\w{0,6}überwiesen)"),
    # the object first: "Die Rückerstattung Ihrer Zahlung haben wir bereits veranlasst"
    _rx(rf"\b{_NOUN}\b(?:\s+(?!nicht\b|noch\b|kein)\S{{1,20}}){{0,4}}?\s+(?:haben|habe|hat)\s+(?:wir|ich)\s+(?:ihnen\s+)?"
        r"(?:(?:bereits|schon|jetzt|soeben|heute|gestern|umgehend|gerade|eben)\s+){0,2}(?:veranlasst|angewiesen|ausgelöst|eingeleitet|"
        r"durchgeführt|vorgenommen|freigegeben|beauftragt|genehmigt|gewährt|überwiesen|gutgeschrieben|bewilligt)\b"),
    # something sent "as a replacement": "A new manual is on its way to you as a replacement"
    _rx(r"\b(?:on\s+(?:its|the)\s+way|sent|send|sending|ship(?:ped|ping)?|post(?:ed|ing)?|get|getting|receive|dispatch(?:ed|ing)?|"
        r"mail(?:ed|ing)?|deliver(?:ed|ing)?)\b[^.!?;]{0,50}?\bas\s+(?:a\s+|an\s+)?(?:free\s+)?(?:replacement|substitute|"
        r"compensation|goodwill\s+gesture|gesture\s+of\s+goodwill)\b"),
    _rx(r"\b(?:unterwegs|schicken|senden|geschickt|gesendet|erhalten|bekommen|verschickt|versandt|liefern|geliefert)\b"
        r"[^.!?;]{0,50}?\bals\s+(?:kostenlosen?\s+)?(?:ersatz|entschädigung|wiedergutmachung|kulanz\w*)\b|"
        r"\bals\s+(?:kostenlosen?\s+)?(?:ersatz|entschädigung|wiedergutmachung)\s+(?:\S{1,20}\s+){0,3}?(?:schicken|senden|"
        r"erhalten|bekommen|liefern|unterwegs|zugeschickt|geschickt|verschickt)\b"),
    # an adversarial pass's wordings, by class
    # a charge undone: "You will see the charge reversed", "the late fee has been removed", "we have
    # written off the outstanding balance", "I've cancelled the late fee"
    _rx(r"\b(?:see|have|get)\s+(?:the|your|this|that)\s+(?:\w+\s+)?(?:charge|payment|debit|transaction)\s+(?:reversed|refunded|"
        r"cancell?ed|voided|returned)\b"),
    _rx(rf"\b{_SUBJ}\s*{_WILL}?\s*{_FILL}(?:cancel(?:l?ed)?|remov(?:e|ed)|waiv(?:e|ed)|drop(?:ped)?|wr(?:ite|itten|ote)\s+off|"
        r"forg(?:ive|iven|ave)|refund(?:ed)?|reverse[d]?)\s+(?:the|your|this|that|any|all)\s+(?:\w+\s+){0,2}?(?:fees?|charges?|"
        r"balance|surcharge|penalty|invoice|debt|amount\s+(?:due|owed|outstanding))\b"),
    _rx(r"\b(?:fees?|charges?|surcharge|penalty|outstanding\s+balance|balance|invoice)\b[^.!?\n]{0,20}?\b(?:has\s+been|have\s+been|"
        r"was|were|is|are|will\s+be|'s\s+been)\s+(?:now\s+|already\s+|fully\s+)?(?:removed|cancell?ed|waived|written\s+off|dropped|"
        r"forgiven|reversed|refunded|voided)\b"),
    # "I've arranged for your payment to be sent back"
    _rx(r"\b(?:payment|money|amount|funds|purchase\s+price)\s+to\s+be\s+(?:sent|paid|given|transferred|wired)\s+back\b"),
    # German: "Den Betrag buchen wir auf Ihre Karte zurück", "Wir verzichten auf die Mahngebühr", "Wir
    # erlassen Ihnen die Kosten", "schenken wir Ihnen einen Monat", "Das geht aufs Haus"
    _rx(r"\b(?:buchen|überweisen|zahlen|erstatten|schreiben|geben)\s+(?:wir|ich)\s+(?:\S{1,20}\s+){0,5}?(?:zurück|gut)\b"),
    _rx(r"\b(?:wir|ich)\s+(?:verzichten|verzichte)\s+(?:\S{1,12}\s+)?auf\s+(?:die|den|das|ihre|eine)\s+\w{0,14}(?:gebühr|kosten|"
        r"zahlung|betrag|forderung|rechnung)\w*|\b(?:wir|ich)\s+(?:erlassen|erlasse)\s+(?:ihnen|dir)\b|"
        r"\b(?:erlassen|erlasse)\s+(?:wir|ich)\s+(?:ihnen|dir)\b|\b(?:verzichten|verzichte)\s+(?:wir|ich)\s+auf\b|"
        r"\bauf\s+(?:die|den|das|ihre)\s+\w{0,14}(?:gebühr|kosten|zahlung|betrag|forderung)\w*\s+(?:verzichten|verzichte)\s+"
        r"(?:wir|ich)\b|"
        r"\b(?:schenken|spendieren|schenke)\s+(?:wir|ich)\s+(?:ihnen|dir)\b|\b(?:wir|ich)\s+(?:schenken|spendieren|schenke)\s+"
        r"(?:ihnen|dir)\b|\bgeht\s+aufs\s+haus\b|\bauf\s+(?:unsere|meine)\s+kosten\b"),
    # "Die Gebühr entfällt", "Die Rechnung wird storniert", "Wir stellen Ihnen ... nicht in Rechnung"
    _rx(r"\b\w{0,14}(?:gebühr|kosten)\w{0,3}\s+(?:entfällt|entfallen|wird\s+erlassen|werden\s+erlassen|wird\s+storniert|"
        r"werden\s+storniert|wurde\s+erlassen|wurde\s+storniert)\b(?!\s+(?:ab|über|bei|für\s+bestellungen|from|over))|\brechnung\s+(?:wird|wurde|ist)\s+(?:\S{1,20}\s+){0,2}?"
        r"storniert\b"),
    # "Der Kaufpreis wird Ihnen rückvergütet", "Die Lastschrift wird zurückgebucht", "Sie werden entschädigt"
    _rx(r"\b(?:wird|werden|wurde|wurden)\s+(?:ihnen|dir)\s+(?:\S{1,20}\s+){0,2}?(?:rück|zurück)?(?:vergütet|erstattet|"
        r"gutgeschrieben|überwiesen|ausgezahlt)\b|\b(?:lastschrift|abbuchung|belastung|zahlung)\s+(?:wird|wurde|ist)\s+"
        r"(?:\S{1,20}\s+){0,2}?(?:zurückgebucht|zurückgegeben|storniert|rückgängig\s+gemacht)\b|"
        r"\b(?:sie|du)\s+(?:werden|wirst)\s+(?:\S{1,20}\s+){0,2}?(?:entschädigt|ausgezahlt)\b"),
    # "Wir leiten die Erstattung heute in die Wege", "Wir kommen Ihnen mit einem Preisnachlass
    # entgegen", "Sie erhalten ein kostenloses Upgrade", "Erstattet!"
    _rx(rf"\b(?:wir|ich)\s+(?:leiten|leite)\s+(?:\S{{1,20}}\s+){{0,3}}?{_NOUN}\s+(?:\S{{1,20}}\s+){{0,2}}?in\s+die\s+wege\b|"
        rf"\b(?:wir|ich)\s+(?:kommen|komme)\s+(?:ihnen|dir)\s+(?:\S{{1,20}}\s+){{0,3}}?{_NOUN}\s+entgegen\b|"
        r"\b(?:sie|du)\s+(?:bekommen|erhalten|bekommst|erhältst)\s+(?:\S{1,25}\s+){0,3}?(?:kostenlose[nrsm]?|gratis-?)\s*\w+|"
        r"(?:^|[:-])\W{0,3}(?:voll\s+)?(?:erstattet|zurückerstattet|gutgeschrieben)\s*(?:[.!]|$)"),
]
_PROMISE_PRE_HEDGE = _rx(rf"(?:\b(?:{_NEG}|{_COND}|{_REPORT}|could|might|may|possibly|perhaps|eventuell|vielleicht|"
                         r"könnte|könnten|müsste|müssten|dürfte|dürften|"
                         r"möglicherweise|whether|decide|entscheiden)\b|n't)")
_PROMISE_POST_HEDGE = _rx(r"(?:\b(?:not|never|nicht|kein|colleague|supervisor|review|look\s+into|decide|possible|eligible|"
                          r"whether|prüfen|entscheiden|möglich|geprüft|kolleg\w{0,4}|buchhaltung|weitergegeben|"
                          r"weitergeleitet|weitergereicht|forwarded|passed\s+(?:it\s+)?on)\b|n't)")
FUTURE_RE = _rx(r"\b(?:will|'ll|shall|going\s+to|can|would|credit|discount|voucher|coupon|compensat|replacement|"
                r"werden|wird|gutschein|rabatt|gutschrift)")


# a plain-substring gate (C speed; a superset of what the patterns need): a sentence without one of
# these names no promise, and the ~60 promise patterns are not tried on it
_PROMISE_CUE = ("refund", "reimburs", "credit", "gutge", "discount", "voucher", "coupon", "compensat", "money", "replac",
                "on us", "the house", "expense", "prozent", "ziehen",
                "free", "payment", "amount", "charge", "funds", "total", "waiv", "%", "erstatt", "gutschr", "rabatt",
                "gutschein", "entschädig", "ersatz", "geld", "nachlass", "zurück", "rückzahl", "rückbuch", "rücküberw",
                "rückverg", "kulanz", "betrag", "kaufpreis", "summe", "ausgezahl", "auszahl", "kostenlos", "gratis",
                "umsonst", "purchase", "repay", "back", "new ", "another", "cost", "fee", "revers", "void", "kosten",
                "gebühr", "ersetz", "tausch", "gut", "cent", "penny", "knock", "shave", "off", "goodwill", "neue",
                "weitere", "exchang", "swap", "€", "$", "£", "eur", "dollar",
                "chargeback", "reduction", "balance", "penalty", "invoice", "gift", "approved", "done", "schenk", "spendier",
                "entfäll", "entfall", "verzicht", "erlass", "haus", "vergüt", "lastschrift", "abbuchung", "wege", "entgegen",
                "rechnung", "storn", "erledigt", "genehmigt", "buchen", "überweis", "zahlen")


# the customer's own words, quoted as such: 'You wrote: "we will refund you"', 'Sie schreiben: "..."'
_THEIR_WORDS_RE = _rx(rf"(?:\b(?:you|the\s+customer|they|sie|du|ihre\s+nachricht|your\s+(?:message|e-?mail|question|"
                      rf"note|ticket))\b[^\"]{{0,25}}?\b(?:{_REPORT}|quote|quoted|zitieren|schreibst|fragst)\b"
                      rf"|\b(?:{_REPORT})\s+(?:by\s+)?(?:you|the\s+customer|sie))[^\"]{{0,12}}$")


def _their_words(sent: str, p: int) -> bool:
    """Is SENT[p] inside a double-quoted passage that the sentence gives as the customer's words?"""
    q = sent.rfind('"', 0, p)
    if q < 0 or sent.count('"', 0, q) % 2:  # not inside an open quote
        return False
    return _THEIR_WORDS_RE.search(sent, max(0, q - 60), q) is not None


# Promises made in the negative: not charging the customer ("you won't be charged for it", "I'll
# make sure you're not billed", "es entstehen Ihnen keine Kosten"). Their "not" is the promise,
# so they are read apart from the patterns above, whose negation is a hedge; a charge not made
# twice or again, or not before/until something, is how billing works, not a promise.
_NOT_CHARGED_END = r"(?!\s+(?:twice|again|until|unless|before|if|when|yet|doppelt|erneut|nochmals|bis|vor))"
NO_CHARGE_RES = [
    _rx(r"\b(?:you|sie|du)\s+(?:won't|will\s+not|will\s+never|wouldn't|would\s+not|don't|do\s+not)\s+"
        r"(?:be\s+(?:charged|billed)|(?:have|need)\s+to\s+pay(?:\s+(?:anything|for\s+(?:it|this|that)))?)\b"
        + _NOT_CHARGED_END),
    _rx(r"\bmake\s+sure\s+(?:that\s+)?you(?:'re|\s+are|\s+aren't|\s+won't\s+be)\s+(?:not\s+)?(?:charged|billed)\b"
        + _NOT_CHARGED_END),
    # "Your card will not be billed" ("there is nothing to pay" is a fact of a paid order: no pattern)
    _rx(r"\b(?:your|the)\s+(?:card|account|bank\s+account|credit\s+card)\s+(?:won't|will\s+not|will\s+never|is\s+not|isn't)\s+"
        r"(?:be\s+)?(?:billed|charged|debited)\b" + _NOT_CHARGED_END),
    # "Wir stellen Ihnen die Bestellung nicht in Rechnung"
    _rx(r"\b(?:wir|ich)\s+(?:stellen|stelle|werden|möchten)\s+(?:ihnen|dir)\s+(?:\S{1,20}\s+){0,4}?nicht\s+in\s+rechnung\b"
        + _NOT_CHARGED_END),
    # "we won't charge you for it", "I'm not going to bill your card"
    _rx(r"\b(?:we|i)(?:\s+will\s+not|\s+won't|\s+wouldn't|\s+shall\s+not|\s+don't|\s+do\s+not|(?:'re|\s+are|'m|\s+am)\s+not"
        r"\s+going\s+to)\s+(?:be\s+)?(?:charg(?:e|ing)|bill(?:ing)?)\s+(?:you|your\s+(?:card|account))\b" + _NOT_CHARGED_END),
    # "there will be no charge", "there won't be any cost for you", "no charge, of course"
    _rx(r"(?:\bthere\s+(?:will\s+be|is|'s|'ll\s+be)\s+no\s+(?:extra\s+|additional\s+|further\s+)?(?:charge|cost|fee)s?\b|"
        r"\bthere\s+(?:won't|will\s+not)\s+be\s+any\s+(?:extra\s+|additional\s+|further\s+)?(?:charge|cost|fee)s?\b|"
        r"^\W{0,3}(?:and\s+)?no\s+(?:extra\s+|additional\s+)?(?:charge|cost)s?\s*(?:,\s*of\s+course|for\s+you|to\s+you)\b)"
        r"(?!\s+(?:so\s+far|at\s+the\s+moment|right\s+now|for\s+now|beyond|other\s+than|except|apart\s+from|besides|"
        r"on\s+top\s+of))" + _NOT_CHARGED_END),
    # "es fallen keine Kosten für Sie an", "Ihnen entstehen keine Kosten"
    _rx(r"\b(?:es\s+)?fallen\s+(?:für\s+(?:sie|dich)\s+)?(?:dafür\s+)?keine\s+(?:weiteren\s+|zusätzlichen\s+)?kosten\s+"
        r"(?:für\s+(?:sie|dich)\s+)?an\b|\b(?:ihnen|dir)\s+entstehen\s+(?:dafür\s+)?keine\s+(?:weiteren\s+|zusätzlichen\s+)?"
        r"kosten\b"),
    _rx(r"\b(?:wir\s+berechnen\s+(?:ihnen|dir)\s+(?:dafür\s+)?nichts|(?:es\s+)?entstehen\s+(?:ihnen|dir)\s+(?:dafür\s+)?"
        r"keine\s+(?:weiteren\s+|zusätzlichen\s+)?kosten|(?:sie|du)\s+(?:zahlen|zahlst)\s+(?:dafür\s+)?nichts|"
        r"(?:sie|du)\s+(?:müssen|musst)\s+(?:dafür\s+)?nichts\s+(?:mehr\s+)?(?:zahlen|bezahlen))\b"
        + _NOT_CHARGED_END),
]
_NO_CHARGE_CUE = ("charge", "bill", "pay", "kosten", "nichts", "cost", "fee", "debit", "rechnung")


# "at no extra cost" says what is promised, not that it is not: its "no" is no hedge
_NO_COST_RE = _rx(r"\bat\s+no\s+(?:extra\s+|additional\s+|further\s+)?(?:cost|charge)s?\b")


# eagerness, whose "can't" negates nothing: "We can't wait to refund you"
_EAGER_RE = _rx(r"\b(?:can(?:'t|not|\s+not)|could(?:n't|\s+not))\s+wait\s+to\b")


def _hedged(said: str) -> bool:
    if _NO_COST_RE.worth_trying(said):
        said = _NO_COST_RE.get().sub(" ", said)
    if _EAGER_RE.worth_trying(said):
        said = _EAGER_RE.get().sub(" ", said)
    return HEDGE_NEG.search(said) is not None


# a wish, deferred in the same sentence: "We'd like to refund you, but a colleague must decide",
# "Wir würden Ihnen gern den Betrag erstatten, aber darüber entscheidet ein Kollege"
_WISH_RE = _rx(r"\b(?:would|'d)\s+(?:like|love)\s+to\b|\b(?:want|wish)\s+to\b|\b(?:would|'d)\s+be\s+(?:happy|glad|pleased)\s+to\b|"
               r"\b(?:eager|keen)\s+to\b|\bmöchten\b|\bmöchte\b|\bwollen\b|\bwürden?\b[^.!?]{0,40}?\bgerne?\b")
_BUT_DEFER_RE = _rx(r"\b(?:but|however|though|aber|jedoch|leider)\b[^.!?]{0,80}?(?:\b(?:not|never|cannot|nicht|kein\w*|"
                    r"colleague\w*|supervisor|billing|decides?|decided|decision|approv\w*|review\w*|kolleg\w*|buchhaltung|"
                    r"entscheid\w*|prüf\w*|only|nur)\b|n't)")


# a request agreed to, the promise named before it: "You asked for a refund, and that's approved",
# "... a full refund - consider it done", "Sie baten um eine Erstattung - das ist erledigt" (the
# request itself is reported, which hedges a promise read from its noun: the agreement is not)
_AGREED_RE = _rx(r"\b(?:that|this|it)(?:'s|\s+is|\s+has\s+been|\s+was)\s+(?:now\s+|already\s+)?(?:been\s+)?(?:approved|granted|"
                 r"done|arranged|sorted|authori[sz]ed)\b|\bconsider\s+it\s+done\b|\b(?:das|dies)\s+(?:ist|wurde|wird)\s+"
                 r"(?:\S{1,12}\s+)?(?:erledigt|genehmigt|veranlasst|bewilligt)\b")
_NOUN_RE = _rx(rf"\b{_NOUN}\b")


def _agreed_claim(sent: str) -> tuple[int, str] | None:
    m = _AGREED_RE.search(sent)
    if m is None or not _NOUN_RE.search(sent, 0, m.start()):
        return None
    before, said, after = clause_of(sent, m.start(), m.end())
    if _PROMISE_PRE_HEDGE.search(_asserted(before[-80:])) or _PROMISE_POST_HEDGE.search(after[:60]):
        return None
    return m.start(), m.group(0)


def _promise_claims(sent: str) -> Iterable[tuple[int, str]]:
    low = sent.lower()
    if not any(w in low for w in _PROMISE_CUE + _NO_CHARGE_CUE):
        return
    for rx in PROMISE_RES:
        for m in rx.finditer(sent):
            if '"' in sent and _their_words(sent, m.start()):
                continue
            before, said, after = clause_of(sent, m.start(), m.end())
            if _PROMISE_PRE_HEDGE.search(_asserted(before[-80:])) or _hedged(said) or \
                    _PROMISE_POST_HEDGE.search(after[:60]):
                continue
            if _WISH_RE.search(sent[max(0, m.start() - 40):m.end()]) and _BUT_DEFER_RE.search(sent, m.end()):
                continue
            yield m.start(), m.group(0)
            return  # one promise a sentence piece is enough
    agreed = _agreed_claim(sent)
    if agreed is not None:
        yield agreed
        return
    if not any(w in low for w in _NO_CHARGE_CUE) or _LEAD_COND_RE.search(sent):
        return  # "If the payment fails, you will not be charged": how billing works
    for rx in NO_CHARGE_RES:
        for m in rx.finditer(sent):
            if '"' in sent and _their_words(sent, m.start()):
                continue
            before, _said, _after = clause_of(sent, m.start(), m.end())
            if _PROMISE_PRE_HEDGE.search(_asserted(before[-80:])):
                continue  # "we can't promise you won't be charged", "if ..."
            yield m.start(), m.group(0)
            return


# ----------------------------------------------------------------------------- the model's claims
# What the floor still says of a claim the model layer read. The model reads by meaning, the floor
# by pattern; where the floor reads the very words of the claim and finds them said as not so
# (negated, conditional, reported, a policy, about a payment and not the order), the floor's
# reading wins: "We cannot promise a refund", "Whether a refund is possible is for a colleague
# to decide", "Einen Rabatt kann ich Ihnen leider nicht anbieten", "We couldn't find your payment
# on order X" (a small model reads each as a promise or as "not found"). A promise must also
# name something promised: a claim of one in words that name no refund, credit, discount,
# replacement, compensation, money or charge ("Your order is waiting for payment", "Ihre
# Bestellung enthält ein Printed manual") is a misreading, and so is a promise whose value is an
# order's status. Where the floor has no reading of its own, the model's claim stands.

# what a promise gives (a negation before it hedges it: "we cannot offer a refund") and what it
# spares the customer (a negation is the promise: "no charge", "you won't pay anything")
_GIVEN_RE = _rx(r"\b(?:refund|reimburs|credit|gutschr|gutge|discount|voucher|coupon|compensat|money|replac|free\b|waiv|"
                r"erstatt|rabatt|gutschein|entschädig|ersatz|geld|nachlass|rückzahl|rückbuch|rücküberw|rückverg|kulanz|"
                r"kostenlos|gratis|umsonst|repay|goodwill|exchang|swap|ersetz|tausch|zurück|back\b|return|new\b|neue|"
                r"another|off\b|cover|make\s+(?:it\s+)?up|make\s+it\s+right|wiedergutmach|on\s+us\b|on\s+the\s+house|"
                r"schenk|geschenkt|übernehm)|\d\s?%|[€$£]")
_SPARED_RE = _rx(r"\b(?:charg|bill|cost|fee\b|fees\b|kosten|pay\b|zahlen\b|bezahlen|berechn)")
_SPARED_PRE_HEDGE = _rx(rf"\b(?:{_COND}|{_REPORT}|could|might|may|possibly|perhaps|whether|eventuell|vielleicht)\b")
_SPARED_POST_HEDGE = _rx(r"\b(?:colleague|supervisor|review|decide|possible|eligible|whether|prüfen|entscheiden|möglich|"
                         r"twice|again|until|unless|before|yet|doppelt|erneut|nochmals)\b")
_GENERIC_PROMISE_RE = _rx(r"^\W{0,3}(?:refunds|credits|discounts|vouchers|replacements|compensations|erstattungen|"
                          r"rabatte|gutschriften|gutscheine)\s+(?:are|get|can|may|werden|sind|können|gibt)\b")
_STATUS_VALUE_RE = re.compile(r"^(?:pending[ _]payment|paid|license[ _]issued|shipped|delivered|cancell?ed|"
                              r"(?:waiting|awaiting)\b.*|.*\bpayment\s+(?:pending|confirmed|matched|received)|"
                              r"not\s+(?:yet\s+)?(?:paid|shipped|delivered|issued))$", re.I)


# someone is to look into it first: "A colleague will look into a refund", "wir prüfen eine Erstattung"
_LOOKED_INTO_RE = _rx(r"\b(?:look(?:s|ing)?\s+into|check(?:s|ing)?(?:\s+on)?|review(?:s|ing)?|considering|assess(?:es|ing)?|"
                      r"evaluat(?:e|es|ing)|examin(?:e|es|ing)|investigat(?:e|es|ing)|discuss(?:es|ing)?|"
                      r"prüf(?:en|t)|geprüft|klären|klärt|entscheid(?:en|et))\b[^.!?;]{0,40}$")
# what a "not found" may be said of that is not the order, when the sentence names no order
_NOT_ORDER_NOUN_RE = _rx(r"\b(?:payment|transfer|transaction|invoice|receipt|tracking|licen[cs]e|zahlung|überweisung|"
                         r"rechnung|lizenz|sendungsnummer)\b")
_ORDER_NOUN_RE = _rx(r"\b(?:orders?|bestellung(?:en)?|auftrag|purchase)\b")
# a lookup that failed is no order not found: "I did not save a draft: the lookup failed"
_LOOKUP_FAILED_RE = _rx(r"\b(?:lookup|look-up|search|query|database|system|abfrage|suche|datenbank)\b[^.!?]{0,30}?\b(?:failed|"
                        r"errored|timed\s+out|is\s+down|was\s+down|unavailable|did\s+not\s+answer|fehlgeschlagen|"
                        r"nicht\s+erreichbar|ausgefallen)\b")
_FOUND_WORD_RE = _rx(r"\b(?:find|found|locate|exist|exists|record|finden|gefunden|existiert)\b")
# someone else decides: "Über eine Erstattung entscheidet ein Kollege"
_OTHERS_DECIDE_RE = _rx(r"\b(?:entscheidet|entscheiden|kollegin|kollegen|kollege|decides|decided\s+by|up\s+to\s+(?:a|our|the)\s+"
                        r"(?:colleague|team|manager|supervisor))\b")


_MONEY_IN_RE = _rx(r"^(?:money|geld|betrag|amount)")
_CAME_TO_US_RE = _rx(r"\b(?:eingegangen|angekommen|eingetroffen|erhalten|empfangen|gutgeschrieben\s+(?:bei\s+uns|auf\s+unserem)|"
                     r"bei\s+uns|received|arrived|reached\s+us|came\s+in|come\s+in|landed|with\s+us)\b")
_GOES_BACK_RE = _rx(r"\b(?:zurück|back|return|refund|erstatt|rückzahl|rücküberw|rückbuch|repay|reimburs)")


def _topic_hedged(sent: str, p: int, q: int, spared: bool) -> bool:
    """Is the promise's word SENT[p:q] said as not so (the floor's own hedges of a promise)?"""
    if '"' in sent and _their_words(sent, p):
        return True
    before, said, after = clause_of(sent, p, q)
    if _GENERIC_PROMISE_RE.search(before + said + after):
        return True
    ours, then = _asserted(before[-80:]), after[:60]
    if _LOOKED_INTO_RE.search(ours) or _OTHERS_DECIDE_RE.search(then):
        return True
    if _MONEY_IN_RE.search(said) and _CAME_TO_US_RE.search(before[-40:] + " " + after[:50]) and \
            not _GOES_BACK_RE.search(before + said + after):
        return True  # "Ihr Geld ist bei uns eingegangen": money that came to us is no money given back
    if spared:
        return bool(_SPARED_PRE_HEDGE.search(ours) or _SPARED_POST_HEDGE.search(then))
    return bool(_PROMISE_PRE_HEDGE.search(ours) or _PROMISE_POST_HEDGE.search(then))


def model_claim_not_so(sent: str, a: int, b: int, kind: str, value: Any) -> bool:
    """Does the floor read the model's claim of KIND, quoted as SENT[a:b], as not made?"""
    if kind == "promise":
        if _STATUS_VALUE_RE.match(str(value).strip()):
            return True
        hits = [(m.start(), m.end(), False) for m in _GIVEN_RE.finditer(sent)]
        hits += [(m.start(), m.end(), True) for m in _SPARED_RE.finditer(sent)]
        inside = [h for h in hits if a <= h[0] < b]
        hits = inside or hits  # the quote's own words first; the sentence's when the quote names none
        return not hits or all(_topic_hedged(sent, p, q, spared) for p, q, spared in hits)
    if kind == "not_found":
        if _NOT_ORDER_NOUN_RE.search(sent) and not _ORDER_NOUN_RE.search(sent):
            return True  # "Wir konnten Ihre Zahlung zu GH56JK78MN noch nicht finden"
        if _LOOKUP_FAILED_RE.search(sent) and not _FOUND_WORD_RE.search(sent):
            return True  # "the lookup failed": not an answer of "not found"
        if not _FOUND_WORD_RE.search(sent) and not _UNKNOWN_RE.search(sent):
            return True  # "We cannot offer a refund": nothing said not to be found
        return NOTFOUND_RE.search(sent) is not None and next(iter(_not_found_claims(sent)), None) is None
    if kind == "status":  # a status in words that name none of it: "The carrier's estimate is 3 December"
        cue = _STATUS_WORDS_OF.get(str(value).removeprefix(NOT).strip().lower())
        return cue is not None and not cue.search(sent)
    if kind == "date":  # a date the words do not hold: no digit, month or ordinal in the sentence, or no number of its day
        if not _ANY_DATE_RE.search(sent):
            return True
        days = {t[2] for t in value if isinstance(t, tuple) and len(t) == 3 and isinstance(t[2], int)} \
            if isinstance(value, (set, frozenset)) else set()
        return bool(days) and not _WORD_DATE_RE.search(sent) and \
            not any(re.search(rf"(?<![\d.,]){d}(?!\d)|(?<![\d.,])0{d}(?!\d)", sent) for d in days)
    if kind == "draft":  # "Ich habe noch keinen Entwurf gespeichert": a draft said not to be
        return _DRAFT_HEDGE.search(sent) is not None and DRAFT_ID_RE.search(sent) is None
    return False


_UNKNOWN_RE = _rx(r"\b(?:unknown|unbekannt|no\s+such|no\s+order|keine\s+bestellung|nowhere|nirgends|not\s+in\s+our)\b")
# the words a status needs somewhere in its sentence for a model's claim of it to stand
_STATUS_WORDS_OF = {
    "pending_payment": _rx(r"pending|await|wait|payment|pay|zahl|offen|ausstehend|unpaid|unbezahlt|match|zugeordnet|zuordn|"
                           r"transfer|überweis|geld|money|cleared|confirm|bestätig"),
    "paid": _rx(r"paid|pay|zahl|settled|match|zugeordnet|receiv|erhalten|eingegangen|angekommen|cleared|reconcil|beglichen|"
                r"complete|abgeschlossen|erledigt|money|geld|transfer|überweis|confirm|bestätig|through|book|gebucht|verbucht"),
    "license_issued": _rx(r"licen|lizenz|key|schlüssel|code|activat|aktivier|subscri|abo"),
    "shipped": _rx(r"ship|dispatch|sent|send|post|mail|transit|way|weg|carrier|courier|left|gone|went|out|versand|versend|"
                   r"verschick|unterwegs|übergeben|abgeschickt|raus|dhl|dpd|ups|hermes|gls|fedex|truck|van|depot|track|"
                   r"sendung|zustell|deliver|liefer|route|pack|lager|warehouse"),
    "delivered": _rx(r"deliver|arriv|zugestellt|zustell|geliefert|liefer|reach|signed|door|briefkasten|letterbox|mailbox|"
                     r"packstation|locker|received|erhalten|angekommen|eingetroffen|neighbo|nachbar|hand|dropped|left\s+(?:at|with)|"
                     r"got\s+it|got\s+to|bei\s+ihnen|with\s+you|ziel|destination|abgegeben|hinterlegt"),
    "cancelled": _rx(r"cancel|storn|annull|void|called\s+off|withdrawn|zurückgezogen|aufgehoben"),
    "refunded": _rx(r"refund|erstatt|money\s+back|geld\s+zurück|zurückgezahlt|zurücküberwiesen|reimburs|credit|gutgeschrieben|"
                    r"zurückgebucht|revers"),
}
_WORD_DATE_RE = _rx(rf"\b(?:{_ORD}|{_DE_ORD})\b|today|tomorrow|yesterday|heute|morgen|gestern|week|woche|monday|tuesday|"
                    r"wednesday|thursday|friday|saturday|sunday|montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag|"
                    r"christmas|weihnacht|silvester|new\s+year|neujahr|easter|ostern")
_ANY_DATE_RE = _rx(rf"\d|\b(?:{_MON})\b|\b(?:{_ORD}|{_DE_ORD})\b|today|tomorrow|yesterday|heute|morgen|gestern|week|woche|"
                   r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|montag|dienstag|mittwoch|donnerstag|freitag|"
                   r"samstag|sonntag|christmas|weihnacht|silvester|new\s+year|neujahr|easter|ostern")


# ----------------------------------------------------------------------------- drafts
DRAFT_ID_RE = _lazy(r"(?<![\w-])d-[0-9a-f]{4,12}(?![\w-])", re.I)
DRAFT_CLAIM_RE = _rx(
    r"\b(?:saved|stored|created|wrote|written|prepared|drafted|composed|put\s+together|queued|left|added|submitted)\b"
    r"[^.!?\n]{0,40}?\b(?:draft|reply|response|answer|e-?mail|message)\b|"
    r"\b(?:draft|reply|response|answer)\b[^.!?\n]{0,40}?\b(?:saved|stored|created|is\s+ready|pending\s+review|"
    r"ready\s+for\s+(?:your\s+)?review|awaits\s+(?:your\s+)?review|waiting\s+for\s+(?:your\s+)?review|"
    r"in\s+(?:the|your)\s+(?:review\s+)?queue|queued|submitted|drafted|prepared|written\s+up|awaiting\s+(?:your\s+)?(?:review|approval)|"
    r"ready\s+for\s+(?:your\s+)?approval|up\s+for\s+review|waiting\s+for\s+(?:your\s+)?approval|"
    r"awaits\s+(?:your\s+)?approval)\b|"
    r"\b(?:submitted|uploaded|filed|sent)\b[^.!?\n]{0,30}?\b(?:draft|reply|response)\b[^.!?\n]{0,20}?\b(?:for\s+"
    r"(?:your\s+)?(?:review|approval))\b|"
    r"\bwhich\s+you\s+can\s+(?:now\s+)?(?:review|approve|check|edit|send)\b|"
    r"\b(?:reply|response|answer|draft|e-?mail|message)\b[^.!?\n]{0,40}?\bfor\s+your\s+(?:approval|review|sign-?off)\b|"
    r"\b(?:e-?mail|message|letter)\s+(?:to\s+the\s+customer\s+|for\s+the\s+customer\s+)?(?:is|has\s+been|was)\s+(?:now\s+)?"
    r"(?:drafted|written\s+up|prepared)\b|"
    r"\b(?:put|got|pulled|written|wrote|typed)\s+(?:a|the|your|an)\s+(?:draft|reply|response|answer|e-?mail)\s+"
    r"(?:together|up|out)\b|"
    r"\byou\s+can\s+(?:now\s+)?(?:review|approve|edit)\s+(?:it|the\s+(?:draft|reply))\b|"
    r"\b[a-zäöü]{0,14}(?:entwurf(?:e?s)?|antwort)\b[^.!?\n]{0,40}?\b(?:gespeichert|erstellt|angelegt|bereit|abgelegt|verfasst|entworfen|"
    r"vorbereitet|geschrieben|wartet|liegt)\b[^.!?\n]{0,40}?\b(?:freigabe|prüfung|durchsicht)\b|"
    r"\b[a-zäöü]{0,14}(?:entwurf(?:e?s)?|antwort)\b[^.!?\n]{0,40}?\b(?:gespeichert|erstellt|angelegt|bereit|abgelegt|verfasst|entworfen|"
    r"vorbereitet|geschrieben)\b|"
    r"\b(?:gespeichert|erstellt|verfasst|angelegt|vorbereitet|geschrieben|entworfen)\b[^.!?\n]{0,40}?\b[a-zäöü]{0,14}"
    r"(?:entwurf|antwort)\b")
_DRAFT_HEDGE_BEFORE = _rx(r"(?:\b(?:i|we)\s*(?:can|could|would|will|'ll|'d|shall|may|might|should|am\s+going\s+to)\s+"
                          r"(?:\w+\s+)?$|\b(?:if|once|when|whether|wenn|sobald|falls|ob)\b)")
_DRAFT_HEDGE = _rx(r"(?:\b(?:not|never|no|cannot|unable|failed|couldn't|wasn't|nicht|kein|keinen|konnte)\b|n't)")
# the draft said, later in the sentence, not to have been kept: "I drafted a reply, but it was not saved"
_DRAFT_UNSAVED_RE = _rx(r"(?:\b(?:not|never|nicht|nie|kein\w*)\b|n't)[^.!?\n]{0,30}?\b(?:saved|stored|kept|created|queued|"
                        r"gespeichert|abgelegt|erstellt|angelegt)\b|\b(?:failed|fehlgeschlagen|scheiterte)\b|"
                        r"\bkonnte\b[^.!?\n]{0,30}?\bnicht\b")
_DRAFT_ABOUT_CUSTOMER = _rx(r"\b(?:you|the\s+customer|they|he|she)\s+(?:wrote|sent|saved|prepared)\b")

EXAMPLE_RE = _rx(r"\b(?:e\.g|i\.e|for\s+example|for\s+instance|such\s+as|looks?\s+like|format|formats|z\.\s?b|"
                 r"zum\s+beispiel|beispielsweise)\b")


# A reply said to have been sent to the customer: never true (agentcli sends nothing; a draft
# waits for a person's review). "I've sent the customer a reply", "I replied to the customer",
# "Message sent to the customer", "Ich habe die Antwort an den Kunden geschickt".
_WHO = r"(?:the\s+customer|customer|them|him|her|the\s+client|ihm|ihr|ihnen)"
_SENT_CLAIM_RE = _rx(
    r"\b(?:i|we)(?:'ve|\s+have|\s+just|\s+already|\s+now)*\s+(?:sent|e-?mailed|mailed|messaged|forwarded)\s+"
    rf"(?:{_WHO}\s+)?(?:(?:a|the|my|our|an)\s+)?(?:reply|response|answer|message|e-?mail|note)\b|"
    rf"\b(?:i|we)(?:'ve|\s+have|\s+just|\s+already|\s+now)*\s+(?:e-?mailed|messaged|written\s+to|wrote\s+to)\s+{_WHO}\b|"
    rf"\b(?:i|we)(?:'ve|\s+have|\s+just|\s+already|\s+now)*\s+(?:replied|responded|written\s+back|wrote\s+back)\s+to\s+{_WHO}\b|"
    r"\b(?:reply|response|answer|message|e-?mail)\s+(?:(?:has\s+been|was|is|got)\s+)?(?:sent|delivered|e-?mailed)\s+"
    r"(?:off\s+)?to\s+(?:the\s+)?(?:customer|client)\b|"
    r"\b(?:ich|wir)\s+(?:habe|haben)\s+(?:die|eine|meine|unsere|ihre)?\s*(?:antwort|nachricht|e-?mail|mail)\s+"
    r"(?:an\s+(?:den\s+kunden|die\s+kundin|sie|ihn)\s+)?(?:geschickt|gesendet|versandt|verschickt|abgeschickt|weitergeleitet)\b|"
    r"\b(?:ich|wir)\s+(?:habe|haben)\s+(?:dem\s+kunden|der\s+kundin|ihm|ihr)\s+(?:geantwortet|geschrieben|gemailt)\b")


def _sent_claims(sent: str) -> Iterable[int]:
    """Where SENT says a reply went to the customer (not hedged, negated or asked)."""
    m = _SENT_CLAIM_RE.search(sent)
    if m is None or sent.rstrip(" \"')").endswith("?"):
        return
    before, said, after = clause_of(sent, m.start(), m.end())
    if not _DRAFT_HEDGE.search(before + said) and \
            not _DRAFT_HEDGE_BEFORE.search(sent[max(0, m.start() - 40):m.start()]):
        yield m.start()


def _draft_claims(sent: str) -> Iterable[tuple[int, str]]:
    for m in DRAFT_ID_RE.finditer(sent):
        yield m.start(), m.group(0).lower()
    m = DRAFT_CLAIM_RE.search(sent)
    if m is None:
        return
    # a negation in the claim's own clause (not in one after it: "I drafted a reply that explains
    # the license is not issued yet" says a draft was made)
    before, said, after = clause_of(sent, m.start(), m.end())
    if not _DRAFT_HEDGE.search(before + said + after[:20]) and not _DRAFT_UNSAVED_RE.search(sent, m.end()) and \
            not _DRAFT_HEDGE_BEFORE.search(sent[max(0, m.start() - 40):m.start()]) \
            and not _DRAFT_ABOUT_CUSTOMER.search(sent) and not sent.rstrip(" \"')").endswith("?"):
        yield m.start(), ""


# ----------------------------------------------------------------------------- one text
@dataclass
class Known:
    """What the floor needs to know of the ticket to read a text: the line items' names (for
    counts), the ``key``-s of its tool strings and questions (text copied from them is marked
    ``quoted``), and the deadline (``time.monotonic()``) past which it stops reading."""
    item_labels: tuple[str, ...] = ()
    quote_keys: tuple[str, ...] = ()   # key() of the tool strings and questions
    deadline: float | None = None


_QUOTED_RE = _lazy(r'"([^"\n]{8,2000})"')


def quoted_spans(text: str, known: Known) -> list[tuple[int, int]]:
    """Spans of TEXT copied from a tool result or a question: a quoted passage found in one of
    them, or a long verbatim run of one."""
    spans = []
    if not known.quote_keys:
        return spans
    for m in _QUOTED_RE.finditer(text):
        inner = key(m.group(1).rstrip(".\u2026 "))
        if inner and any(inner in s for s in known.quote_keys):
            spans.append(m.span())
        if len(spans) > 200:
            break
    return spans


class OutOfTime(Exception):
    """The deadline passed while reading a text."""


def extract(text: str, known: Known) -> tuple[list[Claim], bool]:
    """The claims of TEXT (already ``fold``-ed) and whether all of it was read (False: the
    deadline passed, the text was longer than ``MAX_TEXT`` or had more pieces than read)."""
    complete = len(text) <= MAX_TEXT
    text = text[:MAX_TEXT]
    spans = quoted_spans(text, known)
    out: list[Claim] = []
    pieces = pieces_of(text)
    if len(pieces) >= MAX_PIECES:
        complete = False
    own: tuple[int, int, int] | None = None  # a piece read with more around it: claims from, start, end

    def keep_own() -> None:
        """Of the claims the last piece read, those that begin in it (not in what was read of
        the sentence around it: the piece before or after reads those)."""
        if own is not None:
            n0, x, y = own
            out[n0:] = [c for c in out[n0:] if x <= c.start < y]

    for x, y, a, b in pieces:
        keep_own()
        if known.deadline is not None and time.monotonic() > known.deadline:
            return _distinct(out), False
        own = (len(out), x, y) if (a, b) != (x, y) else None
        sent = text[a:b]
        in_quote = [(x - a, y - a) for x, y in spans if x < b and y > a]

        def quoted(p: int) -> bool:
            return any(x <= p < y for x, y in in_quote)

        codes = codes_in(sent)
        example = EXAMPLE_RE.search(sent) is not None
        for p, c, raw in codes:
            out.append(Claim("order", c, sent, a + p, order=c, example=example, quoted=quoted(p)))
        code_at = [(p, c) for p, c, _ in codes]
        code_end = [(p, p + len(raw), c) for p, c, raw in codes]

        def subjects(p: int) -> list[str] | None:
            """The codes of a coordinated subject just before P ("GH56JK78MN and ORD-20261234
            have shipped", "GH56JK78MN, like ORD-20261234, has", "GH... und ORD... wurden"):
            the claim is said of each of them; None when P has no such subject."""
            chain: list[str] = []
            at, first = p, p
            for q, e, c in reversed([x for x in code_end if x[1] <= p]):
                gap = sent[e:at]
                if not chain:
                    if not _SUBJECT_GAP_RE.match(gap):
                        return None
                elif not _COORD_RE.match(gap):
                    break
                chain.append(c)
                at = first = q
            if len(chain) < 2:
                return None
            lo = max(sent.rfind(";", 0, first), sent.rfind(":", 0, first)) + 1
            if _NOT_SUBJECT_RE.search(sent, lo, first):
                return None  # "I checked GH56JK78MN and ORD-20261234 has shipped": one subject
            return chain[::-1]

        def owner(p: int) -> str | None:
            before = [c for q, c in code_at if q <= p]
            after = [c for q, c in code_at if q > p]
            return before[-1] if before else (after[0] if after else None)

        question = sent.rstrip(" \"')").endswith("?")
        for p, v in _draft_claims(sent):
            out.append(Claim("draft", v, sent, a + p, quoted=quoted(p)))
        for p in _sent_claims(sent):
            out.append(Claim("sent", True, sent, a + p, quoted=quoted(p)))
        if question:
            continue

        def add(kind: str, p: int, value: Any, **kw: Any) -> None:
            out.append(Claim(kind, value, sent, a + p, order=kw.pop("order", owner(p)), quoted=quoted(p), **kw))

        quantified = len(code_at) >= 2 and BOTH_RE.search(sent) is not None or every_order_in(sent)

        def every(p: int, end: int | None = None) -> bool:
            """Is the claim at P said of every order (in its own clause: "GH56JK78MN is waiting for
            payment, but both were placed in November" says nothing of both being waiting)?"""
            if not quantified:
                return False
            before, said, after = clause_of(sent, p, end or p + 1)  # end: the claim's, past an aside in it
            clause = before + said + after
            lo = p - len(before)
            for m in EVERY_ORDER_RE.finditer(sent, lo, p + len(said) + len(after)):
                if m.end() > p or not any(m.end() <= q < p for q, _ in code_at):
                    return True  # not "I looked up both orders and ORD-20261234 has shipped"
            return BOTH_RE.search(clause) is not None and len(codes_in(clause)) >= 2

        for p, st in _status_claims(sent):
            for c in subjects(p) or [owner(p)]:
                add("status", p, st, every=every(p), order=c)
        for p, v, q in _license_claims(sent):
            for c in subjects(p) or [owner(p)]:
                add("license", p, v, every=every(p, q), order=c)
        for p in _not_found_claims(sent):
            add("not_found", p, True)
        prev_end = 0
        for da, db, cands in find_dates(sent):
            before, said, after = clause_of(sent, da, db)
            what = date_context(sent, da, db, prev_end)
            day_only = all(c[1] == 0 for c in cands)
            if what and (_ASK_BY_RE.search(sent, max(prev_end, da - 40), da)
                         or _THEIR_DATE_RE.search(sent, max(prev_end, da - 40), da) or day_only and not
                         _DAY_ONLY_CTX.search(sent, max(prev_end, da - 50), db + 30)):
                # "reply by 10 December if the parcel has not arrived" dates the reply, whatever
                # the sentence says of delivery; a bare day needs a word of what it dates, not just "by"
                what = None
            prev_end = db
            # "it will arrive on ..." states the date; "if it arrives on ...", "you say ..." do not
            add("date", da, cands, what=what, hedged=bool(HEDGE_REPORT.search(before) or HEDGE_REPORT.search(after)
                                                          or HEDGE_COND.search(before)))
        for m in FRAME_RE.finditer(sent):
            add("frame", m.start(), m.group(0).lower())
        for p, v in _promise_claims(sent):
            add("promise", p, v)
        if ITEM_CTX_RE.search(sent):
            for m in SKU_RE.finditer(sent):
                if not m.group(0).startswith("ORD-") and ITEM_CTX_RE.search(sent, *part_of(sent, m.start(), m.end())):
                    add("item", m.start(), m.group(0))  # not "...; a USB-C adapter is handy": another part
        for label in known.item_labels:
            if not _label_may_match(label, sent):
                continue
            for hit in _label_re(label).finditer(sent):
                q = QTY_BEFORE_RE.search(sent, max(0, hit.start() - 30), hit.start()) or \
                    QTY_AFTER_RE.match(sent, hit.end())
                if q:
                    w = " ".join(q.group(1).lower().split())
                    n = int(w) if w.isdigit() else WORDNUM.get(w)
                    if w == "both" and _AND_RE.match(sent, hit.end()):
                        continue  # "both the USB key and the manual": two items, one of each
                    if n is not None:
                        add("quantity", hit.start(), n, what=label)
        if known.item_labels:
            counts = [(m.start(), m.end(), m.group("q")) for m in ITEM_COUNT_RE.finditer(sent)
                      if count_is_the_orders(sent, m.start(), m.end())]
            counts += [(m.start(), m.end(), m.group("q")) for m in ITEM_COUNT_ADJ_RE.finditer(sent)]
            for ca, cb, q in counts:  # "your order has three items"
                w = " ".join(q.lower().split())
                n = int(w) if w.isdigit() else WORDNUM.get(w)
                before, _, after = clause_of(sent, ca, cb)
                one = w in _ONE and not _WHICH_RE.search(sent, cb, cb + 40)
                if n is not None and (n > 1 or one) and not (
                        HEDGE_COND.search(before) or HEDGE_REPORT.search(before) or _EACH_RE.search(before[-40:])
                        or HEDGE_NEG.search(before[-25:]) or HEDGE_NEG.search(after[:40])
                        or ITEM_ELSEWHERE_RE.search(sent)):
                    add("item_count", ca, n)
        if known.item_labels:
            for p, n, what, label in _counted_items(sent, known.item_labels):
                if label is not None:
                    add("quantity", p, n, what=label)
                else:
                    add("item", p, what)
            for p, label in _denied_items(sent, known.item_labels):
                add("quantity", p, 0, what=label)
        for m in PRODUCT_RE.finditer(sent):
            add("product", m.start(1), " ".join(m.group(1).split()))
        def theirs(p: int) -> bool:  # "you wrote that you were charged 45 EUR": their amount, not ours
            lo = max(0, p - 80)
            for cut in _PART_RE.finditer(sent, lo, p):
                lo = cut.end()
            # ... or a price that is not the order's: "express shipping would have cost 10 EUR more"
            return _THEIR_AMOUNT_RE.search(sent, lo, p) is not None or \
                _WOULD_AMOUNT_RE.search(clause_of(sent, p, p + 1)[0]) is not None or \
                _DIFF_BEFORE_RE.search(sent, lo, p) is not None or \
                _THRESHOLD_RE.search(sent, lo, p) is not None or \
                _DIFF_AFTER_RE.match(sent, _AMOUNT_RE.match(sent, p).end()) is not None

        labels = known.item_labels
        for m in (WORD_MONEY_RE.finditer(sent) if _WORD_MONEY_CUE.search(sent) else ()):
            n = words_number(m.group(1))
            if n and not theirs(m.start()):
                c = WORD_CENTS_RE.match(sent, m.end())
                cents = words_number(c.group(1)) if c else 0
                what = priced_item(sent, m.start(), labels)
                if what is None and called_total(sent, m.start(), (c or m).end(), labels):
                    what = TOTAL
                add("price", m.start(), n * 100 + (cents if cents and cents < 100 else 0), what=what)
        for m in MONEY_RE.finditer(sent):
            cents = money_cents(m.group("a1") or m.group("a2"), m.group("cur1") or m.group("cur2"))
            if cents is not None and not theirs(m.start()):
                at = m.start("a1") if m.group("a1") else m.start()  # "EUR 25.00 for the manual": after the currency
                what = priced_item(sent, at, labels)
                if what is None and called_total(sent, m.start(), m.end(), labels):
                    what = TOTAL
                add("price", m.start(), cents, what=what)
        if BARE_PRICE_RE.worth_trying(sent) and (_PRICE_CTX_RE.search(sent) or
                                              any(_label_may_match(x, sent) and _label_re(x).search(sent)
                                                  for x in known.item_labels)):
            for m in BARE_PRICE_RE.finditer(sent):
                cents = money_cents(m.group("a"), "eur")
                if cents is not None and not theirs(m.start()):
                    add("price", m.start("a"), cents, what=priced_item(sent, m.start("a"), labels))
        if SKU_PRICE_RE.worth_trying(sent):  # "Line items: USB-KEY 25.00, MAN-PRT 12.50": a price without its currency
            for m in SKU_PRICE_RE.finditer(sent):
                cents = money_cents(m.group("a"), "eur")
                if cents is not None and not theirs(m.start("a")):
                    add("price", m.start("a"), cents, what=priced_item(sent, m.start("a"), labels))
        if len(out) >= MAX_CLAIMS:
            keep_own()
            return _distinct(out)[:MAX_CLAIMS], False
    keep_own()
    return _distinct(out), complete


def _distinct(claims: list[Claim]) -> list[Claim]:
    """CLAIMS without a second reading of the same claim (a wrapped line is read on its own and
    with the lines it goes on in): the first of each kind, place, order and value."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for c in claims:
        k = (c.kind, c.start, c.order, repr(c.value))
        if k not in seen:
            seen.add(k)
            out.append(c)
    return out


_LABEL_CACHE: dict[str, re.Pattern] = {}


_LABEL_HEAD: dict[str, str] = {}


def _label_may_match(label: str, text: str) -> bool:
    """False only when ``_label_re(label)`` has no match in TEXT: every match begins with the
    label's first word, in any case, which ``_lowered(text)`` then holds lower-cased (for a word
    of ASCII letters, digits and "_": what ``re.IGNORECASE`` lets match them beyond ``lower()``,
    the dotted and dotless i and the long s, ``_lowered`` maps to them; the Kelvin sign lowers to
    "k"). A label whose first word is not ASCII is always tried. tests/test_checks_labels.py
    holds it to the pattern."""
    head = _LABEL_HEAD.get(label)
    if head is None:
        words = re.findall(r"\w+", label.partition("(")[0])[:1]
        head = words[0].lower() if words and words[0].isascii() else ""
        if len(_LABEL_HEAD) < 2000:
            _LABEL_HEAD[label] = head
    return not head or head in _lowered(text)


def _label_re(label: str) -> re.Pattern:
    """An item's name or SKU as written in prose: any case, a plural ending, its words apart, a
    trailing parenthesis of the name optional ("two hardware license keys" names "Hardware
    license key (USB)")."""
    rx = _LABEL_CACHE.get(label)
    if rx is None:
        head, _, tail = label.partition("(")
        words = [re.escape(w) + "(?:s|es|e|en|n)?" for w in re.findall(r"\w+", head)[:8]]
        extra = [re.escape(w) for w in re.findall(r"\w+", tail)[:4]]
        body = r"[\s()-]{1,3}".join(words) if words else re.escape(label)
        if words and extra:
            body += r"(?:[\s()-]{1,3}" + r"[\s()-]{1,3}".join(extra) + r"\)?)?"
        rx = re.compile(rf"(?<!\w){body}(?!\w)", re.I)
        if len(_LABEL_CACHE) < 2000:
            _LABEL_CACHE[label] = rx
    return rx


# A status in what we are sorry about or thank the customer for telling us is their account of
# it ("sorry to hear the parcel arrived damaged", "es tut uns leid, dass die Lieferung ..."); only
# statuses: an apology before a promise ("sorry for the trouble, we'll refund you") is a promise.
_SYMPATHY_RE = _rx(r"\b(?:sorry(?:\s+to\s+hear)?|thanks?\s+(?:you\s+)?for\s+letting\s+us\s+know|"
                   r"tut\s+(?:mir|uns)\s+(?:sehr\s+)?leid|danke\s+für\s+(?:ihren|den)\s+hinweis)\b[^.!?;:,]{0,40}$")
# What a negated status must be said of (in its clause, before it): the order itself, by name
# or code, or its payment; other things not shipped or not delivered are no claim about it.
_NEG_SUBJECT_RE = _rx(r"\b(?:orders?|packages?|parcels?|shipments?|delivery|deliveries|payments?|bestellung(?:en)?|"
                      r"pakete?|sendung(?:en)?|lieferung(?:en)?|zahlung(?:en)?|ware)\b")
# A status said not to be (``NOT + status``: "has not shipped yet", "wurde noch nicht versandt"),
# and the statuses of the lookup that make that false.
CONTRADICTS = {"shipped": {"shipped", "delivered"}, "delivered": {"delivered"},
               "paid": {"paid", "license_issued", "shipped", "delivered"},
               "cancelled": {"cancelled"}, "refunded": {"refunded"},
               # "your payment has not reached us": false of a paid order, and of one whose lookup
               # says the payment was received (grounding reads the status detail for it)
               "payment_received": {"paid", "license_issued", "shipped", "delivered", "refunded"}}
COMPAT = {"pending_payment": {"pending_payment"}, "paid": {"paid", "license_issued", "shipped", "delivered", "refunded"},
          RECEIVED: {"paid", "license_issued", "shipped", "delivered", "refunded"},  # or a lookup that says received
          "license_issued": {"license_issued", "shipped", "delivered"}, "shipped": {"shipped", "delivered", "refunded"},
          "delivered": {"delivered", "refunded"}, "cancelled": {"cancelled", "refunded"}, "refunded": {"refunded"}}
