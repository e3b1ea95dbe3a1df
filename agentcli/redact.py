"""Secrets never reach output, logs or drafts; terminal text never carries control sequences.

What counts as a secret (the rule, also in the README):

- A *configured* value (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN``, ``OPENAI_API_KEY``,
  ``PGPASSWORD``, the helpdesk tokens ``AGENTCLI_<HELPDESK>_TOKEN``, a database password or a
  helpdesk token from agentcli.toml registered with ``add_secret``) is replaced wherever it
  appears only when it **looks like a key** (``looks_like_secret``): at least 6 characters, not a
  known placeholder of a local server (``ollama``, ``lm-studio``, ``none``, ``EMPTY``,
  ``sk-no-key-required``...), not word-like (letters with ``-``, ``_``, ``.`` or spaces between
  words: ``test-key``, ``my local key``), and either mixing two kinds of character (lower, upper,
  digits, symbols) or at least 16 characters long. A placeholder is not a secret: replacing
  ``ollama`` everywhere would corrupt customers' words and paths. Its JSON- and URL-escaped forms
  are replaced too, and so is any run of 16+ characters copied out of one of 24+ (half a key
  is still a leak).
- Anything **shaped like a credential** is replaced whatever its source (model, database,
  question, file): Anthropic/OpenAI keys (``sk-ant-…``, ``sk-…`` with a non-word-like body),
  GitHub, AWS, Slack, Stripe and Google keys, private-key blocks, ``Bearer`` tokens and
  ``x-api-key:`` headers, and passwords *in context*: ``scheme://user:PASSWORD@host`` (up to the
  last ``@``, so a raw ``@`` in it is covered), the same without the ``://`` when a path, port
  or query follows the host (``postgresql:/user:PASSWORD@host/db``, a misspelt URL),
  ``password=…`` / ``api_key=…`` parameters. A weak
  password such as ``postgres`` is thus hidden where it is a password, never in prose.

Text is matched as it will be *seen*: escape sequences, control characters and invisible format
characters (zero-width spaces, soft hyphens, bidi marks) are skipped when looking for a secret, so
``sk-\\x1b[0mant-api03-…`` is a key and is replaced whole, junk included; what is not a secret is
left byte for byte as it was.

``clean_for_terminal`` redacts and then neutralises ANSI escape sequences and control characters
coming from the model, the database or the question, so no text can move the cursor, retitle the
window or hide what is on screen - and no terminal text can carry a secret.
"""

from __future__ import annotations

import bisect
import json
import math
import os
import re
import contextvars
from typing import Any
from urllib.parse import quote, quote_plus, unquote

_SECRET_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "PGPASSWORD",
               "AGENTCLI_ZENDESK_TOKEN", "AGENTCLI_FRONT_TOKEN", "AGENTCLI_HELPSCOUT_TOKEN",
               "AGENTCLI_FRESHDESK_TOKEN")
_extra: set[str] = set()
MASK = "***"

# Keys that local servers accept (or ignore) and docs tell people to set: never secrets.
PLACEHOLDERS = frozenset({
    "ollama", "lm-studio", "lmstudio", "none", "null", "nil", "test", "testing", "empty", "dummy",
    "placeholder", "changeme", "key", "api-key", "apikey", "secret", "token", "local", "localhost",
    "fake", "x", "xx", "xxx", "na", "n/a", "no-key", "nokey", "not-needed", "sk-no-key-required",
    "sk-xxx", "sk-1234", "sk-12345", "sk-fake", "sk-test", "sk-dummy", "vllm", "llamacpp",
    "llama.cpp", "koboldcpp", "jan", "openai", "anthropic", "123", "1234", "12345", "123456",
})
_WORDLIKE_RE = re.compile(r"[A-Za-z]{1,15}(?:[-_. ]+[A-Za-z]{1,15})*")
MIN_SECRET = 6
FRAGMENT = 12  # a run this long copied out of a known secret is a leak (secrets of 24+ chars)


