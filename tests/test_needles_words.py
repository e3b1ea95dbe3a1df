"""The floor's word and phrase gate: a pattern not compiled yet is skipped only on a text it cannot match.

Before a pattern of the checks' floor is compiled, ``_Lazy.worth_trying`` wants more than its
needles as substrings (``tests/test_needles.py``): the needles a match holds as whole words
(``needles.WORDS``) among the text's words, and one phrase of each phrase group
(``needles.PHRASES``: whole words one after the other) in the text's words joined by one space.
A wrong word or phrase would make the floor blind to a claim, so wherever ``words_hold`` says
no, the plain pattern finds nothing: over every text the grounding tests know and their
sentences, over texts made of the patterns' own words and phrases with every separator, case and
odd letter the gate must survive (apostrophes of "n't" and "'s", hyphens, digits, ü, ß, the
dotless i, the long s, the dotted capital I, the Kelvin sign), and character by character for
what the gate assumes of lower-casing and of ``\\w``.
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
PATTERNS = [rx for rx in claims._ALL if claims.needle_key(*rx._args) in needles.NEEDLES
            or claims.needle_key(*rx._args) in needles.PHRASES]
GATED = [rx for rx in PATTERNS if rx._words is not None or rx._phrases is not None]
_W = re.compile(r"\w")


@functools.cache
def _texts() -> list[str]:
    out: list[str] = []
    for name in ("grounding_set.jsonl", "grounding_blind.jsonl"):
        path = ROOT / "bench" / "data" / name
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out += [row.get("text") or "", row.get("question") or "", row.get("draft") or ""]
    for table in (floor_probes.FLAG, floor_probes.ANSWER_FLAG, floor_probes.CLEAN):
        out += [row[1] for row in table]
    folded = [fold(t) for t in out]
    pieces = [t[a:b] for t in folded for a, b in claims.sentences(t)]
    return [t for t in dict.fromkeys(out + folded + pieces) if t]




def _wrongly_skipped(text: str) -> list[str]:
    # search() from 0 finds a match wherever one is: a start position (``pos``) changes no
    # context (``\b``, lookbehinds and ``^`` see the whole text), so this is every call's answer
    return [rx._args[0][:80] for rx in GATED
            if rx.may_match(text) and not rx.words_hold(text) and rx.get().search(text)]


def test_the_gate_is_derived_for_most_patterns_and_skips_texts():
    assert len(GATED) >= len(claims._ALL) // 2
    assert set(needles.WORDS) <= set(needles.NEEDLES)
    for key, words in needles.WORDS.items():  # a whole word is one of its group's needles
        assert len(words) == len(needles.NEEDLES[key])
        assert all(set(w) <= set(g) for w, g in zip(words, needles.NEEDLES[key]))
        assert all(re.fullmatch(r"\w+", w) for ws in words for w in ws)
    skipped = sum(rx.may_match(t) and not rx.words_hold(t) for t in _texts() for rx in GATED)
    assert skipped > len(_texts()) * 5  # the words skip what the needles alone let through


def test_a_pattern_the_words_skip_finds_nothing_in_any_known_text():
    assert len(_texts()) > 400
    for text in _texts():
        assert _wrongly_skipped(text) == [], text


def _odd(text: str, which: int) -> str:
    return [text, text.replace("i", "\u0131"), text.replace("s", "\u017f"), text.replace("I", "\u0130"),
            text.replace("k", "\u212a"), text.upper().replace("I", "\u0130")][which]


def test_a_known_text_in_any_case_and_with_odd_letters_is_skipped_only_where_nothing_matches():
    for text in _texts()[::3]:
        for variant in {text.upper(), text.lower(), text.title(), _odd(text, 1), _odd(text, 2), _odd(text, 5),
                        text.replace(" ", "-"), text.replace("'", ""), text.replace(" ", "  ")}:
            assert _wrongly_skipped(variant) == [], variant


_PHRASE_WORDS = sorted({w for g in needles.PHRASES.values() for group in g for p in group for w in p.split()}
                       | {w for g in needles.WORDS.values() for group in g for w in group})
_SEPS = [" ", "  ", "'", "-", ", ", ". ", "\n", " 3 ", "3", " € 20 ", "/", "n't ", "'s ", "ü", "ß", "_", "\u00a0",
         ": ", " (", ") ", "\"", "\t", "—", "…"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_PHRASE_WORDS), st.sampled_from(_SEPS)), min_size=1, max_size=14),
       st.sampled_from([str, str.upper, str.title, str.capitalize]),
       st.integers(min_value=0, max_value=5), st.sampled_from(["", " ", "- ", "\n"]))
def test_a_pattern_the_words_skip_finds_nothing_in_texts_of_its_own_words(pieces, case, odd, lead):
    # the words of the patterns' phrases in any order, case and spacing: many such texts hold a
    # pattern's words but not its phrase, the texts the gate exists to skip
    text = _odd(case(lead + "".join(w + s for w, s in pieces)), odd)
    assert _wrongly_skipped(text) == []


_PHRASES = sorted({p.strip() for g in needles.PHRASES.values() for group in g for p in group})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_PHRASES), st.sampled_from(_SEPS)), min_size=1, max_size=6),
       st.sampled_from([str, str.upper, str.title]), st.integers(min_value=0, max_value=5),
       st.sampled_from([" ", "-", "'", "", "_", "ä", "1"]))
def test_a_pattern_the_words_skip_finds_nothing_in_texts_of_its_own_phrases(pieces, case, odd, glue):
    # whole phrases, their spaces kept or turned into another separator or glued into one word
    text = _odd(case("".join(p.replace(" ", glue) if i % 2 else p + s for i, (p, s) in enumerate(pieces))), odd)
    assert _wrongly_skipped(text) == []


def test_every_character_lowers_to_one_character_and_keeps_its_word_class():
    # the gate reads the text's words in the lowered text: lowering must keep every character
    # where it is (one character for one) and keep what ``\w`` says of it, so that a run of
    # word characters the pattern matched is a run, and a word, in the lowered text too
    for cp in range(0x110000):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        low = c.translate(claims._IC_EXTRA).lower()
        assert len(low) == 1 and bool(_W.match(c)) == bool(_W.match(low)), hex(cp)
        assert not (c.isspace() and _W.match(c)), hex(cp)  # a space ends a word
    # and lowering a whole text is lowering it character by character, but for the final sigma
    assert claims._lowered("ΟΔΟΣ İSTANBUL ſ") == "οδος istanbul s"


def _cased() -> list[str]:
    return [chr(cp) for cp in range(0x110000)
            if not 0xD800 <= cp < 0xE000 and (chr(cp).lower() != chr(cp) or chr(cp).upper() != chr(cp))]


def test_every_character_a_word_or_phrase_holds_is_that_character_in_the_lowered_text():
    # as tests/test_needles.py checks it for the needles: the phrases hold characters of their own
    # ([cs] in "licen[cs]e"), and an ASCII separator must match nothing but itself
    ic = {claims.needle_key(*rx._args) for rx in PATTERNS if rx._ic}
    chars = {c for key, groups in needles.PHRASES.items() if key in ic for g in groups for p in g for c in p if c != " "}
    chars |= {chr(a) for a in range(128) if not _W.match(chr(a))}
    cased = _cased()
    for c in chars:
        rx = re.compile(re.escape(c), re.IGNORECASE)
        for other in cased:
            if other != c and rx.fullmatch(other):
                assert _W.match(c) and claims._lowered(other) == c, (c, other)


def _words(p: str, flags: int = re.I):
    return gen_needles.derive_words(p, flags)


def _phrases(p: str, flags: int = re.I):
    return gen_needles.derive_phrases(p, flags)


def test_a_needle_is_a_whole_word_only_where_the_pattern_puts_word_edges_around_it():
    assert _words(r"\bis\b") == (("is",),)
    assert _words(r"(?<![\w-])is(?!\w)") == (("is",),)
    assert _words(r"\s+is\s") == (("is",),)
    assert _words(r"^is$") == (("is",),)
    assert _words(r"\bis") is None and _words(r"is\b") is None  # "this", "isn"
    assert _words(r"\b(?:is|are)(?:n't)?\s") is None  # "isn't": the word is "isn"
    assert _words(r"\bis(?=\s)") == (("is",),)
    assert _words(r"\b(?:is|this)\b") is None  # "is" covers "this": found in it, not as a word
    assert _words(r"\bis\b", re.I | re.A) is None  # ASCII edges are not the words' edges
    assert _words(r"(?a:\bis\b)x?") is None
    assert _words(r"\bis(?:\d)?\b") is None  # "is3"
    assert _words(r"\bis[\s,]{0,3}x") is None  # "isx"
    assert _words(r"\bis[\s,]{0,3}\b") == (("is",),)  # a separator, or nothing and the edge
    assert _words(r"\b(?:the\s+)?is\s") == (("is",),)


def test_phrases_are_words_in_a_row_with_only_separators_between_them():
    assert _phrases(r"\bwe\s+will\s+refund\b") == ((" we will refund ",),)
    assert _phrases(r"\b(?:your|the)\s+payment\b") == ((" the payment ", " your payment "),)
    assert _phrases(r"\bhas(?:n't|\s+not)\s+been\b") == ((" has not been ", " hasn t been "),)
    assert _phrases(r"licen[cs]es?\s+to") == (("licence to", "licences to", "license to", "licenses to"),)
    assert _phrases(r"payment(?:\s+x)?ab") == (("payment xab", "paymentab"),)
    assert _phrases(r"\bwe\s*will\b") == (("will ",), (" we",))  # "wewill" or "we will": no one phrase
    assert _phrases(r"\bwe\s+(?:\w+\s+)?will\b") == ((" will ",), (" we ",))  # a word between, or not
    assert _phrases(r"^\W{0,3}(?:if|once)\b") == ((" if ", " once "),)


def test_a_search_that_ends_before_the_text_is_not_gated_by_words():
    # the end of a search (endpos) is a word's edge to \b: "is" of "isn't" before the "n"
    rx = next(r for r in GATED if r._args == (r"\b(?:is|are|be|ist|sind|wird)\b", re.IGNORECASE))
    text = "isn't"
    assert not rx.words_hold(text) and rx.get().search(text, 0, 2)
    fresh = claims._Lazy(*rx._args)
    claims._ALL.remove(fresh)
    assert fresh.search(text, 0, 2) is not None and fresh.search(text) is None
