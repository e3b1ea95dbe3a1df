"""The REPL: one ticket at a time, on the same loop and events as ``ask``.

``Repl`` only feeds ``App.run(conv, question, [renderer])`` and handles slash commands between
questions. It has two faces:

- ``run()``: interactive, on a prompt_toolkit ``PromptSession`` (history file, up-arrow recall,
  auto-suggest, slash-command completion, bracketed paste, Esc-Enter for a newline). Ctrl-C
  while a turn runs cancels that turn only (the turn is an asyncio task, cancelled from a
  SIGINT handler); Ctrl-C at the prompt clears the line; Ctrl-D or ``/exit`` leaves.
- ``run_lines(fd)``: standard input is not a terminal; one question (or slash command) per line,
  turns of one conversation, no prompt_toolkit at all, 0 at end of input.

The session and consoles are injected, so tests drive the REPL with prompt_toolkit's
``create_pipe_input`` / ``DummyOutput`` and a rich ``Console`` writing to a buffer.
prompt_toolkit is imported only inside the functions that use it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from pathlib import Path
from typing import IO, Any

from .cli_common import check_question
from .errors import AgentcliError, UsageError
from .events import DraftSaved, Event, ModelRequest, Retry, ToolCallStarted, ToolResult, Usage
from .redact import clean_for_terminal, redact
from .render import TraceRenderer, _compact

COMMANDS: dict[str, str] = {
    "/help": "this list",
    "/new": "start a new ticket (fresh history, new session id)",
    "/customer": "/customer EMAIL scopes lookups to that customer; /customer alone clears it",
    "/model": "/model NAME switches the model (from the next question on)",
    "/drafts": "the drafts saved in this ticket, with their paths",
    "/usage": "tokens in/out and cache reads, for this ticket and the whole session",
    "/history": "the tool calls of this ticket",
    "/exit": "leave (Ctrl-D does the same)",
}
ALIASES = {"/quit": "/exit", "/q": "/exit", "/?": "/help", "/h": "/help"}
KEYS_HELP = ("Enter sends · Esc-Enter (Alt-Enter) adds a line · a pasted email stays one question · "
             "Ctrl-C cancels a running answer (at the prompt: clears the line) · Ctrl-D leaves · "
             "start a line with // to send one that begins with /")
FOLD_LINES = 14
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+$")


def _clean(text: Any) -> str:
    return clean_for_terminal(redact(str(text)))


def _pretty_lines(obj: Any, width: int = 600) -> list[str]:
    s = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False, indent=2)
    out = []
    for line in _clean(s).split("\n"):
        out.append(line if len(line) <= width else line[:width] + f"… ({len(line) - width} more characters)")
    return out


# --------------------------------------------------------------------------- display

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

        name, ms = _clean(ev.name), f"{ev.duration_ms:.1f} ms"
        if ev.is_error:
            self._line(f"✗ {name} {ev.outcome} ({ms}): {_compact(ev.result)}", "red")
            return
        tag = "not found" if ev.outcome == "not_found" else "ok"
        head = f"← {name} {tag} ({ms})"
        compact = _compact(ev.result)
        if len(head) + 2 + len(compact) <= max(40, self.console.width):
            self._line(f"{head}: {compact}", "green")
            return
        self._line(head, "green")
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


# --------------------------------------------------------------------------- prompt_toolkit parts

def history_file() -> Path:
    """The REPL's input history: ``state_dir() / 'history'`` (owner-only)."""
    from .config import state_dir

    return state_dir() / "history"


# Questions kept in the history file: enough to recall a week of tickets, and a bound on how
# much customer text sits on disk and is read at every REPL start.
HISTORY_LIMIT = 1000
# prompt_toolkit's FileHistory format: each entry is "\n# <time>\n" then its lines, each "+"-prefixed,
# so a line starting with "# " always opens an entry.
_ENTRY_START = re.compile(rb"(?:^|\n)# [^\n]*\n")


def trim_history_file(path: Path, keep: int = HISTORY_LIMIT) -> int:
    """Drop all but the newest ``keep`` entries of the history file; returns how many were dropped.

    The file is replaced atomically (owner-only). An entry another REPL appends between the read
    and the replace can be lost: it is input history, and the next start trims again.
    """
    keep = max(0, keep)
    path = path.resolve()  # a symlinked history file stays a symlink: trim its target
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    starts = [m.start() for m in _ENTRY_START.finditer(data)]
    if len(starts) <= keep:
        return 0
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data[starts[-keep]:] if keep > 0 else b"")
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        return 0
    return len(starts) - keep


