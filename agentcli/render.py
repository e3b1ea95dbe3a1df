"""The trace renderer: loop events as a person reads them (``result`` builds the ``--json`` object).

``TraceRenderer`` serves both faces of human output:
- on a terminal (``live=True``): text streams as the model writes it, tool calls appear as they
  start and end, all on one rich console (colour unless ``NO_COLOR``);
- in a pipe (``live=False``): the final answer alone goes to the answer stream (stdout) when the
  question is done; the trace (tool calls, intermediate text, retries, stops) goes to stderr.
Every piece of text from the model, the database or the question is passed through
``clean_for_terminal`` and printed without rich markup, so it cannot inject escape sequences.

``tool_call_line`` and ``tool_result_line`` are the one place the "→ name input" and
"← name ok (ms): result" lines are built: the live trace, the REPL and the log replay use them.
"""

from __future__ import annotations

import json
from typing import IO, Any

from .events import (Checked, DraftSaved, Error, Event, ModelRequest, ModelResponse, Question,
                     Retry, TextDelta, ToolCallStarted, ToolResult, TurnFinished)
from .redact import clean_for_terminal, redact

FOLD_CHARS = 600


def compact(obj: Any, limit: int = FOLD_CHARS) -> str:
    """A value as one line of JSON (or its text), redacted, cleaned and cut at ``limit``."""
    s = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    s = clean_for_terminal(redact(s))
    if len(s) > limit:
        s = s[:limit] + f"… ({len(s) - limit} more characters)"
    return s


def tool_call_line(name: Any, input: Any) -> tuple[str, str]:
    """The line shown when a tool call starts, and its style."""
    return f"→ {clean_for_terminal(str(name))} {compact(input, 300)}", "cyan"


def tool_result_head(name: Any, outcome: Any, is_error: bool, duration_ms: Any) -> tuple[str, str]:
    """"← name ok (1.2 ms)" / "✗ name timeout (…)", and its style: a result line without the result."""
    ms = f"{float(duration_ms or 0):.1f} ms"
    name = clean_for_terminal(str(name))
    if is_error:
        return f"✗ {name} {clean_for_terminal(str(outcome))} ({ms})", "red"
    tag = "not found" if outcome == "not_found" else "ok"
    return f"← {name} {tag} ({ms})", "green"


def tool_result_line(name: Any, outcome: Any, is_error: bool, duration_ms: Any,
                     result: Any) -> tuple[str, str]:
    """The line shown when a tool call ends (result or error, and duration), and its style."""
    head, style = tool_result_head(name, outcome, is_error, duration_ms)
    return f"{head}: {compact(result)}", style


def finding_line(finding: Any) -> tuple[str, str]:
    """"⚑ grounding: kind: message" for one grounding finding, and its style (errors stand out)."""
    f = finding if isinstance(finding, dict) else {}
    sev = "error" if f.get("severity") == "error" else "warning"
    text = compact(f"{f.get('kind')}: {f.get('message')}", 300)
    return (f"⚑ grounding: {text}" if sev == "error" else f"⚑ grounding (warning): {text}",
            "bold magenta" if sev == "error" else "yellow")


