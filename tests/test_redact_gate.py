"""The redaction's cheap tests are the searches they stand for (agentcli/redact.py).

``redact`` returns a text as it is when ``_looked_at`` finds nothing in it, and
``clean_for_terminal`` does the same when nothing in it is to be redacted or cleaned: these
hold each shortcut to the work it skips, on texts made of what redaction reacts to.
"""

from __future__ import annotations

import json
import re
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentcli import redact as R

KEY = "sk-ant-api03-" + "Qx7Lp2Vb9Tn4Rk8Wm3Zc6Yh1Fd5Gs0Ja" * 3 + "-AA"
SHORT = "Zq7#mW2!kP"  # a configured secret shorter than 2 * FRAGMENT: looked for whole

# One text for each branch of _SHAPE_HINT_RE, in the cases and lookalike letters it accepts.
HINTS = ["sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "xoxa-", "xoxb-", "xoxp-", "xoxo-",
         "xoxs-", "xoxr-", "sk_live_", "rk_test_", "AIza", "-----BEGIN ", "://", "=", ":@", "a:bc@d", "Bearer",
         "bEaReR", "Authorization", "HORIZATION", "hor\u0130zat\u0131on", "-api-key", "-API-\u212aEY", "-ap\u0131-key"]

_PIECES = st.sampled_from(
    HINTS + [KEY, KEY[:30], KEY[20:70], KEY[:12], KEY[12:24], SHORT, SHORT[:5], "sk", "gh", "xo", "k_live", "AKI",
             "-----BEGIN", ":/", ":", "@", " ", "\n", "\t", "\r", "\r\n", "\u2028", "\u2029", "\x1b", "\x1b[0m", "\x1b]8;;x\x07",
             "\x9b", "\x9b1m", "\x00", "\x7f", "\u00ad", "\u034f", "\u200b", "\u202e", "\u2066", "\ufeff", "\ufe0f",
             "\u0130", "\u0131", "\u212a", "bear", "zat", "-ap", "order", "GH56JK78MN", "\u00e9", "x"])
_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=4)), max_size=10).map("".join)
_SECRETS = st.sampled_from([[], R._forms(KEY), R._forms(SHORT), R._forms(KEY) | R._forms(SHORT)]).map(
    lambda forms: sorted(forms, key=len, reverse=True))


def old_gate(text: str, secrets: list[str]) -> bool:
    """The search redact began with: one alternation of the secrets' literals, the skipped
    characters and the credential hints (without secrets, the last two apart)."""
    if not secrets:
        return R._SKIP_RE().search(text) is not None or R._SHAPE_HINT_RE.search(text) is not None
    parts = [re.escape(x) for x in sorted(R._secret_literals(secrets))] + [R._SKIP_RE.pattern,
                                                                           R._SHAPE_HINT_RE.pattern]
    return re.compile("|".join(f"(?:{p})" for p in parts)).search(text) is not None


def old_clean(text: str, secrets: list[str]) -> str:
    """clean_for_terminal as it was, every step taken."""
    text = R._ANSI_RE.sub("", R.redact(text, secrets))
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    return R.redact(R._CTRL_RE.sub("\ufffd", text), secrets)


@pytest.mark.parametrize("hint", HINTS)
def test_every_hint_branch_passes_its_pieces(hint):
    assert R._SHAPE_HINT_RE.search(hint) is not None
    assert R._hint_in(f"an {hint} in text")


@settings(max_examples=500, deadline=None)
@given(text=_TEXT, secrets=_SECRETS)
@example(text="hor\u0130zat\u0131on", secrets=[])
@example(text="ab\u2028" + KEY[:12], secrets=[])
def test_the_gate_is_the_one_search_it_replaced(text, secrets):
    assert R._hint_in(text) == (R._SHAPE_HINT_RE.search(text) is not None)
    assert (R._INVISIBLE_RE.search(text) is None) == (R._SKIP_RE().search(text) is None)
    assert R._looked_at(text, secrets) == old_gate(text, secrets)


@settings(max_examples=500, deadline=None)
@given(text=_TEXT, secrets=_SECRETS)
@example(text="a\u2028b", secrets=[])
@example(text="\x1b[0m", secrets=[])
def test_clean_for_terminal_is_every_step_taken(text, secrets):
    with mock.patch.object(R, "_secrets", lambda: secrets):
        assert R.clean_for_terminal(text) == old_clean(text, secrets)