def _redacting_file_history(path: Path) -> Any:
    from prompt_toolkit.history import FileHistory

    class RedactingFileHistory(FileHistory):
        """A history file that never keeps a secret someone pasted by mistake."""

        def store_string(self, string: str) -> None:
            super().store_string(redact(string))

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    else:
        trim_history_file(path)
    return RedactingFileHistory(str(path))


def _completer() -> Any:
    from prompt_toolkit.completion import Completer, Completion

    class SlashCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Any:
            text = document.text_before_cursor
            if not text.startswith("/") or " " in text or "\n" in text:
                return
            for name, meta in COMMANDS.items():
                if name.startswith(text.lower()):
                    yield Completion(name, start_position=-len(text), display_meta=meta)

    return SlashCompleter()


def _key_bindings() -> Any:
    from prompt_toolkit.key_binding import KeyBindings

    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _newline(event: Any) -> None:
        """Esc-Enter / Alt-Enter: a newline inside the question (Enter sends it)."""
        event.current_buffer.insert_text("\n")

    return kb


def build_session(*, input: Any = None, output: Any = None, history_path: Path | None = None,
                  history: Any = None) -> Any:
    """The REPL's ``PromptSession``: persistent history, auto-suggest, completion, paste."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
    from prompt_toolkit.history import InMemoryHistory

    if history is None:
        history = _redacting_file_history(history_path) if history_path else InMemoryHistory()
    return PromptSession(
        history=history, auto_suggest=AutoSuggestFromHistory(), completer=_completer(),
        complete_while_typing=True, key_bindings=_key_bindings(), multiline=False,
        prompt_continuation=lambda width, line_number, wrap_count: "… ".rjust(width),
        enable_suspend=True, input=input, output=output)


# --------------------------------------------------------------------------- reading lines

class LineReader:
    """Lines from a file descriptor without blocking the event loop (pipes and terminals).

    A regular file cannot be watched by the event loop; it is read directly (never blocks long).
    """

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = b""
        self.eof = False

    async def _read(self) -> bytes:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        try:
            loop.add_reader(self.fd, lambda: fut.done() or fut.set_result(None))
        except (OSError, ValueError, NotImplementedError):
            return os.read(self.fd, 65536)
        try:
            await fut
        finally:
            loop.remove_reader(self.fd)
        return os.read(self.fd, 65536)

    async def readline(self) -> str | None:
        while b"\n" not in self.buf and not self.eof:
            data = await self._read()
            if data:
                self.buf += data
            else:
                self.eof = True
        if not self.buf:
            return None
        line, sep, rest = self.buf.partition(b"\n")
        self.buf = rest
        return line.decode("utf-8", "replace").rstrip("\r")


# --------------------------------------------------------------------------- the REPL

class Repl:
    """One support agent's session: ticket after ticket, on one ``App``."""

    def __init__(self, app: Any, *, console: Any, err_console: Any = None, session: Any = None,
                 interactive: bool = True, live: bool = True, answer_file: IO[str] | None = None,
                 json_out: bool = False, quiet: bool | None = None, spinner: bool | None = None):
        self.app = app
        self.console = console                  # the person's screen (or stdout in a pipe)
        self.err = err_console or console       # trace when not live; notes in --json mode
        self.session = session                  # PromptSession (interactive only)
        self.interactive = interactive
        self.live = live
        self.answer_file = answer_file
        self.json_out = json_out
        self.quiet = app.settings.quiet if quiet is None else quiet
        self.spinner = bool(getattr(console, "is_terminal", False)) if spinner is None else spinner
        self.conv = app.conversation()
        self.past_usage = Usage()               # tickets closed with /new
        self.ticket_no = 1
        self._task: asyncio.Task | None = None
        self._confirm_session: Any = None

    # -- output helpers ----------------------------------------------------------------
    @property
    def info(self) -> Any:
        """Where command output, notes and the banner go."""
        return self.err if self.json_out else self.console

    def say(self, text: str, style: str | None = None) -> None:
        from rich.text import Text

        self.info.print(Text(text, style=style or ""), highlight=False, soft_wrap=True)

    def error_line(self, text: str) -> None:
        self.say(f"error: {_clean(text)}", "bold red")

    # -- banner ------------------------------------------------------------------------
    def banner(self) -> None:
        from rich.table import Table
        from rich.text import Text

        from . import __version__

        s, p = self.app.settings, self.app.provider
        self.say(f"agentcli {__version__} · chat — one ticket at a time; follow-up questions keep "
                 "the context", "bold")
        t = Table(show_header=False, box=None, pad_edge=False, padding=(0, 2, 0, 0))
        t.add_column(style="bold")
        t.add_column()
        t.add_row("provider", Text(_clean(p.name)))
        t.add_row("model", Text(_clean(p.model)))
        t.add_row("database", Text(_clean(self.app.db_description)))
        t.add_row("drafts", Text(_clean(os.path.abspath(s.drafts_dir))))
        t.add_row("customer", Text(_clean(self.conv.ctx.customer) if self.conv.ctx.customer
                                   else "none: every customer's orders are visible (/customer EMAIL)"))
        t.add_row("ticket", Text(self.conv.session_id))
        self.info.print(t, highlight=False)
        if p.name == "offline":
            from .app import OFFLINE_NOTICE

            self.say(OFFLINE_NOTICE.removeprefix("agentcli: ").replace("using", "Using", 1), "yellow")
        self.say("/help for commands · Esc-Enter adds a line · Ctrl-C cancels an answer · "
                 "Ctrl-D or /exit leaves", "dim")

    def prompt_message(self) -> str:
        c = self.conv.ctx.customer
        return f"{_clean(c)} › " if c else "› "

    # -- the two faces -------------------------------------------------------------------
    async def run(self) -> int:
        """Interactive: prompt, answer, repeat, until Ctrl-D or /exit. Returns the exit code."""
        if self.session is None:
            self.session = build_session(history_path=history_file())
        self.banner()
        while True:
            try:
                text = await self.session.prompt_async(self.prompt_message())
            except KeyboardInterrupt:
                continue  # Ctrl-C at the prompt: the line is dropped, a fresh prompt follows
            except EOFError:
                break
            if not await self.handle(text):
                break
        return 0

    async def run_lines(self, fd: int) -> int:
        """Standard input is not a terminal: one question or slash command per line."""
        reader = LineReader(fd)
        while True:
            line = await reader.readline()
            if line is None:
                return 0
            if not await self.handle(line):
                return 0

    # -- one input ------------------------------------------------------------------------
    async def handle(self, text: str) -> bool:
        """Act on one input; False means leave."""
        stripped = text.strip()
        if not stripped:
            return True
        if stripped.startswith("/") and not stripped.startswith("//"):
            return await self.command(stripped)
        if stripped.startswith("//"):
            text = text.lstrip()[1:]
        try:
            question = check_question(text)
        except UsageError as e:
            self.error_line(e.message)
            return True
        await self.ask(question)
        return True

    async def ask(self, question: str) -> None:
        """One question, continued past the turn limit if the person wants."""
        t0 = time.monotonic()
        renderer = self._renderer()
        consumers = [renderer] if renderer is not None else []
        builder = await self.run_turn(question, consumers)
        rounds = [builder] if builder is not None else []
        while builder is not None and builder.finished is not None \
                and builder.finished.stop_reason == "turn_limit" and self.interactive:
            self._so_far(rounds)
            n = self.app.settings.max_turns
            if not await self.confirm(f"continue for another {n} model call{'s' if n > 1 else ''}? [y/N] "):
                self.say("stopped here; ask a follow-up question, or /new for the next ticket", "dim")
                break
            builder = await self.run_turn(question, consumers, resume=True, max_turns=n)
            if builder is not None:
                rounds.append(builder)
        if renderer is not None:
            renderer.close()
            if renderer.failed:
                self.say("(part of the trace could not be shown; the session log has all of it)", "dim")
        if self.json_out:
            for b in rounds:
                self._write_answer(json.dumps(b.result(), ensure_ascii=False))
        elif rounds and self.live and not self.quiet:
            turns = sum(b.finished.turns for b in rounds if b.finished)
            tools = sum(len(b.tool_calls) for b in rounds)
            self.say(f"· {turns} model call{'s' if turns != 1 else ''} · {tools} tool "
                     f"call{'s' if tools != 1 else ''} · {time.monotonic() - t0:.1f} s", "dim")

    def _renderer(self) -> ReplRenderer | None:
        if self.json_out:
            return None
        if self.live:
            return ReplRenderer(self.console, spinner=self.spinner, live=True, quiet=self.quiet)
        return ReplRenderer(self.err, live=False, quiet=self.quiet, answer_file=self.answer_file)

    def _write_answer(self, line: str) -> None:
        f = self.answer_file
        if f is None:
            self.console.file.write(line + "\n")
            self.console.file.flush()
        else:
            f.write(line + "\n")
            f.flush()

    def _so_far(self, rounds: list[Any]) -> None:
        calls = [c for b in rounds for c in b.finished_calls()]
        drafts = [d for b in rounds for d in b.drafts]
        if not calls:
            self.say("so far: no tool calls", "yellow")
            return
        counts: dict[str, int] = {}
        for c in calls:
            counts[c["name"]] = counts.get(c["name"], 0) + 1
        failed = sum(1 for c in calls if c["is_error"])
        what = ", ".join(f"{_clean(n)} ×{k}" for n, k in counts.items())
        msg = f"so far: {len(calls)} tool call{'s' if len(calls) > 1 else ''} ({what})"
        if failed:
            msg += f", {failed} failed"
        for d in drafts:
            msg += f"; draft {_clean(d['id'])} saved: {_clean(d['path'])}"
        self.say(msg, "yellow")

    async def confirm(self, message: str) -> bool:
        """A yes/no question (default no); never asked when input is not a terminal."""
        if not self.interactive or self.session is None:
            return False
        from prompt_toolkit import PromptSession

        if self._confirm_session is None:
            self._confirm_session = PromptSession(input=self.session.app.input,
                                                  output=self.session.app.output)
        try:
            answer = await self._confirm_session.prompt_async(message)
        except (KeyboardInterrupt, EOFError):
            return False
        return answer.strip().lower() in ("y", "yes")

    # -- running a turn as a cancellable task --------------------------------------------
    def cancel_turn(self) -> bool:
        """Cancel the running turn (what Ctrl-C does); False when none is running."""
        task = self._task
        if task is None or task.done():
            return False
        task.cancel()
        return True

    def _install_sigint(self) -> tuple[bool, Any]:
        if not self.interactive:
            return False, None
        try:
            previous = signal.getsignal(signal.SIGINT)
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self.cancel_turn)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread
            return False, None
        return True, previous

    def _remove_sigint(self, installed: bool, previous: Any) -> None:
        if not installed:
            return
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        if previous is not None:
            signal.signal(signal.SIGINT, previous)

    async def run_turn(self, question: str, consumers: list[Any], *, resume: bool = False,
                       max_turns: int | None = None) -> Any:
        """Run ``App.run`` as a task; Ctrl-C cancels it. Returns the ResultBuilder, or None."""
        task = asyncio.create_task(self.app.run(self.conv, question, consumers, resume=resume,
                                                max_turns=max_turns))
        self._task = task
        installed, previous = self._install_sigint()
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:  # the REPL itself is being cancelled: take the turn along
            task.cancel()
            await asyncio.wait([task])
            raise
        finally:
            self._remove_sigint(installed, previous)
            self._task = None
            for c in consumers:
                stop = getattr(c, "stop_spinner", None)
                if stop:
                    stop()
        if task.cancelled() or task.exception() is not None:
            for c in consumers:
                close = getattr(c, "close", None)
                if close:
                    close()
        if task.cancelled():
            self.say("✗ cancelled: this question was stopped (no tool call left unanswered); the "
                     "ticket goes on — ask again, or /new", "yellow")
            return None
        exc = task.exception()
        if exc is not None:
            self._crashed(exc)  # App.run has already closed the loop and repaired the history
            return None
        return task.result()

    def _crashed(self, exc: BaseException) -> None:
        """A turn failed outside the loop's own error handling: one line, and go on."""
        if isinstance(exc, AgentcliError):
            self.error_line(exc.message)
            detail = exc.message
        else:
            self.error_line(f"this question failed unexpectedly ({type(exc).__name__}); the "
                            "REPL goes on — if the next question fails too, start a new ticket with /new")
            detail = f"{type(exc).__name__}: {exc}"
        try:
            self.app.log_for(self.conv).record({"type": "error", "kind": "crash",
                                                "session_id": self.conv.session_id,
                                                "message": detail[:500]})
        except Exception:  # noqa: BLE001
            pass

    # -- slash commands -----------------------------------------------------------------
    async def command(self, line: str) -> bool:
        name, _, arg = line.partition(" ")
        name = ALIASES.get(name.lower(), name.lower())
        arg = arg.strip()
        if name == "/exit":
            return False
        handler = {
            "/help": self.cmd_help, "/new": self.cmd_new, "/customer": self.cmd_customer,
            "/model": self.cmd_model, "/drafts": self.cmd_drafts, "/usage": self.cmd_usage,
            "/history": self.cmd_history,
        }.get(name)
        if handler is None:
            self.say(f"unknown command {_clean(name)}; commands: {' '.join(COMMANDS)}", "yellow")
            return True
        handler(arg)
        return True

    def cmd_help(self, arg: str) -> None:
        width = max(len(n) for n in COMMANDS)
        for n, desc in COMMANDS.items():
            self.say(f"{n.ljust(width)}  {desc}")
        self.say(KEYS_HELP, "dim")

    def cmd_new(self, arg: str) -> None:
        self.past_usage.add(self.conv.usage)
        self.conv.reset()
        self.ticket_no += 1
        c = self.conv.ctx.customer
        scope = f"customer scope still {_clean(c)} (/customer to change or clear)" if c \
            else "no customer scope"
        self.say(f"new ticket #{self.ticket_no}: session {self.conv.session_id}; {scope}", "bold")

    def cmd_customer(self, arg: str) -> None:
        ctx = self.conv.ctx
        if not arg:
            if ctx.customer is None:
                self.say("no customer scope: every customer's orders are visible")
                return
            ctx.customer = None
            self._note({"type": "customer_changed", "customer": None})
            self.say("customer scope cleared: every customer's orders are visible")
            return
        if not _EMAIL_RE.match(arg):
            self.say(f"not an email address: {_clean(arg)!r}; usage: /customer EMAIL, or "
                     "/customer alone to clear", "yellow")
            return
        ctx.customer = arg
        self._note({"type": "customer_changed", "customer": arg})
        msg = f"customer scope: {_clean(arg)}; other customers' orders now read as not found"
        if self.conv.history:
            msg += " (this ticket's earlier answers stay in its context; /new starts a clean one)"
        self.say(msg)

    def cmd_model(self, arg: str) -> None:
        p = self.app.provider
        if not arg:
            self.say(f"model: {_clean(p.model)} ({_clean(p.name)}); /model NAME to switch")
            return
        if p.name == "offline":
            self.say("the offline workflow has no model to switch; set ANTHROPIC_API_KEY (or use "
                     "--provider openai) to use a model", "yellow")
            return
        if any(ch.isspace() for ch in arg) or len(arg) > 200:
            self.say(f"not a model name: {_clean(arg)!r}", "yellow")
            return
        p.model = arg
        self.app.settings.model = arg
        self.conv.ctx.model = arg
        self._note({"type": "model_changed", "model": arg})
        self.say(f"model: {_clean(arg)} from the next question on")

    def cmd_drafts(self, arg: str) -> None:
        drafts = list(reversed(self.conv.ctx.saved_drafts))
        if not drafts:
            self.say("no drafts saved in this ticket yet")
            return
        self.say("drafts of this ticket (latest first), all waiting for a person's review:")
        for d in drafts[:20]:
            status = "?"
            try:
                status = self.app.drafts.get(d["id"]).meta.get("status", "?")
            except Exception:  # noqa: BLE001 - a deleted or damaged file: still list it
                status = "missing"
            self.say(f"  {_clean(d['id'])}  {_clean(status)}  {_clean(d.get('order_code') or '—')}  "
                     f"{_clean(d['path'])}")
        if len(drafts) > 20:
            self.say(f"  … {len(drafts) - 20} older (agentcli drafts list)", "dim")

    def cmd_usage(self, arg: str) -> None:
        from rich.table import Table

        ticket = self.conv.usage
        session = Usage()
        session.add(self.past_usage)
        session.add(ticket)
        t = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0))
        for col in ("tokens", "in", "out", "cache reads", "cache writes"):
            t.add_column(col, justify="left" if col == "tokens" else "right")
        for label, u in (("this ticket", ticket), (f"session ({self.ticket_no} ticket"
                                                     f"{'s' if self.ticket_no > 1 else ''})", session)):
            t.add_row(label, f"{u.input_tokens:,}", f"{u.output_tokens:,}",
                      f"{u.cache_read_input_tokens:,}", f"{u.cache_creation_input_tokens:,}")
        self.info.print(t, highlight=False)

    def cmd_history(self, arg: str) -> None:
        log = self.conv.tool_log
        if not log:
            self.say("no tool calls in this ticket yet")
            return
        for i, c in enumerate(log, 1):
            tag = c.get("outcome") or ("error" if c["is_error"] else "ok")
            self.say(f"{i:>3}. {_clean(c['name'])} {_compact(c['input'], 200)} → {_clean(tag)} "
                     f"({c['duration_ms']:.1f} ms)", "red" if c["is_error"] else None)
            self.say(f"     {_compact(c['result'], 300)}", "dim")

    def _note(self, record: dict[str, Any]) -> None:
        """Record a change of scope or model in the session log (for the audit trail)."""
        try:
            self.app.log_for(self.conv).record({**record, "session_id": self.conv.session_id})
        except OSError:
            pass
