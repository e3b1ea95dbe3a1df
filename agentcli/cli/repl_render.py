"""What the REPL shows while a question runs: ``TraceRenderer`` (spinner, compact lookups, the
draft as a quoted block, the answer as Markdown), made unbreakable, plus the REPL's own views of
drafts (``/show``, the list printed on leaving)."""

from __future__ import annotations

from typing import Any

from ..events import Event
from ..redact import clean_for_terminal
from .render import TraceRenderer
from .trace_lines import draft_block


def _clean(text: Any) -> str:
    return clean_for_terminal(str(text))


class ReplRenderer(TraceRenderer):
    """``TraceRenderer`` for an interactive session: advice for ``chat``, and it never raises (a
    display failure must not break the turn or the history)."""

    def __init__(self, console: Any, **kw: Any):
        kw.setdefault("command", "chat")
        super().__init__(console, **kw)
        self.failed = False

    def __call__(self, ev: Event) -> None:
        try:
            super().__call__(ev)
        except Exception:  # noqa: BLE001 - the display must never break a turn
            self.failed = True
            self.stop_spinner()

    def close(self) -> None:
        try:
            super().close()
        except Exception:  # noqa: BLE001
            pass


def show_draft(say: Any, draft: Any, width: int | None) -> None:
    """A saved draft as a person reads it: id, status, order, path, then its text quoted."""
    meta = draft.meta
    say(f"draft {_clean(draft.id)} · {_clean(meta.get('status', '?'))} · order "
        f"{_clean(meta.get('order_code') or '—')}", "bold")
    say(f"  {_clean(draft.path)}", None, no_wrap=True)
    say("\n".join(draft_block(draft.text, width)), None)