class TraceRenderer:
    def __init__(self, console: Any, *, answer_file: IO[str] | None = None, live: bool = True,
                 quiet: bool = False, err_console: Any = None):
        self.console = console          # trace (and, when live, the streamed text)
        self.err = err_console or console
        self.answer_file = answer_file  # where the final answer goes when not live
        self.live = live
        self.quiet = quiet
        self._mid_line = False
        self._turn_text: list[str] = []
        self._held = ""  # streamed text not yet shown: the tail after the last whitespace
        self._countdown: Any = None  # a rich Live counting a retry wait down (terminal only)

    # -- helpers ------------------------------------------------------------------------
    def _line(self, text: str, style: str | None = None, *, force: bool = False) -> None:
        if self.quiet and not force:
            return
        from rich.text import Text

        self._end_text()
        self.console.print(Text(text, style=style or ""), soft_wrap=True, highlight=False)

    def _show(self, text: str) -> None:
        """Write model text live, redacted and cleaned. A secret is one run of non-space
        characters, so text is held back until the next whitespace before it is redacted."""
        text = self._held + text
        cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t")) + 1
        self._held = text[cut:]
        self._emit(text[:cut])

    def _emit(self, text: str) -> None:
        txt = clean_for_terminal(redact(text))
        if txt:
            self.console.file.write(txt)
            self.console.file.flush()
            self._mid_line = not txt.endswith("\n")

    def _end_text(self) -> None:
        if self._held:
            held, self._held = self._held, ""
            self._emit(held)
        if self._mid_line:
            self.console.file.write("\n")
            self.console.file.flush()
            self._mid_line = False

    # -- the consumer -------------------------------------------------------------------
    def __call__(self, ev: Event) -> None:
        if self._countdown is not None:  # the wait is over: whatever comes next replaces it
            self._countdown.stop()
            self._countdown = None
        if isinstance(ev, Question):
            return
        if isinstance(ev, ModelRequest):
            self._turn_text = []
            if ev.attempt > 1:
                self._line(f"↻ retrying model call {ev.turn} (attempt {ev.attempt})", "yellow")
            return
        if isinstance(ev, TextDelta):
            self._turn_text.append(ev.text)
            if self.live:
                self._show(ev.text)
            return
        if isinstance(ev, ModelResponse):
            if self.live and not self._turn_text and ev.text:
                self._emit(ev.text)  # --no-stream: the text arrives whole
            if not self.live and ev.tool_calls and ev.text.strip():
                self._line("model: " + compact(ev.text.strip()), "dim")
            return
        if isinstance(ev, Retry):
            self._line(f"! model call {ev.turn} failed ({clean_for_terminal(ev.reason)}); "
                       f"retrying in {ev.wait_s:.1f} s", "yellow")
            if ev.wait_s >= 1 and not self.quiet and getattr(self.console, "is_terminal", False):
                from rich.live import Live

                self._countdown = Live(_Countdown(ev.wait_s), console=self.console,
                                       refresh_per_second=4, transient=True)
                self._countdown.start()
            return
        if isinstance(ev, ToolCallStarted):
            self._line(*tool_call_line(ev.name, ev.input))
            return
        if isinstance(ev, ToolResult):
            self._line(*tool_result_line(ev.name, ev.outcome, ev.is_error, ev.duration_ms, ev.result))
            return
        if isinstance(ev, DraftSaved):
            what = "saved" if ev.created else "already saved (same text)"
            self._line(f"✎ draft {ev.id} {what}: {ev.path} — pending review, nothing was sent",
                       "magenta")
            return
        if isinstance(ev, Error):
            self._line(f"error: {clean_for_terminal(redact(ev.message))}", "bold red", force=True)
            return
        if isinstance(ev, Checked):
            for f in ev.findings[:20]:
                self._line(*finding_line(f), force=isinstance(f, dict) and f.get("severity") == "error")
            if len(ev.findings) > 20:
                self._line(f"⚑ grounding: {len(ev.findings) - 20} more finding(s) in --json and the session log",
                           "bold magenta", force=True)
            if ev.status == "incomplete" and ev.stop_reason in ("draft_not_saved", "lookup_failed", "grounding"):
                self._line(f"incomplete ({clean_for_terminal(str(ev.stop_reason))}): "
                           f"{clean_for_terminal(redact(str(ev.message or '')))}", "bold yellow", force=True)
            return
        if isinstance(ev, TurnFinished):
            self._end_text()
            if not self.live and self.answer_file is not None and ev.answer:
                self.answer_file.write(clean_for_terminal(redact(ev.answer)) + "\n")
                self.answer_file.flush()
            if ev.status == "incomplete" and ev.message:
                self._line(f"stopped ({clean_for_terminal(str(ev.stop_reason))}): "
                           f"{clean_for_terminal(redact(ev.message))}", "bold yellow", force=True)
            return

    def close(self) -> None:
        if self._countdown is not None:
            self._countdown.stop()
            self._countdown = None
        self._end_text()


class _Countdown:
    """``waiting 12 s…``, recomputed at each refresh of the Live that shows it."""

    def __init__(self, wait_s: float):
        import time

        self.clock = time.monotonic
        self.until = self.clock() + wait_s

    def __rich__(self) -> Any:
        from rich.text import Text

        left = max(0.0, self.until - self.clock())
        return Text(f"  waiting {left:.0f} s before retrying…", style="yellow")
