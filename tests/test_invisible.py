"""The one-scan character tests of the text the checks read (``vocab.drop_invisible`` and the cues
of ``checks.normalize``) are the per-character tests they replaced, over every code point.

Each pass of ``fold`` used to ask every character of the text in Python whether it was a soft
hyphen, a confusable, a Markdown mark, a cut or a leetspeak digit: ~4 ms a fold of a
20,000-character answer. One pattern per test now scans the text in C, and these tests hold each
pattern to the test it replaced, so no character is read differently.
"""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcli import vocab
from agentcli.checks import normalize
from agentcli.checks.claims import _DIGIT_RE, find_dates
from agentcli.vocab import BLANKS, CONFUSABLES, drop_each_invisible, drop_invisible

# Every character a str can hold and an encoder accepts (no lone surrogates).
EVERY = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)


def test_the_ranges_are_every_format_character_of_this_unicode_and_the_blanks():
    """What ``drop_invisible`` leaves of every character is what a test of each by its category
    leaves. A Python whose Unicode differs uses that test itself (below), so this holds there too."""
    gone = set(EVERY) - set(drop_invisible(EVERY))
    assert gone == {c for c in EVERY if unicodedata.category(c) == "Cf"} | set(BLANKS)
    assert drop_invisible(EVERY) == drop_each_invisible(EVERY)


def test_another_unicode_version_is_read_one_character_at_a_time(monkeypatch):
    monkeypatch.setattr(vocab, "_SHOWS_NOTHING_RE", None)
    text = "re\u00adfund\u200b GH56\u2060JK78MN \u3164 \U000e0041tag"
    assert drop_invisible(text) == drop_each_invisible(text) == "refund GH56JK78MN  tag"


@pytest.mark.parametrize("cue, chars", [
    (normalize._MARKUP_CUE, "*_~`"),
    (normalize._CUT_CUE, "-~_*^|+"),
    (normalize._LEET_CUE, "013457@$"),
])
def test_each_cue_is_exactly_its_characters(cue, chars):
    assert {c for c in EVERY if cue.search(c)} == set(chars)


def test_the_confusable_cue_is_exactly_the_confusables():
    """Built with ``re.escape`` from the table: a class character such as "]" or "-" in it would
    have widened or cut the class."""
    assert {c for c in EVERY if normalize._CONFUSABLE_CUE.search(c)} == {chr(o) for o in CONFUSABLES}


def test_a_digit_to_the_date_finder_is_a_decimal_digit():
    assert {c for c in EVERY if _DIGIT_RE.search(c)} == {c for c in EVERY if c.isdecimal()}
    assert find_dates("am \u0968\u0966\u0968\u0966-12-24") == find_dates("am 2020-12-24")  # Devanagari digits


def _unsplit_ungated(text: str) -> str:
    """``normalize.unsplit`` with every pass run, whatever the text holds."""
    text = normalize._MARKUP_RE.sub("", text)
    text = normalize._SPELLED_RE.sub(normalize._spelled, text)
    text = normalize.umlauts(text)
    text = normalize._SPLIT_WORD_RE.sub(normalize._split_word, text)
    return normalize._LEET_WORD_RE.sub(normalize._leet_word, text)


_PIECES = ["re", "fund", "ship", "ped", "r", "e", "f", "can", "celled", "d", "x", "GH56JK78MN", "r3fund3d",
           "sh1pped", "$hipped", "2nd", "re-fund", "can-celled", "ref*und", "ship^ped", "deli+vered", "R E F U N D",
           " ", "  ", ".", "-", "~", "_", "*", "**", "`", "^", "|", "+", "1", "@", "\u0435", "\u00e4", "zurue", "ck",
           "fuer", "Rue", "ckerstattung", "due", "queue", "oe", "ae"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=16).map("".join))
def test_a_cue_skips_only_a_pass_that_would_change_nothing(text):
    """Each pass of ``unsplit`` runs only when its cue is in the text: the same text as running
    every pass, for any mix of the cued characters and the words they cut."""
    assert normalize.unsplit(text) == _unsplit_ungated(text)


def test_every_umlaut_word_of_the_floor_holds_a_stem_its_spelling_without_umlauts_is_read_as():
    """A pattern that needs "zurück" finds "zurueck" only if ``unsplit`` reads it so: every
    needle with an umlaut (of three letters or more) holds one of ``_UMLAUT_STEMS``."""
    from agentcli.checks.needles import NEEDLES

    umlauted = {n for groups in NEEDLES.values() for g in groups for n in g if set(n) & set("äöü")}
    assert umlauted
    assert [n for n in sorted(umlauted) if len(n) >= 3 and not any(st in n for st in normalize._UMLAUT_STEMS)] == []


@pytest.mark.parametrize("written, read", [
    ("Sie erhalten eine Rueckerstattung.", "Sie erhalten eine Rückerstattung."),
    ("Wir ueberweisen Ihnen den Betrag zurueck.", "Wir überweisen Ihnen den Betrag zurück."),
    ("RUECKERSTATTUNG fuer Sie", "RÜCKERSTATTUNG für Sie"),
    ("due to the queue, it does not; Michael Steuer, aktuell, Phoenix", None),
])
def test_german_without_umlauts_is_read_with_them_and_english_stays(written, read):
    assert normalize.fold(written) == (read or written)