def looks_like_secret(value: str | None) -> bool:
    """Whether a configured value is secret enough to be replaced wherever it appears."""
    v = (value or "").strip()
    if len(v) < MIN_SECRET or v.lower() in PLACEHOLDERS or _WORDLIKE_RE.fullmatch(v):
        return False
    if len(set(v)) < 4:
        return False
    kinds = (any(c.islower() for c in v), any(c.isupper() for c in v),
             any(c.isdigit() for c in v), any(not c.isalnum() and c not in "-_. " for c in v))
    return sum(kinds) >= 2 or len(v) >= 16


def add_secret(value: str | None) -> None:
    """Register a value (a database password) to be hidden, if it ``looks_like_secret``: from
    now on, inside a ``SecretsHeld`` block too."""
    global _added
    if value and looks_like_secret(value):
        _extra.add(value)
        _added += 1


_added = 0  # values add_secret has registered: a held read older than the last one is read again


def _forms(v: str) -> set[str]:
    """A secret as it can appear in text: raw, JSON-escaped, percent-encoded."""
    out = {v, quote(v, safe=""), quote_plus(v, safe="")}
    out.add(json.dumps(v)[1:-1])
    out.add(json.dumps(v, ensure_ascii=False)[1:-1])
    return {f for f in out if len(f) >= MIN_SECRET}


# configured values -> (their forms, longest first; short strings already redacted with them)
_cache: dict[frozenset[str], tuple[list[str], dict[str, str]]] = {}
MEMO_CHARS, MEMO_SIZE = 100, 4096  # redact_obj remembers short strings (keys, names, ids)


# The secrets read once for a ``SecretsHeld`` block: (``_added`` then, the state). A context
# variable, so a block may span awaits: each asyncio task (a batch's conversations) and each
# thread has its own, and a task started inside a block sees the block's.
_held: contextvars.ContextVar[Any] = contextvars.ContextVar("agentcli_secrets_held", default=None)


class SecretsHeld:
    """``with SecretsHeld():`` reads the configured secrets from the environment once for the
    block instead of at every call: eight variables are ~7 us a read, and one event reaching
    the session log and a renderer is redacted dozens of times. A value ``add_secret``
    registers meanwhile is hidden at once; a change to the environment is seen after the block.
    ``App.run`` holds them for a question; the block may span awaits (see ``_held``)."""

    def __enter__(self) -> "SecretsHeld":
        self._token = _held.set(_READ_ONCE)  # read at the first redaction in the block, if any
        return self

    def __exit__(self, *exc: object) -> None:
        _held.reset(self._token)


_READ_ONCE: Any = object()


def _state() -> tuple[list[str], dict[str, str]]:
    held = _held.get()
    if held is None:
        return _read_state()
    if held is _READ_ONCE or held[0] != _added:
        state = _read_state()
        _held.set((_added, state))
        return state
    return held[1]


def _read_state() -> tuple[list[str], dict[str, str]]:
    vals = frozenset(filter(None, map(os.environ.get, _SECRET_ENV)))
    if _extra:
        vals |= _extra
    state = _cache.get(vals)
    if state is None:
        forms: set[str] = set()
        for v in vals:
            if looks_like_secret(v):
                forms |= _forms(v.strip())
        if len(_cache) > 16:
            _cache.clear()
        state = _cache[vals] = (sorted(forms, key=len, reverse=True), {})
    return state


def _secrets() -> list[str]:
    return _state()[0]


# -- credential shapes -----------------------------------------------------------------------
_B = r"(?<![A-Za-z0-9])"   # not in the middle of a word
_KEY_RE = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{8,}"
    rf"|{_B}(?:gh[pousr]_[A-Za-z0-9]{{20,}}|github_pat_[A-Za-z0-9_]{{20,}}|AKIA[0-9A-Z]{{16}}"
    rf"|xox[abposr]-[A-Za-z0-9\-]{{10,}}|[sr]k_(?:live|test)_[A-Za-z0-9]{{16,}}"
    rf"|AIza[0-9A-Za-z_\-]{{30,}})"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)")
