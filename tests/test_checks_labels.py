"""claims._label_may_match: the cheap test before an item label's pattern is searched."""

from __future__ import annotations

import re
import sys

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentcli.checks import claims


def test_what_ignorecase_lets_match_an_ascii_word_character_is_that_character_once_lowered():
    """The reason the first word of an ASCII label must be in ``_lowered(text)``: every character
    that re.IGNORECASE matches to an ASCII letter, digit or "_" lowers (as ``_lowered`` does it)
    to that character."""
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_":
        for m in re.finditer(re.escape(c), every, re.I):
            assert claims._lowered(m.group()) == c.lower(), (c, hex(ord(m.group())))


_WORDS = st.sampled_from(["Hardware", "license", "key", "USB", "MAN", "PRT", "NoteTidy", "Pro", "manual",
                          "Printed", "Kabel", "straße", "İnce", "µm", "x1", "A_B"])
_LABELS = st.lists(_WORDS, min_size=1, max_size=3).map(" ".join) | st.builds(
    lambda a, b: f"{a} ({b})", _WORDS, _WORDS) | st.sampled_from(["(USB)", "USB-KEY", "MAN-PRT", "--"])
_PIECES = st.one_of(_WORDS, _WORDS.map(str.upper), _WORDS.map(str.lower), st.sampled_from(
    [" ", "s", "es", "(", ")", "-", "two ", "\u0130", "\u0131", "\u017f", "\u212a", "\u03bc", "\u00df", "SS",
     "hardwarE", "U\u017fB", "l\u0131cense", "\u212aey"]), st.text(max_size=3))
_TEXTS = st.lists(_PIECES, max_size=8).map("".join)


@settings(max_examples=500, deadline=None)
@given(label=_LABELS, text=_TEXTS)
@example(label="USB-KEY", text="two u\u017fb-keys")
@example(label="key", text="\u212aEYs")
@example(label="İnce", text="ince")
@example(label="µm cable", text="a \u03bcm cable")
def test_a_label_that_matches_passes_the_test(label, text):
    if claims._label_re(label).search(text) is not None:
        assert claims._label_may_match(label, text)


def test_the_test_skips_a_text_without_the_first_word():
    label = "Hardware license key (USB)"
    assert claims._label_may_match(label, "two HARDWARE license keys")
    assert not claims._label_may_match(label, "two license keys (USB)")
    assert claims._label_re(label).search("two license keys (USB)") is None
    assert claims._label_may_match("(USB)", "anything")  # no word before the parenthesis: always tried
