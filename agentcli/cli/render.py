"""The trace renderer: loop events as a person reads them (``result`` builds the ``--json`` object).

``TraceRenderer`` serves both faces of human output:
- on a terminal (``live=True`` and a terminal console): a spinner while waiting (with the seconds
  waited, and every retry's reason and countdown), the text the model is writing shown as a live
  preview, then each response printed once: in-between text ("I'll look up the order first.")
  dim, the final answer set apart and rendered as Markdown; lookups as one compact line; a saved
  draft once, as the quoted text a customer would read. Lines wrap at word boundaries; ids, order
  codes and paths are never split (a path stands on its own line);
- ``live=True`` on a console that is not a terminal (tests, ``log show`` into a pipe): the text
  streams as it arrives, raw;
- in a pipe (``live=False``): the final answer alone goes to the answer stream (stdout), raw (the
  Markdown as the model wrote it); the trace (tool calls, in-between text, retries, stops) goes
  to stderr, one line per item.
Every piece of text from the model, the database or the question is passed through
``clean_for_terminal`` and printed without rich markup, so it cannot inject escape sequences.
Errors and stops carry the advice for the command they are shown in (``agentcli.cli.advice``).

``tool_call_line`` and ``tool_result_line`` are the one place the "→ name input" and
"← name ok (ms): result" lines are built: the live trace, the REPL, ``drafts show`` and the log
replay use them.
"""

from __future__ import annotations

import asyncio
import time
from typing import IO, Any

from rich.cells import cell_len
from rich.text import Text

from ..events import (
    DraftSaved,
    Error,
    Event,
    ModelRequest,
    ModelResponse,
    Question,
    Repair,
    Retry,
    TextDelta,
    ToolCallStarted,
    ToolResult,
    TurnFinished,
)
from ..redact import clean_for_terminal
from .advice import advise
from .layout import plain_paragraph, print_lines, wrapped, write_line
from .trace_lines import (
    DRAFT_TOOL,
    _word,
    checks_line,
    compact,
    draft_block,
    finding_line,
    flat,
    repair_lines,
    tool_call_line,
    tool_result_head,
    tool_result_line,
)


def _rich_live() -> Any:
    """rich's ``live`` and ``spinner`` modules, imported when something is first drawn live: with
    the ``rich.table`` they bring, they were a twentieth of a cold ``ask`` that draws nothing
    live (a pipe, or every step shorter than ``SPIN_DELAY_S``)."""
    from rich import live, spinner

    return live, spinner


class _Waiting:
    """A spinner whose text says how long it has waited (or how long until the retry). Built for
    every model call and tool call, drawn only by a Live: its rich ``Spinner`` comes then."""

    def __init__(self, text: str, *, until: float | None = None):
        self.text, self.until, self.t0 = text, until, time.monotonic()
        self._spinner: Any = None

    @property
    def spinner(self) -> Any:
        if self._spinner is None:
            self._spinner = _rich_live()[1].Spinner("dots", text=self.text, style="cyan")
        return self._spinner

    def __rich__(self) -> Any:
        now = time.monotonic()
        if self.until is not None:
            self.spinner.update(text=self.text.format(left=max(0.0, self.until - now)))
        elif now - self.t0 >= 2:
            self.spinner.update(text=f"{self.text} {now - self.t0:.0f} s")
        return self.spinner


SPIN_DELAY_S = 0.12  # a wait shorter than this shows no spinner (nobody sees it anyway)


class _Tail:
    """The last lines of the text being streamed: a live preview that fits the screen."""

    def __init__(self, renderer: "TraceRenderer"):
        self.r = renderer

    def __rich__(self) -> Any:
        height = max(3, self.r.console.height - 2)
        text = self.r._text[-20000:]
        # up to the last whitespace only: a secret is redacted once it is whole, never shown half
        text = text[:max(text.rfind(" "), text.rfind("\n"), text.rfind("\t")) + 1]
        lines = clean_for_terminal(text).splitlines()[-height:]
        return Text("\n".join(lines), style="dim")


