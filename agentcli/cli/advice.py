"""What to do next, said in the terms of the command the message is shown in.

Errors and stops (``Error.kind``, ``TurnFinished.stop_reason``) are command-neutral where they are
made (providers, loop): the loop cannot know whether a person reads them in the REPL (where
``/new`` starts a new ticket), in ``ask`` (where there is no ticket), or in ``batch`` (where
``--concurrency`` exists). The advice is added where the line is shown, from this one table keyed
by ``(kind, command)``; ``"*"`` is any command. Light: standard library only.
"""

from __future__ import annotations

COMMANDS = ("ask", "chat", "batch", "eval")

ADVICE: dict[tuple[str, str], str] = {
    ("rate_limited", "batch"): "wait a minute, or lower --concurrency",
    ("rate_limited", "eval"): "wait a minute, or lower --concurrency",
    ("rate_limited", "*"): "wait a minute and ask again",
    # the gate stopped: a quota beyond its bound, or a limit that let nothing through
    ("rate_limit_stop", "batch"): "rerun with --resume once the limit has reset",
    ("rate_limit_stop", "*"): "ask again once the limit has reset",
    ("model_context_window_exceeded", "chat"): "start a new ticket (/new)",
    ("model_context_window_exceeded", "ask"): "shorten the question, or use a model with a "
                                              "larger context (--model)",
    ("model_context_window_exceeded", "*"): "shorten that question, or use a model with a "
                                            "larger context (--model)",
    ("overloaded", "*"): "try again shortly",
    ("server_error", "*"): "try again shortly",
    ("refusal", "batch"): "a person should handle this question",
}


def advice(kind: str | None, command: str) -> str:
    """The advice for ``kind`` in ``command``, or ""."""
    if not kind:
        return ""
    return ADVICE.get((kind, command)) or ADVICE.get((kind, "*"), "")


def advise(message: str, kind: str | None, command: str) -> str:
    """``message`` with the advice for ``(kind, command)`` appended, unless it already says it."""
    extra = advice(kind, command)
    if not extra or extra in message:
        return message
    return f"{message.rstrip('; ')}; {extra}"