_SK_RE = re.compile(rf"{_B}sk-([A-Za-z0-9_\-]{{16,}})")
# scheme://user:PASSWORD@host - the password runs to the LAST '@' of the address (within 256
# characters: every repeat is bounded, so a text of many "x://a:b@" is read in linear time).
_DSN_PW_RE = re.compile(r"\b[a-z][a-z0-9+._-]{0,40}://[^:/@\s]{0,64}:(\S{1,256})@[^@\s]{0,256}", re.IGNORECASE)
# user:PASSWORD@host after a misspelt scheme's head, without the "://" (``postgresql:/app:pw@db``,
# ``postgres//app:pw@db``, ``postgresql;//app:pw@db``, the SQLite path one became: ``postgres/app:pw@db``):
# a word, then ':' or ';' with slashes or one to three slashes, the user, ':', the password to
# the last '@' (bounded, as above). Prose keeps its addresses: "email:ana@example.com?",
# "mailto:ana@example.com", "Kunde:ana@example.com" hold no second ':' before the '@'.
_BARE_PW_RE = re.compile(r"(?<![A-Za-z0-9+._-])[A-Za-z][A-Za-z0-9+._-]{0,40}(?:[:;]/{0,3}|/{1,3})"
                         r"[^\s:/@\"'()<>]{1,64}:([^\s/@][^\s/]{0,255})@(?=[A-Za-z0-9\[])")
# key=value parameters (libpq strings, URL queries) and auth headers.
_KV_PW_RE = re.compile(
    r"\b(?:password|passwd|pwd|api[-_]?key|access[-_]?token|auth[-_]?token|client[-_]?secret)"
    r"\s*=\s*('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s&'\"]+)", re.IGNORECASE)
_HEADER_RE = re.compile(r"\b(?:authorization\s*:\s*(?:bearer\s+|basic\s+)?|bearer\s+|x-api-key\s*:\s*)"
                        r"([A-Za-z0-9._~+/\-]{8,}=*)", re.IGNORECASE)
# What each credential shape cannot match without (case as in its pattern): a text with none of
# these is not searched with the patterns above. One search, and precise: order codes such as
# GH56JK78MN, "though" or "night" no longer send a text through all of them.
# The header names are spelled out in any case, as _HEADER_RE's re.IGNORECASE reads them (its
# "i" also matches U+0130 and U+0131, its "k" the Kelvin sign): an inline (?i) costs twice as much.
_SHAPE_HINT_RE = re.compile(r"sk-|gh[pousr]_|github_pat_|AKIA|xox[abposr]-|[sr]k_(?:live|test)_|AIza"
                            r"|-----BEGIN |://|=|:[^\s@]{0,256}@|[Bb][Ee][Aa][Rr][Ee][Rr]"
                            "|[Hh][Oo][Rr][Ii\u0130\u0131][Zz][Aa][Tt][Ii\u0130\u0131][Oo][Nn]"
                            "|-[Aa][Pp][Ii\u0130\u0131]-[Kk\u212a][Ee][Yy]")
_SHORTEST = 6  # no secret (MIN_SECRET) and no credential shape is shorter

# -- what is skipped when matching (it does not show, or shows as nothing) -------------------
# ESC sequences (CSI, OSC, and two-char), then any remaining C0/C1 control except \n and \t.
_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?|\x9b[0-?]*[ -/]*[@-~]")
# C0/C1 controls, and the bidirectional overrides/isolates that can reorder what is shown.
_CTRL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_INVISIBLE = (r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
              r"\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff]")