class TraceRenderer:
    def __init__(self, console: Any, *, answer_file: IO[str] | None = None, live: bool = True,
                 quiet: bool = False, err_console: Any = None, command: str = "ask",
                 spinner: bool = False):
        self.console = console          # trace (and, when live, the streamed text)
        self.err = err_console or console
        self.answer_file = answer_file  # where the final answer goes when not live
        self.live = live
        self.quiet = quiet
        self.command = command          # for advice: "ask", "chat", "batch", "eval"
        self.terminal = live and bool(getattr(console, "is_terminal", False))
        self.spinner = spinner and self.terminal
        self._mid_line = False
        self._turn_text: list[str] = []
        self._held = ""  # streamed text not yet shown: the tail after the last whitespace
        self._text = ""  # this response's text so far (the terminal's preview)
        self._blocks = 0  # text blocks printed in this question: a blank line between them
        self._running = 0  # tool calls started and not finished
        self._live: Any = None  # rich Live: a spinner or the preview
        self._showing: Any = None  # what the Live shows, or will once its short delay is over
        self._pending: Any = None  # the event loop's handle of that delayed start
        self._draft_text: dict[str, Any] = {}  # draft id -> the text its call saved
        self._countdown: Any = None  # the Live counting a retry wait down, while it runs

    # -- helpers ------------------------------------------------------------------------
    def _print(self, renderable: Any, **kw: Any) -> None:
        self.stop_spinner()
        self._end_text()
        self.console.print(renderable, highlight=False, **kw)

    def _line(self, text: str, style: str | None = None, *, force: bool = False,
              no_wrap: bool = False) -> None:
        if self.quiet and not force:
            return

        if not no_wrap:  # written as rich prints it (wrapped at spaces on a terminal), at a tenth of the cost
            self.stop_spinner()
            self._end_text()
            if write_line(self.console, text, style or "", wrap=self.terminal):
                return
        if not self.terminal:  # a pipe or a log: one line per item, never wrapped
            self._print(Text(text, style=style or ""), soft_wrap=True)
        elif no_wrap:  # a path: whole when it fits, else broken after a "/", never wider
            self.stop_spinner()
            self._end_text()
            print_lines(self.console, wrapped(self.console, Text(text, style=style or ""),
                                              self.console.width, 4))
        else:  # words wrap at spaces; an id or code is one word and is never split
            self._print(Text(text, style=style or "", overflow="ignore"), soft_wrap=self._fits(text))

    def _fits(self, text: str) -> bool:
        """A line that needs no wrapping (one line, no trailing space, within the width): printed
        with ``soft_wrap`` it comes out byte for byte the same, without rich's wrapping work (a
        third of a print; checked over 220,000 lines, widths 12-160, every color system)."""
        return "\n" not in text and text == text.rstrip() and cell_len(text) <= self.console.width

    def _show(self, text: str) -> None:
        """Write model text live, redacted and cleaned. A secret is one run of non-space
        characters, so text is held back until the next whitespace before it is redacted."""
        text = self._held + text
        cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t")) + 1
        self._held = text[cut:]
        self._emit(text[:cut])

    def _emit(self, text: str) -> None:
        txt = clean_for_terminal(text)
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

    def _spin(self, renderable: Any, *, force: bool = False) -> None:
        """Show ``renderable`` live (a spinner, a countdown, the text preview). Started after
        ``SPIN_DELAY_S`` unless ``force``: a step that ends sooner never starts a Live (and its
        refresh thread), which is most steps of a fast model and every lookup."""
        if not (self.spinner or force or isinstance(renderable, _Tail)):
            return
        self.stop_spinner()
        self._showing = renderable
        loop = None
        if not force:

            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no event loop (a replay): show it now
                loop = None
        if loop is None:
            self._start_live(renderable)
        else:
            self._pending = loop.call_later(SPIN_DELAY_S, self._start_live, renderable)

    def _start_live(self, renderable: Any) -> None:
        self._pending = None
        try:
            self._live = _rich_live()[0].Live(renderable, console=self.console, transient=True,
                                              refresh_per_second=8, redirect_stdout=False,
                                              redirect_stderr=False)
            self._live.start()
        except Exception:  # noqa: BLE001 - the display must never break a turn
            self._live = None

    def stop_spinner(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        self._showing = None
        live, self._live = self._live, None
        self._countdown = None
        if live is not None:
            try:
                live.stop()
            except Exception:  # noqa: BLE001
                pass

    def _block(self, text: str, *, final: bool) -> None:
        """One response's text on a terminal, printed once it is complete."""

        text = clean_for_terminal(text).strip()
        if not text or (self.quiet and not final):  # -q: the answer only, not "I'll look it up"
            return
        if self._blocks:
            self._print_line("")
        self._blocks += 1
        if final:
            shown = self._markdown(text)
            if shown is not None:
                self.console.file.write(shown)
                self.console.file.flush()
            else:  # Markdown that renders to (almost) nothing, e.g. nested 5000 deep: as text
                self._print(Text(text), soft_wrap=self._fits(text))
        else:
            self._print_line(text, "dim")

    def _print_line(self, text: str, style: str = "") -> None:
        """``text`` printed as one item: written directly when it is one line that fits, else
        through rich (wrapped at words on a terminal)."""
        self.stop_spinner()
        self._end_text()
        if not write_line(self.console, text, style, wrap=True):
            self._print(Text(text, style=style), soft_wrap=self._fits(text))

    def _markdown(self, text: str) -> str | None:
        """``text`` rendered as Markdown for this console, or None when the rendering loses
        most of its words (markdown-it drops what nests deeper than its limit) or fails."""
        plain = plain_paragraph(self.console, text)
        if plain is not None:  # one plain paragraph: what rich would print, without its parse
            return plain
        from rich.markdown import Markdown

        try:
            with self.console.capture() as cap:
                # hyperlinks=False: a link shows its address, never a hidden escape sequence
                self.console.print(Markdown(text, hyperlinks=False), soft_wrap=False)
            out = cap.get()
        except Exception:  # noqa: BLE001 - RecursionError and the like: plain text instead
            return None
        words = sum(map(str.isalnum, text))  # characters, counted in C
        kept = sum(map(str.isalnum, clean_for_terminal(out)))
        return out if kept * 2 >= words else None

    # -- the consumer -------------------------------------------------------------------
    def __call__(self, ev: Event) -> None:
        if isinstance(ev, Question):
            self._blocks = 0
            return
        if isinstance(ev, ModelRequest):
            self._turn_text, self._text, self._running = [], "", 0
            self._spin(_Waiting("waiting for the model…"))
            return
        if isinstance(ev, TextDelta):
            self._turn_text.append(ev.text)
            if self.terminal:
                if not isinstance(self._showing, _Tail):
                    self._text = "".join(self._turn_text[:-1])
                    self._spin(_Tail(self))
                self._text += ev.text
            elif self.live:
                self._show(ev.text)
            return
        if isinstance(ev, ModelResponse):
            self.stop_spinner()
            if self.terminal:
                final = not ev.tool_calls and ev.stop_reason in ("end_turn", "stop_sequence")
                self._block(ev.text, final=final)
            elif self.live:
                if not self._turn_text and ev.text:
                    self._emit(ev.text)  # --no-stream: the text arrives whole
                if ev.text:
                    self._end_text()
            elif ev.tool_calls and ev.text.strip():
                self._line("model: " + compact(ev.text.strip()), "dim")
            return
        if isinstance(ev, Retry):
            if ev.waiting:  # nothing was sent: the rate limit asks to wait first
                self._line(f"⧗ model call {ev.turn}: {flat(ev.reason)}; sending in "
                           f"{ev.wait_s:.1f} s", "yellow")
            else:
                tried = ev.attempt - 1  # ``attempt`` is the try about to be made
                which = f"model call {ev.turn} failed" + (f" (try {tried})" if tried > 1 else "")
                self._line(f"↻ {which}: {flat(ev.reason)}; retrying in "
                           f"{ev.wait_s:.1f} s" + (f" (try {ev.attempt})" if tried >= 1 else ""),
                           "yellow")
            if round(ev.wait_s, 1) >= 1 and not self.quiet and getattr(self.console, "is_terminal", False):
                # the wait counted down, spinner or not (a rate limit's retry-after can be long)
                what = "for the rate limit" if ev.waiting else "before retrying"
                self._spin(_Waiting("waiting {left:.0f} s " + what + "…",
                                    until=time.monotonic() + ev.wait_s), force=True)
                self._countdown = self._live
            elif ev.wait_s > 0:
                self._spin(_Waiting("retrying shortly…"))
            return
        if isinstance(ev, ToolCallStarted):
            self._running += 1
            if ev.name == DRAFT_TOOL:  # its text is shown once, quoted, when it is saved
                code = ev.input.get("order_code") if isinstance(ev.input, dict) else None
                self._line(f"→ {DRAFT_TOOL}" + (f" (order {_word(code, 40)})" if code else ""), "cyan")
            else:
                self._line(*tool_call_line(ev.name, ev.input))
            self._spin_tools()
            return
        if isinstance(ev, ToolResult):
            self._running = max(0, self._running - 1)
            if ev.name == DRAFT_TOOL and not ev.is_error:
                if getattr(ev, "repeated", False) is True:  # answered from the ticket: no DraftSaved
                    head, style = tool_result_head(ev.name, ev.outcome, False, ev.duration_ms, True)
                    did = ev.result.get("draft_id") if isinstance(ev.result, dict) else None
                    self._line(head + (f": draft {_word(did, 40)} is already saved" if did else ""), style)
                    self._spin_tools()
                    return
                self._note_draft_text(ev)
                return  # shown once, with its text, by DraftSaved (next)
            self._line(*tool_result_line(ev.name, ev.outcome, ev.is_error, ev.duration_ms, ev.result,
                                         getattr(ev, "repeated", False) is True))
            if ev.name == DRAFT_TOOL:
                self._unsaved(ev)
            self._spin_tools()
            return
        if isinstance(ev, DraftSaved):
            self._draft(ev)
            self._spin_tools()
            return
        if isinstance(ev, Error):
            msg = advise(clean_for_terminal(ev.message), ev.kind, self.command)
            self._line(f"agentcli: {' '.join(msg.split())}", "bold red", force=True)
            return
        if isinstance(ev, Repair):  # findings sent back to the model (the loop goes on)
            for text, style in repair_lines(ev.findings, ev.draft):
                self._line(text, style)
            return
        if getattr(ev, "type", None) == "checked":  # grounding findings (agentcli.checks.grounding)
            self._checked(ev)
            return
        if isinstance(ev, TurnFinished):
            self.stop_spinner()
            self._end_text()
            if not self.live and self.answer_file is not None and ev.answer:
                self.answer_file.write(clean_for_terminal(ev.answer) + "\n")
                self.answer_file.flush()
            if ev.status == "incomplete" and ev.message:
                msg = advise(clean_for_terminal(ev.message), ev.stop_reason, self.command)
                self._line(f"agentcli: stopped ({flat(ev.stop_reason)}): "
                           f"{' '.join(msg.split())}", "bold yellow", force=True)
            return

    def _checked(self, ev: Any) -> None:
        line = checks_line(ev)
        if line is not None:
            self._line(*line)
        findings = list(getattr(ev, "findings", None) or [])
        for f in findings[:20]:
            self._line(*finding_line(f), force=isinstance(f, dict) and f.get("severity") == "error")
        if len(findings) > 20:
            self._line(f"⚑ grounding: {len(findings) - 20} more finding(s) in --json and the "
                       "session log", "bold magenta", force=True)
        stop = getattr(ev, "stop_reason", None)
        if getattr(ev, "status", None) != "incomplete":
            return
        if stop in ("grounding", "draft_not_saved"):  # the finding was just shown: not twice
            n = sum(1 for f in findings if isinstance(f, dict) and f.get("severity") == "error")
            self._line(f"incomplete ({flat(stop)}): the error-level finding"
                       f"{'s' if n != 1 else ''} above; a person must look", "bold yellow",
                       force=True)
        elif stop in ("lookup_failed", "no_answer"):
            msg = advise(clean_for_terminal(str(getattr(ev, "message", "") or "")), stop,
                         self.command)
            self._line(f"incomplete ({flat(stop)}): {msg}", "bold yellow",
                       force=True)

    def _spin_tools(self) -> None:
        if self._running:
            n = self._running
            self._spin(_Waiting(f"running {n} tool call{'s' if n > 1 else ''}…"))

    def _draft(self, ev: DraftSaved) -> None:
        if self.quiet:
            return

        what = "saved" if ev.created else "already saved (same text)"
        self._line(f"✎ draft {flat(ev.id)} {what}: pending review, nothing was "
                   "sent", "magenta")
        self._line(f"  {flat(ev.path)}", "magenta", no_wrap=True)
        text = self._draft_text.pop(ev.id, None)
        if text is not None:
            width = self.console.width if self.terminal else None
            self._print(Text("\n".join(draft_block(text, width))), soft_wrap=True)

    def _unsaved(self, ev: ToolResult) -> None:
        """A reply that could not be saved is not lost: shown here (it is in the session log)."""
        text = ev.input.get("text") if isinstance(ev.input, dict) else None
        if self.quiet or not isinstance(text, str) or not text.strip():
            return
        self._line("  the reply that was not saved (also in the session log: agentcli log show "
                   "last):", "yellow")
        width = self.console.width if self.terminal else None
        self._print(Text("\n".join(draft_block(text, width))), soft_wrap=True)

    def _note_draft_text(self, ev: ToolResult) -> None:
        """Remember a draft call's text (by the draft id in its result) for its DraftSaved."""
        if isinstance(ev.input, dict) and isinstance(ev.result, dict) \
                and isinstance(ev.result.get("draft_id"), str):
            self._draft_text[ev.result["draft_id"]] = ev.input.get("text")

    def close(self) -> None:
        self.stop_spinner()
        self._end_text()