def test_clean_for_terminal_gives_a_plain_str_for_a_str_subclass():
    """An enum's value or an OrderCode comes back as the plain text the steps made of it before
    the shortcut, not as the object given (found by an adversarial pass over the shortcut)."""
    from enum import StrEnum

    from agentcli.vocab import OrderCode

    class Word(StrEnum):
        A = "nothing to clean here"

    for given_ in (Word.A, OrderCode.parse("GH56JK78MN")):
        got = R.clean_for_terminal(given_)
        assert type(got) is str and got == str.__str__(given_)


def test_a_secret_split_by_a_line_separator_is_still_cleaned_away(monkeypatch):
    """The separator becomes a newline before the second redaction: a secret holding one is
    found then, although the text as given holds nothing the gate looks for."""
    secret = "Zq7#mW2\nkP9!"
    monkeypatch.setattr(R, "_secrets", lambda: sorted(R._forms(secret), key=len, reverse=True))
    assert R.clean_for_terminal("was Zq7#mW2\u2028kP9! there") == "was *** there"


# The lowered-dump hints as the one search they were (redact.py's comment above _ASCII_LITERALS).
ASCII_HINT_RE = re.compile(r"sk-|sk_(?:live|test)_|rk_(?:live|test)_|gh[pousr]_|github_pat_|akia|"
                           r"xox[abposr]-|aiza|-----begin |://|=|:[^\s@]{0,256}@|bearer|horization|-api-key")
ASCII_HINTS = ["sk-", "sk_live_", "sk_test_", "rk_live_", "rk_test_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
               "github_pat_", "akia", "xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "aiza", "-----begin ",
               "://", "=", ":@", ":ab@", "bearer", "horization", "-api-key"]
_ASCII_TEXT = st.lists(st.one_of(st.sampled_from(ASCII_HINTS + [
    "sk", "k_live", "k_test_", "sk_live", "gh", "ghx_", "github_pat", "xox", "xoxz-", "akI", "-----begin", ":/", ":",
    "@", " ", "\t", ":" + "a" * 256 + "@", ":" + "a" * 255 + "@", '"order_code": "gh56jk78mn"', "bear", "-api",
    "x"]), st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=4)), max_size=10).map("".join)


@pytest.mark.parametrize("hint", ASCII_HINTS)
def test_every_ascii_hint_branch_is_found(hint):
    assert ASCII_HINT_RE.search(hint) is not None
    assert R._ascii_hint_in(f'{{"t": "an {hint} in it"}}')


@settings(max_examples=500, deadline=None)
@given(low=_ASCII_TEXT)
def test_the_ascii_hints_are_the_one_search_they_replaced(low):
    assert R._ascii_hint_in(low) == (ASCII_HINT_RE.search(low) is not None)


@pytest.mark.parametrize("value", [{"t": KEY[20:70]}, ["x", {"k": KEY[40:60]}], KEY[-30:]])
def test_a_piece_of_a_configured_key_in_a_dump_without_hints_is_redacted(value, monkeypatch):
    """No hint, no escape: only the secrets' own literals send such a dump through the walk."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    line = R.ascii_json_redacted(value)
    assert not R._ascii_hint_in(json.dumps(value).lower())
    assert line == json.dumps(R.redact_obj(value), ensure_ascii=True, default=str)
    assert "***" in line


def _old_replace_surrogates(obj):
    """replace_surrogates before it walked first: every dict and list rebuilt."""
    if isinstance(obj, str):
        return re.sub("[\ud800-\udfff]", "\ufffd", obj)
    if isinstance(obj, dict):
        return {_old_replace_surrogates(k): _old_replace_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_old_replace_surrogates(v) for v in obj]
    return obj


_SCALARS = st.one_of(st.text(alphabet=st.sampled_from("ab\u00e9\ud800\udfff\ud83d\ude00 {}\"\\"), max_size=6),
                     st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
_JSONISH = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(alphabet="k\ud800\u00e9", max_size=3), inner, max_size=4)),
    max_leaves=20)


@settings(max_examples=500, deadline=None)
@given(_JSONISH)
def test_replace_surrogates_is_the_rebuild_it_replaced_and_hands_back_what_holds_none(obj):
    got, want = R.replace_surrogates(obj), _old_replace_surrogates(obj)
    assert got == want
    if want == obj:
        assert got is obj  # nothing to replace: the very object, nothing rebuilt
    json.dumps(got, ensure_ascii=False).encode("utf-8")  # and it encodes
