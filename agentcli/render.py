"""Consumers of loop events: the trace renderer and the ``--json`` result builder.

``TraceRenderer`` serves both faces of human output:
- on a terminal (``live=True``): text streams as the model writes it, tool calls appear as they
  start and end, all on one rich console (colour unless ``NO_COLOR``);
- in a pipe (``live=False``): the final answer alone goes to the answer stream (stdout) when the
  question is done; the trace (tool calls, intermediate text, retries, stops) goes to stderr.
Every piece of text from the model, the database or the question is passed through
``clean_for_terminal`` and printed without rich markup, so it cannot inject escape sequences.

``ResultBuilder`` turns the events of one question into the spec's JSON object.
"""

from __future__ import annotations

import json
from typing import IO, Any

from .events import (DraftSaved, Error, Event, ModelRequest, ModelResponse, Question, Retry,
                     TextDelta, ToolCallStarted, ToolResult, TurnFinished)
from .pricing import estimate_cost
from .redact import clean_for_terminal, redact

FOLD_CHARS = 600


def _compact(obj: Any, limit: int = FOLD_CHARS) -> str:
    s = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    s = clean_for_terminal(redact(s))
    if len(s) > limit:
        s = s[:limit] + f"… ({len(s) - limit} more characters)"
    return s


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
                self._line("model: " + _compact(ev.text.strip()), "dim")
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
            self._line(f"→ {clean_for_terminal(ev.name)} {_compact(ev.input, 300)}", "cyan")
            return
        if isinstance(ev, ToolResult):
            if ev.is_error:
                self._line(f"✗ {clean_for_terminal(ev.name)} {ev.outcome} ({ev.duration_ms:.1f} ms): "
                           f"{_compact(ev.result)}", "red")
            else:
                tag = "not found" if ev.outcome == "not_found" else "ok"
                self._line(f"← {clean_for_terminal(ev.name)} {tag} ({ev.duration_ms:.1f} ms): "
                           f"{_compact(ev.result)}", "green")
            return
        if isinstance(ev, DraftSaved):
            what = "saved" if ev.created else "already saved (same text)"
            self._line(f"✎ draft {ev.id} {what}: {ev.path} — pending review, nothing was sent",
                       "magenta")
            return
        if isinstance(ev, Error):
            self._line(f"error: {clean_for_terminal(redact(ev.message))}", "bold red", force=True)
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


class ResultBuilder:
    """Builds the spec's ``--json`` object from one question's events."""

    def __init__(self, *, provider: str, model: str | None, prices: dict[str, Any] | None = None):
        self.provider = provider
        self.model = model
        self.prices = prices
        self.question: str | None = None
        self.customer: str | None = None
        self.session_id: str | None = None
        # Calls in the order the model asked, each filled in by its result. Matched by id and
        # position: ids are the model's text, and a repeated id must not merge two calls.
        self.tool_calls: list[dict[str, Any]] = []
        self._awaiting: dict[str, list[int]] = {}  # id -> indexes of calls still without a result
        self.drafts: list[dict[str, Any]] = []
        self.finished: TurnFinished | None = None
        self.error: Error | None = None

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, Question):
            self.question, self.customer, self.session_id = ev.text, ev.customer, ev.session_id
        elif isinstance(ev, ToolCallStarted):
            self._awaiting.setdefault(ev.id, []).append(len(self.tool_calls))
            self.tool_calls.append({"id": ev.id, "name": ev.name, "input": ev.input})
        elif isinstance(ev, ToolResult):
            rec = {"id": ev.id, "name": ev.name, "input": ev.input, "result": ev.result,
                   "is_error": ev.is_error, "duration_ms": ev.duration_ms, "outcome": ev.outcome}
            waiting = self._awaiting.get(ev.id)
            if waiting:
                self.tool_calls[waiting.pop(0)] = rec
            else:
                self.tool_calls.append(rec)
        elif isinstance(ev, DraftSaved):
            if not any(d["id"] == ev.id for d in self.drafts):
                self.drafts.append({"id": ev.id, "path": ev.path})
        elif isinstance(ev, Error):
            self.error = ev
        elif isinstance(ev, TurnFinished):
            self.finished = ev

    def finished_calls(self) -> list[dict[str, Any]]:
        """The calls that have a result (one cut short by Ctrl-C has none), in the order asked."""
        return [c for c in self.tool_calls if "result" in c]

    def cancelled(self, session_id: str | None = None) -> None:
        self.finished = TurnFinished("error", "cancelled", "", 0, "cancelled by the person")
        self.error = Error("cancelled", "cancelled by the person", 130)

    @property
    def exit_code(self) -> int:
        f = self.finished
        if self.error is not None:
            return self.error.exit_code
        if f is None:
            return 1
        return 0 if f.status == "ok" else 1

    def result(self) -> dict[str, Any]:
        f = self.finished
        usage = (f.usage if f else {}) or {}
        status = f.status if f else "error"
        err = self.error.message if self.error else (f.message if f and f.status != "ok" else None)
        return redact_result({
            "question": self.question,
            "customer": self.customer,
            "answer": f.answer if f else "",
            "status": status,
            "stop_reason": f.stop_reason if f else None,
            "error": err,
            "turns": f.turns if f else 0,
            "tool_calls": self.finished_calls(),
            "drafts": self.drafts,
            "usage": {k: int(usage.get(k, 0)) for k in ("input_tokens", "output_tokens",
                                                         "cache_read_input_tokens",
                                                         "cache_creation_input_tokens")},
            "provider": self.provider,
            "model": self.model,
            "session_id": self.session_id,
            # Beyond the spec's fields (issue 9): the usage priced with agentcli.pricing.
            "estimated_cost_usd": estimate_cost(self.model, usage, self.prices),
        })


def redact_result(d: dict[str, Any]) -> dict[str, Any]:
    from .redact import redact_obj

    return redact_obj(d)
