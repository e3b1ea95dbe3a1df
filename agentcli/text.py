"""Question hygiene shared by every way in (argument, standard input, REPL, batch line).

Standard library only, at the bottom of the layers: the CLI, the REPL and the batch engine all
import it, it imports nothing of theirs.
"""

from __future__ import annotations

import re

from .errors import UsageError
from datetime import datetime
from typing import Any

from .redact import clean_for_terminal, replace_surrogates

MAX_QUESTION_CHARS = 100_000


def clean_text(s: str) -> str:
    """Text fit to send and store: no NUL, no byte-order mark in front, and no lone surrogate
    (from invalid UTF-8 in an argument, or a ``\\ud800`` escape in JSON), which no encoder
    accepts: each becomes U+FFFD, as undecodable bytes from standard input already do."""
    s = s.replace("\x00", "")
    if s.startswith("\ufeff"):
        s = s[1:]
    return replace_surrogates(s)


# One address: no spaces, controls, brackets, quotes, commas or semicolons; one @ with text on
# both sides. ``Name <address>`` (as pasted from a mail client) is reduced to the address.
_ADDRESS_RE = re.compile(r"[^\s@<>\"',;()\[\]\\]+@[^\s@<>\"',;()\[\]\\]+")
_NAMED_RE = re.compile(r"[^<>]*<([^<>]*)>")
MAX_ADDRESS_CHARS = 254


def customer_address(value: str) -> str:
    """The customer's email address from ``value`` (``ana@example.com`` or ``Ana Silva
    <ana@example.com>``); ValueError with a message for anything else, blank included: a
    customer scope that silently meant "no scope" or "nobody" would fail open or look empty."""
    v = clean_text(str(value)).strip()
    m = _NAMED_RE.fullmatch(v)
    if m:
        v = m.group(1).strip()
    if not v:
        raise ValueError("is blank: give the customer's email address, or leave the setting out")
    if len(v) > MAX_ADDRESS_CHARS or not _ADDRESS_RE.fullmatch(v):
        shown = one_line(v, 60)
        raise ValueError(f"{shown!r} is not an email address: give one like ana@example.com "
                         "or 'Ana Silva <ana@example.com>'")
    return v


def check_question(q: str) -> str:
    """A question fit to send, or UsageError (empty, too long)."""
    q = clean_text(q)
    if not q.strip():
        raise UsageError("the question is empty")
    if len(q) > MAX_QUESTION_CHARS:
        raise UsageError(f"the question is too long ({len(q)} characters; the limit is "
                         f"{MAX_QUESTION_CHARS}): trim quoted history from the email")
    return q.replace("\r\n", "\n").strip("\n")  # pasted CRLF emails read like any other


def format_time(iso: str | None) -> str:
    """An ISO UTC time as local ``YYYY-MM-DD HH:MM`` for tables."""
    if not iso:
        return "?"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return iso


def one_line(text: Any, limit: int = 60) -> str:
    s = " ".join(("" if text is None else str(text)).split())
    s = clean_for_terminal(s)
    return s if len(s) <= limit else s[: limit - 1] + "…"
