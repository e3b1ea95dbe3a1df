"""What the REPL shows while a question runs: ``TraceRenderer`` plus a spinner and folded results."""

from __future__ import annotations

import json
from typing import Any

from ..events import DraftSaved, Event, ModelRequest, Retry, ToolCallStarted, ToolResult
from ..redact import clean_for_terminal, redact
from ..render import TraceRenderer, compact, tool_result_head

FOLD_LINES = 14


def _clean(text: Any) -> str:
    return clean_for_terminal(redact(str(text)))


def _pretty_lines(obj: Any, width: int = 600) -> list[str]:
    s = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, indent=2)
    out = []
    for line in _clean(s).split("\n"):
        out.append(line if len(line) <= width else line[:width] + f"… ({len(line) - width} more characters)")
    return out


class ReplRenderer(TraceRenderer):
    """``TraceRenderer`` plus what an interactive session wants.

    - a spinner while waiting for the model (and while tools run), stopped before anything is
      printed, so it never mixes with streamed text;
    - tool results as pretty JSON, folded when long (errors stay one red line);
    - never raises: a display failure must not break the turn or the history.
    """

    def __init__(self, console: Any, *, spinner: bool = False, **kw: Any):
        super().__init__(console, **kw)
        self.spinner = spinner
        self.failed = False
        self._live: Any = None
        self._running = 0  # tool calls started and not finished

    def __call__(self, ev: Event) -> None:
        try:
            self.stop_spinner()
            if isinstance(ev, ModelRequest):
                self._running = 0
            elif isinstance(ev, ToolCallStarted):
                self._running += 1
            elif isinstance(ev, ToolResult):
                self._running = max(0, self._running - 1)
            if isinstance(ev, ToolResult) and self.live and not self.quiet:
                self._tool_result(ev)
            else:
                super().__call__(ev)
            if not self.spinner or self._mid_line:
                return
            if isinstance(ev, ModelRequest):
                self._spin("waiting for the model…")
            elif isinstance(ev, Retry):
                self._spin(f"waiting {ev.wait_s:.1f} s before retrying…")
            elif isinstance(ev, (ToolCallStarted, ToolResult, DraftSaved)) and self._running:
                n = self._running
                self._spin(f"running {n} tool call{'s' if n > 1 else ''}…")
        except Exception:  # noqa: BLE001 - the display must never break a turn
            self.failed = True

    def _tool_result(self, ev: ToolResult) -> None:
        from rich.text import Text

        head, style = tool_result_head(ev.name, ev.outcome, ev.is_error, ev.duration_ms)
        one = compact(ev.result)
        if ev.is_error or len(head) + 2 + len(one) <= max(40, self.console.width):
            self._line(f"{head}: {one}", style)
            return
        self._line(head, style)
        lines = _pretty_lines(ev.result)
        body = "\n".join("  " + ln for ln in lines[:FOLD_LINES])
        if len(lines) > FOLD_LINES:
            body += (f"\n  … {len(lines) - FOLD_LINES} more lines "
                     "(the full result is in the session log: agentcli log show)")
        self.console.print(Text(body), highlight=False, overflow="fold")

    def _spin(self, text: str) -> None:
        from rich.live import Live
        from rich.spinner import Spinner

        self._live = Live(Spinner("dots", text=text, style="cyan"), console=self.console,
                          transient=True, refresh_per_second=12.5, redirect_stdout=False,
                          redirect_stderr=False)
        self._live.start()

    def stop_spinner(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            try:
                live.stop()
            except Exception:  # noqa: BLE001
                pass

    def close(self) -> None:
        self.stop_spinner()
        try:
            super().close()
        except Exception:  # noqa: BLE001
            pass
