"""The floor's needles: a pattern is skipped only on a text it cannot match.

A pattern of the checks' floor (``checks/claims.py``) is compiled and tried only on a text that
holds a needle of each of its needle groups (``checks/needles.py``, derived by
``tests/gen_needles.py``). A wrong needle would make the floor blind to a claim, so: the table
is what the derivation gives for today's patterns, and wherever a needle says "skip", the plain
pattern indeed finds nothing:
over every text the grounding tests know (the labelled set, the novel probes, their sentences),
and over texts made of the patterns' own words in any case.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcli.checks import claims, needles
from agentcli.checks.normalize import fold
from tests import floor_probes, gen_needles

ROOT = Path(__file__).resolve().parents[1]
PATTERNS = claims._ALL


@functools.cache
def _texts() -> list[str]:
    out: list[str] = []
    for line in (ROOT / "bench" / "data" / "grounding_set.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out += [row["text"], row.get("question") or ""]
    for table in (floor_probes.FLAG, floor_probes.ANSWER_FLAG, floor_probes.CLEAN):
        out += [row[1] for row in table]
    folded = [fold(t) for t in out]
    pieces = [t[a:b] for t in folded for a, b in claims.sentences(t)]
    return [t for t in dict.fromkeys(folded + pieces) if t]  # what the floor's patterns read




@functools.cache
def _plain() -> list:
    """(pattern, its plain search) for each pattern, compiled apart from its _Lazy (whose own
    compile on first use stays untouched); when a test asks, not at collection (every worker
    collects this file)."""
    return [(rx, re.compile(*rx._args).search) for rx in PATTERNS]


def _skipped(text: str) -> list:
    """(pattern, plain search) of each pattern the gate skips on TEXT."""
    return [(rx, search) for rx, search in _plain() if not rx.may_match(text)]


def _skipped_but_matching(text: str, skipped: list | None = None) -> list[str]:
    return [rx._args[0][:80] for rx, search in (_skipped(text) if skipped is None else skipped)
            if search(text)]


def test_the_table_is_what_the_patterns_give_today():
    # A pattern edited without making the table again would be tried always (only slower);
    # this says so. Every entry belongs to a pattern of today (none left from an old one).
    assert gen_needles.render(gen_needles.table()) == \
        (ROOT / "agentcli" / "checks" / "needles.py").read_text(encoding="utf-8"), \
        "run: python -m tests.gen_needles"
    keys = {claims.needle_key(*rx._args) for rx in PATTERNS}
    assert len(keys) == len({rx._args for rx in PATTERNS})  # no two patterns share a key
    assert set(needles.NEEDLES) <= keys
    assert len(needles.NEEDLES) >= len(PATTERNS) * 2 // 3  # most patterns are gated


def test_a_skipped_pattern_finds_nothing_in_any_known_text():
    assert len(_texts()) > 400
    skipped = 0
    for text in _texts():
        gated = _skipped(text)
        assert _skipped_but_matching(text, gated) == [], text
        skipped += len(gated)
    assert skipped > len(_texts()) * len(PATTERNS) // 2  # the gate does skip most of them


_WORDS = sorted({w for rx in PATTERNS for w in re.findall(r"[^\W\d_]{2,}|'\w+", rx._args[0])
                 if w not in {"P", "neg"}})
_SEPS = [" ", "  ", "'", "-", ", ", ". ", "\n", " 3 ", " € 20 ", "/"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_SEPS)), min_size=1, max_size=12),
       st.sampled_from([str, str.upper, str.title]),
       st.sampled_from([lambda t: t, lambda t: t.replace("i", "\u0131"), lambda t: t.replace("s", "\u017f")]))
def test_a_skipped_pattern_finds_nothing_in_texts_of_its_own_words(pieces, case, odd):
    # the patterns' literal words in any order, case and spacing, with the two letters a
    # case-insensitive pattern matches beside their own lower case (dotless i, long s)
    text = odd(case("".join(w + s for w, s in pieces)))
    assert _skipped_but_matching(text) == []


def test_a_text_is_tried_only_when_it_holds_a_needle_of_every_group():
    lacking = 0
    for rx in PATTERNS:
        groups = rx._needles or ()
        words = [max(g, key=len) for g in groups]
        assert not groups or rx.may_match(" ".join(words).title() if rx._args[1] & re.I else " ".join(words))
        for i, group in enumerate(groups):  # lacking any one group: skipped
            rest = " ".join(w for j, w in enumerate(words) if j != i)
            if not any(n in rest for n in group):
                assert not rx.may_match(rest), (rx._args[0][:80], rest)
                lacking += 1
    assert lacking > 200
    ungated = claims._Lazy(r"(?:x|y)\d")  # not in the table (no pattern of the floor): always tried
    assert ungated._needles is None and ungated.may_match("anything")
    PATTERNS.remove(ungated)


def _found(needles, pattern, flags, text):
    hay = claims._lowered(text) if flags & re.IGNORECASE else text
    return needles is None or all(any(n in hay for n in group) for group in needles)


def test_scoped_case_flags_never_make_a_needle_the_text_cannot_show():
    cases = [(r"foo(?i:BARBAZ)", 0, "fooBARBAZ"), (r"foo(?i:BARBAZ)", 0, "foobarbaz"),
             (r"(?-i:ABC)defg", re.IGNORECASE, "ABCDEFG"), (r"(?i)refund", 0, "REFUND"),
             (r"(?:Straße|STRASSE)n", re.IGNORECASE, "STRAẞEN"), (r"kiste", re.IGNORECASE, "KİSTE")]
    for pattern, flags, text in cases:
        needles = gen_needles.derive(pattern, flags)
        if re.search(pattern, text, flags):
            assert _found(needles, pattern, flags, text), (pattern, needles, text)
    # one group for each part every match holds, the most selective first
    assert gen_needles.derive(r"we\s+(?:will|shall)\s+refund", re.IGNORECASE) == \
        (("refund",), ("shall", "will"), ("we",))
    # an alternative without a literal of its own leaves its branch without a group
    assert gen_needles.derive(r"(?:will|\d+)\s+refund", re.IGNORECASE) == (("refund",),)


def test_the_lowered_text_shows_each_needle_character_wherever_the_pattern_would_match_it():
    # every character a case-insensitive pattern's needle character matches (only cased ones
    # match anything but themselves) is that character once the floor lower-cases the text
    chars = {c for rx in PATTERNS if rx._needles and rx._args[1] & re.IGNORECASE
             for group in rx._needles for n in group for c in n}
    cased = [chr(cp) for cp in range(0x110000)
             if not 0xD800 <= cp < 0xE000 and (chr(cp).lower() != chr(cp) or chr(cp).upper() != chr(cp))]
    for c in chars:
        rx = re.compile(re.escape(c), re.IGNORECASE)
        for other in cased:
            if rx.fullmatch(other):
                assert claims._lowered(other) == c, (c, other)


def test_no_pattern_holds_a_placeholder_left_unfilled():
    # a piece written as r"...{_LIC}..." instead of rf"..." is a literal "{_LIC}": an alternative
    # that can never match (one did, in a license pattern, until the needles showed it)
    assert [rx._args[0][:80] for rx in PATTERNS if re.search(r"\{_?[A-Za-z]\w*\}", rx._args[0])] == []
