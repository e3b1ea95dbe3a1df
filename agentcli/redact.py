"""Secrets never reach output, logs or drafts; terminal text never carries control sequences.

``redact`` replaces every known secret (API keys from the environment, database passwords
registered at open time) and anything shaped like an Anthropic/OpenAI key or a DSN password.
``clean_for_terminal`` neutralises ANSI escape sequences and control characters coming from the
model, the database or the question, so no text can move the cursor, retitle the window or hide
what is on screen.
"""

from __future__ import annotations

import os
import re
from typing import Any

_SECRET_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "PGPASSWORD")
_extra: set[str] = set()
_KEY_RE = re.compile(r"\b(sk-ant-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9_\-]{16,})")
_DSN_PW_RE = re.compile(r"(\b[a-z][a-z0-9+._-]*://[^:/@\s]*:)([^@\s]+)(@)", re.IGNORECASE)
# libpq key=value connection strings and URL query parameters: password=... / password='...'
_KV_PW_RE = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)", re.IGNORECASE)

# ESC sequences (CSI, OSC, and two-char), then any remaining C0/C1 control except \n and \t.
_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?|\x9b[0-?]*[ -/]*[@-~]")
# C0/C1 controls, and the bidirectional overrides/isolates that can reorder what is shown.
_CTRL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def add_secret(value: str | None) -> None:
    if value and len(value) >= 4:
        _extra.add(value)


def _secrets() -> list[str]:
    vals = {os.environ.get(k) for k in _SECRET_ENV} | _extra
    return sorted((v for v in vals if v and len(v) >= 4), key=len, reverse=True)


def redact(text: str, secrets: list[str] | None = None) -> str:
    for s in _secrets() if secrets is None else secrets:
        if s in text:
            text = text.replace(s, "***")
    if "sk-" in text:  # every key pattern match contains it
        text = _KEY_RE.sub("***", text)
    if "://" in text:
        text = _DSN_PW_RE.sub(r"\1***\3", text)
    if "assword" in text or "ASSWORD" in text:
        text = _KV_PW_RE.sub(r"\1***", text)
    return text


def redact_obj(obj: Any, secrets: list[str] | None = None) -> Any:
    if secrets is None:
        secrets = _secrets()  # once per object, not once per string
    if isinstance(obj, str):
        return redact(obj, secrets)
    if isinstance(obj, dict):
        return {k: redact_obj(v, secrets) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v, secrets) for v in obj]
    return obj


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def replace_surrogates(obj: Any) -> Any:
    """``obj`` with every lone surrogate (legal in JSON as ``"\\ud800"``, impossible to encode as
    UTF-8, so impossible to send back or write to a file) replaced by U+FFFD. Returns ``obj``
    itself when there is none, which is always the case with a well-behaved API."""
    if isinstance(obj, str):
        return _SURROGATE_RE.sub("\ufffd", obj) if _SURROGATE_RE.search(obj) else obj
    if isinstance(obj, dict):
        return {replace_surrogates(k): replace_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [replace_surrogates(v) for v in obj]
    return obj


def clean_for_terminal(text: str) -> str:
    text = _ANSI_RE.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CTRL_RE.sub("\ufffd", text)