class _Later:
    """A pattern compiled at its first use (call it for the pattern): one a process may never
    need. sre compiles in Python; these four were ~6 M instructions of every process that
    imports this module (``ask`` offline needs none of them)."""

    __slots__ = ("pattern", "flags", "_rx")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern, self.flags, self._rx = pattern, flags, None

    def __call__(self) -> re.Pattern:
        rx = self._rx
        if rx is None:  # two threads may both compile it: the same pattern either way
            rx = self._rx = re.compile(self.pattern, self.flags)
        return rx


_SKIP_RE = _Later(_ANSI_RE.pattern + "|" + _INVISIBLE + "+")
# Every branch of _SKIP_RE begins with a character of _INVISIBLE (ESC and CSI are in it), and one
# such character is a match of its last branch: _SKIP_RE finds something in a text exactly when
# this one-character class does, which the engine searches for in one scan.
_INVISIBLE_RE = re.compile(_INVISIBLE)

# Pieces every match of _SHAPE_HINT_RE holds, branch by branch, as written (_HINT_PIECES) or, for
# the header names in any case, in the lowered text (_HINT_LOWER: only letters whose class in the
# hint is ASCII, which lower() maps to these, side by side; "zat" of "horization", "-ap" of
# "-api-key"), and ":" with "@" for the password before a host. A text holding none of them is
# not searched with _SHAPE_HINT_RE: an alternation of 14 branches tried at every position cost
# ~800 instructions a character (tests/test_secrets.py holds _hint_in equal to the search).
_HINT_PIECES = ("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "xox", "k_live_",
                "k_test_", "AIza", "-----BEGIN ", "://", "=")
_HINT_LOWER = ("bearer", "zat", "-ap")


def _hint_in(text: str) -> bool:
    """``_SHAPE_HINT_RE.search(text) is not None``, searched only when a piece it needs is there."""
    for p in _HINT_PIECES:
        if p in text:
            return _SHAPE_HINT_RE.search(text) is not None
    if ":" in text and "@" in text:
        return _SHAPE_HINT_RE.search(text) is not None
    low = text.lower()
    for p in _HINT_LOWER:
        if p in low:
            return _SHAPE_HINT_RE.search(text) is not None
    return False


def _view(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` as seen, and the segments (start in view, start in text) that map it back."""
    parts, vstarts, tstarts = [], [], []
    pos = vlen = 0
    for m in _SKIP_RE().finditer(text):
        if m.start() > pos:
            parts.append(text[pos:m.start()])
            vstarts.append(vlen)
            tstarts.append(pos)
            vlen += m.start() - pos
        pos = m.end()
    if pos < len(text):
        parts.append(text[pos:])
        vstarts.append(vlen)
        tstarts.append(pos)
    return "".join(parts), vstarts, tstarts


def _spans(view: str, secrets: list[str]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for s in secrets:
        i = view.find(s)
        while i >= 0:
            spans.append((i, i + len(s)))
            i = view.find(s, i + len(s))
        if len(s) >= 2 * FRAGMENT:  # a piece of a long key is a leak too
            for k in range(0, len(s) - FRAGMENT + 1, FRAGMENT // 3):
                w = s[k:k + FRAGMENT]
                i = view.find(w)
                while i >= 0:
                    a, b, ka, kb = i, i + FRAGMENT, k, k + FRAGMENT
                    while a > 0 and ka > 0 and view[a - 1] == s[ka - 1]:
                        a, ka = a - 1, ka - 1
                    while b < len(view) and kb < len(s) and view[b] == s[kb]:
                        b, kb = b + 1, kb + 1
                    spans.append((a, b))
                    i = view.find(w, b)
    if _SHAPE_HINT_RE.search(view):
        spans += [m.span() for m in _KEY_RE.finditer(view)]
        spans += [m.span() for m in _SK_RE.finditer(view) if not _WORDLIKE_RE.fullmatch(m.group(1))]
        for rx in (_DSN_PW_RE, _BARE_PW_RE, _KV_PW_RE):  # a password in context, however weak
            spans += [m.span(1) for m in rx.finditer(view) if m.group(1).strip("'\"") != MASK]
        spans += [m.span(1) for m in _HEADER_RE.finditer(view) if not _WORDLIKE_RE.fullmatch(m.group(1))]
    return spans


_gate_literals: dict[tuple[str, ...], tuple[str, ...]] = {}


def _literals(secrets: list[str]) -> tuple[str, ...]:
    """``_secret_literals(secrets)``, made once per set of secrets."""
    key = tuple(secrets)
    lits = _gate_literals.get(key)
    if lits is None:
        if len(_gate_literals) > 16:
            _gate_literals.clear()
        lits = _gate_literals[key] = tuple(sorted(_secret_literals(secrets)))
    return lits


def _looked_at(text: str, secrets: list[str]) -> bool:
    """Whether ``text`` holds something ``_spans`` could find a span in: a configured secret (a
    long one by its ``FRAGMENT`` windows, which its whole contains), a credential shape's hint,
    or something skipped when matching (then the text is looked at as seen). The same answer as
    one search of the alternation of the three (``(?:lit)|...|(?:_SKIP_RE)|(?:_SHAPE_HINT_RE)``,
    which tests/test_secrets.py keeps as the reference): each part is asked on its own, the
    literals with ``in``, the skipped characters as one class, the hint behind its pieces."""
    if secrets:
        for lit in _literals(secrets):
            if lit in text:
                return True
    return _INVISIBLE_RE.search(text) is not None or _hint_in(text)


def redact(text: str, secrets: list[str] | None = None) -> str:
    """``text`` with every secret (see the module docstring) replaced by ``***``."""
    if len(text) < _SHORTEST:
        return text
    secrets = _secrets() if secrets is None else secrets
    if not _looked_at(text, secrets):  # the common case: nothing in the text to look at twice
        return text
    skipped = _INVISIBLE_RE.search(text) is not None
    view, vstarts, tstarts = _view(text) if skipped else (text, [0], [0])
    spans = _spans(view, secrets)
    if not spans:
        return text

    def to_text(v: int, end: bool) -> int:
        if not skipped:
            return v
        k = bisect.bisect_right(vstarts, v - 1 if end else v) - 1
        return tstarts[k] + (v - vstarts[k])

    out, pos = [], 0
    for a, b in sorted(spans):
        ta, tb = to_text(a, False), to_text(b, True)
        if ta < pos:  # overlaps the previous span: extend it
            if tb > pos:
                pos = tb
            continue
        out += [text[pos:ta], MASK]
        pos = tb
    out.append(text[pos:])
    return "".join(out)


def redact_obj(obj: Any, secrets: list[str] | None = None) -> Any:
    """A JSON-like value with every string in it, dictionary keys included, redacted. Iterative:
    the deepest value a JSON parser accepts never raises ``RecursionError`` here. A float that
    is NaN or infinite becomes None: ``json.dumps`` would write ``NaN`` / ``Infinity``, which
    no JSON reader accepts (every JSON sink passes through here)."""
    if secrets is None:
        secrets, memo = _state()  # once per object, not once per string
    else:
        memo = {}
    if isinstance(obj, str):
        return redact(obj, secrets)
    if not isinstance(obj, (dict, list, tuple)):
        return _finite(obj)

    def text(s: str) -> str:
        # The same keys, tool names and ids come in every event: a short string is redacted
        # once per set of secrets (a str subclass, such as an enum member, is left to redact).
        if type(s) is not str or len(s) > MEMO_CHARS:
            return redact(s, secrets)
        r = memo.get(s)
        if r is None:
            r = redact(s, secrets)
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            memo[s] = r
        return r

    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(obj, root, 0)]  # (value, parent container, slot)
    # Only containers go on the stack; strings and numbers are done where they are met.
    while stack:
        value, parent, slot = stack.pop()
        if isinstance(value, dict):
            new: Any = {}
            for k, v in value.items():
                key = text(k) if isinstance(k, str) else k
                while key in new:  # two keys that redact alike stay two entries
                    key = f"{key}*"
                if isinstance(v, str):
                    new[key] = text(v)
                elif isinstance(v, (dict, list, tuple)):
                    new[key] = None
                    stack.append((v, new, key))
                else:
                    new[key] = None if isinstance(v, float) and not math.isfinite(v) else v
        else:
            new = [None] * len(value)
            for i, v in enumerate(value):
                if isinstance(v, str):
                    new[i] = text(v)
                elif isinstance(v, (dict, list, tuple)):
                    stack.append((v, new, i))
                else:
                    new[i] = None if isinstance(v, float) and not math.isfinite(v) else v
        parent[slot] = new
    return root[0]


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


# The gate's credential hints as they can occur in a dump that is pure printable ASCII (no
# escape: see ascii_json_redacted), in lower case, to be looked for in the lowered dump: a match
# of the gate's hints is one of these once lowered (their U+0130, U+0131 and Kelvin-sign variants
# cannot occur in ASCII), and one of these the gate would not find only sends the value through
# the walk. The alternation ``sk-|sk_(?:live|test)_|rk_(?:live|test)_|gh[pousr]_|github_pat_|akia|
# xox[abposr]-|aiza|-----begin |://|=|:[^\s@]{0,256}@|bearer|horization|-api-key`` (one search of
# it cost ~100 instructions a character of the line) is asked branch by branch: every branch but
# one is a literal (with ``gh``, ``xox``, ``k_live_``, ``k_test_`` asked first for their groups),
# and the password before a host is its own search, which skips to each ":" in C.
# tests/test_redact_gate.py holds _ascii_hint_in equal to the alternation. ``_SKIP_RE`` can only
# find DEL there: json escapes every other control.
_ASCII_LITERALS = ("sk-", "github_pat_", "akia", "aiza", "-----begin ", "://", "=", "bearer", "horization",
                   "-api-key")
_ASCII_GROUPS = (("k_live_", ("sk_live_", "rk_live_")), ("k_test_", ("sk_test_", "rk_test_")),
                 ("gh", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
                 ("xox", ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-")))
_COLON_AT_RE = re.compile(r":[^\s@]{0,256}@")


def _ascii_hint_in(low: str) -> bool:
    """Whether the lowered dump ``low`` holds one of the hints above."""
    for p in _ASCII_LITERALS:
        if p in low:
            return True
    for head, pieces in _ASCII_GROUPS:
        if head in low:
            for p in pieces:
                if p in low:
                    return True
    return "@" in low and _COLON_AT_RE.search(low) is not None


def _secret_literals(secrets: list[str]) -> set[str]:
    """What a gate looks for of the secrets: each one, or of a long one its windows of
    ``FRAGMENT`` characters, ``FRAGMENT // 3`` apart."""
    lits: set[str] = set()
    for s in secrets:
        if len(s) >= 2 * FRAGMENT:
            lits.update(s[k:k + FRAGMENT] for k in range(0, len(s) - FRAGMENT + 1, FRAGMENT // 3))
        else:
            lits.add(s)
    return lits


def ascii_json_redacted(obj: Any) -> str:
    """``json.dumps(redact_obj(obj), ensure_ascii=True, default=str)``, the session log's line,
    without walking ``obj`` when the dump shows that no string in it can hold a secret.

    A dump with no backslash holds every string of ``obj`` (keys, values, ``default=str``
    output) verbatim, and all of them are printable ASCII (json escapes quotes, controls but
    DEL, and everything beyond ASCII). The test ``redact`` begins with (``_looked_at``: a configured
    secret or a window of it, a credential shape's hint, a character skipped when matching) has
    no look-around, so when nothing it looks for is in the whole dump, nothing is in any string,
    ``redact`` returns each as it is, and ``redact_obj(obj)`` dumps to the same text. On such a
    dump that test is the two cheap ones below. A NaN or an infinity (``allow_nan=False``),
    an escape or any hit takes the walk (tests/test_secrets.py holds both ways equal)."""
    try:
        line = json.dumps(obj, ensure_ascii=True, default=str, allow_nan=False)
    except (ValueError, RecursionError):
        line = None
    if line is not None and "\\" not in line and "\x7f" not in line and not _ascii_hint_in(line.lower()):
        secrets = _secrets()
        if not secrets or not any(lit in line for lit in _literals(secrets)):
            return line
    return json.dumps(redact_obj(obj), ensure_ascii=True, default=str)


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def replace_surrogates(obj: Any) -> Any:
    """``obj`` with every lone surrogate (legal in JSON as ``"\\ud800"``, impossible to encode as
    UTF-8, so impossible to send back or write to a file) replaced by U+FFFD. Returns ``obj``
    itself when there is none, which is always the case with a well-behaved API."""
    if not _has_surrogate(obj):
        return obj
    if isinstance(obj, str):
        return _SURROGATE_RE.sub("\ufffd", obj)
    if isinstance(obj, dict):
        return {replace_surrogates(k): replace_surrogates(v) for k, v in obj.items()}
    return [replace_surrogates(v) for v in obj]


def _has_surrogate(obj: Any) -> bool:
    """Does ``obj`` (a string, or dicts and lists of them) hold a lone surrogate anywhere? A walk
    that builds nothing: a well-behaved API's message, walked on every turn, is handed back as
    it is."""
    if isinstance(obj, str):
        return not obj.isascii() and _SURROGATE_RE.search(obj) is not None
    if isinstance(obj, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in obj.items())
    if isinstance(obj, list):
        return any(_has_surrogate(v) for v in obj)
    return False


def clean_for_terminal(text: str) -> str:
    """Text safe to show: redacted, then without escape sequences or control characters (and
    redacted once more as shown, in case cleaning joined pieces of a secret)."""
    secrets = _secrets()
    if (type(text) is str and "\u2028" not in text and "\u2029" not in text
            and not _looked_at(text, secrets)):
        # The common case, returned as it is: nothing to redact, and no ESC, CSI, CR or other
        # control (each is a character _looked_at looks for), so no step below changes it. (A
        # str subclass, an enum's value, goes the long way: the steps hand back a plain str.)
        return text
    text = _ANSI_RE.sub("", redact(text, secrets))
    # Line and paragraph separators break lines on some terminals: they become the newline a
    # reader can see, like a carriage return does (one-line fields flatten them before this).
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n").replace("\u2029", "\n")
    return redact(_CTRL_RE.sub("\ufffd", text), secrets)


# Characters that break a line or hide on screen: C0/C1 controls, DEL, soft hyphen, bidi marks and
# overrides, zero-width and other format characters, line/paragraph separators, a BOM.
# C1 controls and DEL, soft hyphen, bidi marks and overrides, zero-width and format characters,
# line and paragraph separators, a BOM, interlinear annotations, lone surrogates.
_UNSAFE_BEYOND_C0 = ("\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
                     "\ufff9-\ufffb\ud800-\udfff")
_LINE_UNSAFE_RE = re.compile(f"[\x00-\x1f{_UNSAFE_BEYOND_C0}]")


# What a JSON line must not hold raw although JSON allows it: characters some reader takes for
# a line break (U+2028/U+2029, NEL and the other C1 controls, which a terminal may also run as
# an escape: U+009B is CSI) or that hide or reorder text (bidi overrides, zero-width and format
# characters, DEL, a BOM), and lone surrogates (not text).
# (json.dumps escapes the C0 controls itself.)
_JSON_UNSAFE_RE = _Later(f"[{_UNSAFE_BEYOND_C0}]")


def json_dumps(obj: Any) -> str:
    """``obj`` as one line of JSON (non-ASCII text kept readable) in which every character of
    ``_JSON_UNSAFE_RE`` is a ``\\uXXXX`` escape: ``str.splitlines``, a terminal or a JSON Lines
    reader sees exactly one line, and the value reads back the same. (Those characters occur in
    the dump only inside strings, where the escape means the same character.)"""
    return _JSON_UNSAFE_RE().sub(lambda m: f"\\u{ord(m.group()):04x}",
                               json.dumps(obj, ensure_ascii=False))


def one_line(text: Any, limit: int = 60) -> str:
    """The one safe-line helper: ``text`` as one printable, redacted line of at most ``limit``
    characters (escape sequences dropped; controls, format characters and separators become
    spaces; runs of space collapse; cut with "…"). Work is bounded on a huge value."""
    s = "" if text is None else (text if isinstance(text, str) else str(text))
    # redacted first, as the text would be seen: a key split by an escape sequence must not
    # become two harmless-looking words once the escape is a space; and again after
    secrets = _secrets()
    s = _ANSI_RE.sub(" ", redact(s[: limit * 8 + 64], secrets))
    s = redact(" ".join(_LINE_UNSAFE_RE.sub(" ", s).split()), secrets)
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "\u2026"


# =========================================================================== URLs

_SCHEME_RE = _Later(r"^([A-Za-z][A-Za-z0-9+._-]*://)(.*)$", re.S)
_PARAM_PW_RE = _Later(r"(?i)(\bpassword\s*=\s*)('[^']*'|[^&\s]*)")


def url_userinfo(url: str) -> tuple[str, str | None] | None:
    """``(user, raw password)`` of a URL, read the cautious way: the userinfo is everything up to
    the LAST ``@`` (a raw ``@``, ``/``, ``#`` or ``?`` in a password stays in it). None when the
    URL has no userinfo; the password is None when the userinfo has no ``:``."""
    m = _SCHEME_RE().match(url)
    if not m or "@" not in m.group(2):
        return None
    userinfo = m.group(2).rsplit("@", 1)[0]
    user, sep, password = userinfo.partition(":")
    return user, (password if sep else None)


def dsn_passwords(url: str, parsed: Any = None) -> list[str]:
    """Every string that is (a piece of) URL's password however a parser splits it, longest
    first: the raw userinfo password, its percent-decoded form, its pieces around a raw ``@``,
    ``/``, ``#`` or ``?``, and PARSED, the password the database driver's own parser reads (psycopg's
    ``conninfo_to_dict``), handed in by the caller so that this module needs no driver. Used by
    the orders store and the drafts queue to scrub a libpq message and to register secrets."""
    found = {str(parsed or "")}
    info = url_userinfo(url)
    if info and info[1]:
        raw = info[1]
        found.update({raw, unquote(raw)})
        for sep in "@/#?":
            found.update(raw.split(sep))
    return sorted((p for p in found if len(p) >= 3), key=len, reverse=True)


def scrub_dsn(text: str, url: str, parsed: Any = None) -> str:
    """TEXT without any piece of URL's password (:func:`dsn_passwords`), then redacted."""
    for pw in dsn_passwords(url, parsed):
        text = text.replace(pw, "***")
    return redact(text)


def mask_dsn(url: str) -> str:
    """``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db``.

    Never trusts a URL parser to find the password: everything between the user name and the
    LAST ``@`` is masked (a raw ``@``, ``/``, ``#`` or ``?`` in a password is still masked), and so
    is every ``password=`` parameter, in URL and in ``key=value`` form."""

    text = _PARAM_PW_RE().sub(lambda m: m.group(1) + "***", url)
    m = _SCHEME_RE().match(text)
    if m and "@" in m.group(2):
        scheme, rest = m.groups()
        userinfo, tail = rest.rsplit("@", 1)
        if ":" in userinfo:
            text = f"{scheme}{userinfo.split(':', 1)[0]}:***@{tail}"
    return redact(text)
