"""The REPL: one ticket at a time, on the same loop and events as ``ask``.

``Repl`` only feeds ``App.run(conv, question, [renderer])`` and handles slash commands between
questions. It has two faces:

- ``run()``: interactive, on a prompt_toolkit ``PromptSession`` (history file, up-arrow recall,
  auto-suggest, slash-command completion, bracketed paste, Esc-Enter for a newline). Ctrl-C
  while a turn runs cancels that turn only (the turn is an asyncio task, cancelled from a
  SIGINT handler); Ctrl-C at the prompt clears the line; Ctrl-D or ``/exit`` leaves.
- ``run_lines(fd)``: standard input is not a terminal; one question (or slash command) per line,
  turns of one conversation, no prompt_toolkit at all, 0 at end of input.

The prompt appears at once: ``chat`` hands the REPL an ``AppLoader`` (``App.open`` in a thread:
the SDK import, the provider, the database) and the banner is drawn from the settings; the first
input waits for the loader only if it is not done yet. Keys typed before the prompt are not
echoed (``quiet_terminal``) and reach it.

The session and consoles are injected, so tests drive the REPL with prompt_toolkit's
``create_pipe_input`` / ``DummyOutput`` and a rich ``Console`` writing to a buffer.
prompt_toolkit is imported only inside the functions that use it. The slash commands are in
``repl_commands``, the display in ``repl_render``, the prompt and its history in ``history``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import termios
import threading
import time
from typing import IO, Any, Callable

from rich.text import Text

from .. import __version__
from ..config import default_db_path
from ..errors import (
    EXIT_API,
    EXIT_CONFIG,
    EXIT_INCOMPLETE,
    EXIT_OK,
    AgentcliError,
    UsageError,
)
from ..events import Usage
from ..lines import LineReader
from ..providers.pricing import estimate_cost
from ..stores import mask_dsn, sqlite_path
from ..vocab import MAX_QUESTION_CHARS, check_question
from .common import json_line, lock_notice, offline_text
from .layout import print_lines, wrapped
from .repl_commands import COMMANDS, SlashCommands
from .repl_render import ReplRenderer, _clean


class AppLoader:
    """``App.open(settings)`` in a daemon thread (the SDK import can take seconds on a busy
    machine): the REPL draws its prompt meanwhile. ``await loader.app()`` gives the App, or
    raises what opening it raised. A daemon thread: leaving the REPL at once never waits for an
    import to finish."""

    def __init__(self, settings: Any, opener: Callable[[Any], Any]):
        self.settings = settings
        self._loop = asyncio.get_running_loop()
        self._future: asyncio.Future = self._loop.create_future()
        threading.Thread(target=self._work, args=(opener,), name="agentcli-loader",
                         daemon=True).start()

    def _work(self, opener: Callable[[Any], Any]) -> None:
        try:
            result, ok = opener(self.settings), True
        except BaseException as e:  # noqa: BLE001 - handed to whoever awaits the App
            result, ok = e, False

        def hand_over() -> None:
            if self._future.done():
                return
            if ok:
                self._future.set_result(result)
            else:
                self._future.set_exception(result)

        try:
            self._loop.call_soon_threadsafe(hand_over)
        except RuntimeError:  # the loop has closed: the REPL is gone
            pass

    def done(self) -> bool:
        return self._future.done()

    async def app(self) -> Any:
        return await asyncio.shield(self._future)


def quiet_terminal() -> Callable[[], None]:
    """From now until the prompt takes the terminal, keys typed are not echoed (an arrow key
    would print ``^[[A``); they stay in the terminal's input and reach the prompt. Returns the
    function that restores the terminal as it was."""
    return _no_echo(True)


class Repl(SlashCommands):
    """One support agent's session: ticket after ticket, on one ``App`` (or an ``AppLoader``
    opening it behind the first prompt)."""

    def __init__(self, app: Any, *, console: Any, err_console: Any = None, session: Any = None,
                 interactive: bool = True, live: bool = True, answer_file: IO[str] | None = None,
                 json_out: bool = False, quiet: bool | None = None, spinner: bool | None = None,
                 ticket: str | None = None, offline_chosen: bool = False):
        self.offline_chosen = offline_chosen    # --provider offline said, not defaulted to
        self.loader = app if isinstance(app, AppLoader) else None
        self.app = None if self.loader is not None else app
        self.settings = self.loader.settings if self.loader is not None else app.settings
        self.ticket_arg = ticket
        self.console = console                  # the person's screen (or stdout in a pipe)
        self.err = err_console or console       # trace when not live; notes in --json mode
        self.session = session                  # PromptSession (interactive only)
        self.interactive = interactive
        self.live = live
        self.answer_file = answer_file
        self.json_out = json_out
        self.quiet = self.settings.quiet if quiet is None else quiet
        self.spinner = bool(getattr(console, "is_terminal", False)) if spinner is None else spinner
        self.conv: Any = None
        self.failed: str | None = None          # the App could not be opened (exit 3)
        self.failed_code = EXIT_CONFIG          # ... or its ticket not resumed (exit 2)
        if self.app is not None:
            self._opened(self.app)
        self.past_usage = Usage()               # tickets closed with /new
        self.ticket_no = 1
        self.saved_before: list[Any] = []       # drafts of the tickets closed with /new
        self.back_before: list[Any] = []        # ... and the ones their resumes brought back
        self.ticket_cost: float | None = 0.0     # estimated USD (None: a model with no price)
        self.session_cost: float | None = 0.0
        self._task: asyncio.Task | None = None
        self._confirm_session: Any = None
        self.prompts = 0  # prompts shown so far (tests type one line per prompt)
        self.exit_code = EXIT_OK  # chat on a pipe: 4 once a question failed at the API, else 1

    def _opened(self, app: Any) -> None:
        """The App is open: the conversation on its ticket (a ticket that exists comes back;
        one of another customer than the scope given is refused, UsageError)."""
        conv = app.conversation(ticket=self.ticket_arg, resume=True)
        self.app, self.conv = app, conv
        app.drafts.on_wait = lock_notice(self.err)

    async def ready(self) -> bool:
        """The App is open (waiting for the loader if need be); False when it could not be."""
        if self.app is not None:
            return True
        if self.failed is not None:
            return False
        if self.loader is None:
            return False
        try:
            if self.loader.done() or not getattr(self.info, "is_terminal", False):
                app = await self.loader.app()
            else:
                with self.info.status("starting the model client…", spinner="dots"):
                    app = await self.loader.app()
            self._opened(app)
        except AgentcliError as e:
            self.failed, self.failed_code = e.message, e.exit_code
            self.error_line(e.message)
            return False
        self.resumed_note()
        return True

    async def _load_behind(self) -> None:
        """While the first prompt waits: open the App; a ticket resumed is said above the
        prompt; a failure ends the prompt (the REPL exits 3; a ticket of another customer than the
        scope given, 2)."""
        from prompt_toolkit.application import run_in_terminal

        try:
            app = await self.loader.app()
            opened = self.app is None  # else the first input opened it meanwhile (ready)
            if opened:
                self._opened(app)
        except AgentcliError as e:
            message = self.failed = e.message
            self.failed_code = e.exit_code
            if self.session is not None and self.session.app.is_running:
                await run_in_terminal(lambda: self.error_line(message))
                self.session.app.exit(exception=EOFError())
            return
        except Exception:  # noqa: BLE001 - said when the first input waits for it
            return
        if opened:
            if self.session is not None and self.session.app.is_running:
                await run_in_terminal(self.resumed_note)
            else:
                self.resumed_note()

    # -- output helpers ----------------------------------------------------------------
    @property
    def info(self) -> Any:
        """Where command output, notes and the banner go."""
        return self.err if self.json_out else self.console

    def say(self, text: str, style: str | None = None, *, no_wrap: bool = False,
            indent: int = 0) -> None:
        """One item of output. On a terminal it wraps at word boundaries, continuation lines
        indented by ``indent`` (an id or code is one word, never split; a path longer than the
        line breaks after a "/"); into a pipe or buffer it is never wrapped."""

        if getattr(self.info, "is_terminal", False):
            print_lines(self.info, wrapped(self.info, Text(text, style=style or ""),
                                           self.info.width, indent))
        else:
            self.info.print(Text(text, style=style or ""), highlight=False, soft_wrap=True)

    def error_line(self, text: str) -> None:
        self.say(f"agentcli: {_clean(text)}", "bold red")

    # -- banner ------------------------------------------------------------------------
    def banner(self) -> None:
        """Drawn from the settings: it needs neither the SDK nor the database (the App may still
        be opening behind the prompt)."""
        s = self.settings
        self.say(f"agentcli {__version__} · chat — one ticket at a time; follow-up questions keep "
                 "the context", "bold")
        db = self.app.db_description if self.app is not None else db_description(s.db)
        customer = self.conv.ticket.customer if self.conv is not None else s.customer
        ticket = (self.conv.ticket.id if self.conv is not None
                  else self.ticket_arg or "a new one (the session id)")
        rows = [("provider", s.provider), ("model", s.model or "—"), ("database", db),
                ("drafts", mask_dsn(s.drafts_url) if s.drafts_url else os.path.abspath(s.drafts_dir)),
                ("customer", customer or ("the ticket's, if it was worked on under one (said once it is open)"
                                          if self.conv is None and self.ticket_arg else
                                          "none: every customer's orders are visible (/customer EMAIL)")),
                ("ticket", ticket)]
        for label, value in rows:
            line = Text(f"{label:<10}", style="bold")
            line.append(_clean(value))
            if getattr(self.info, "is_terminal", False):
                print_lines(self.info, wrapped(self.info, line, self.info.width, 10))
            else:
                self.info.print(line, highlight=False, soft_wrap=True)
        if s.provider == "offline":

            self.say(offline_text(self.offline_chosen).removeprefix("agentcli: ")
                     .replace("using", "Using", 1), "yellow")
        if self.conv is not None:
            self.resumed_note()
        self.say("/help for commands · Esc-Enter adds a line · Ctrl-C cancels an answer · "
                 "Ctrl-D or /exit leaves", "dim")

    def resumed_note(self) -> None:
        """What a resumed ticket brought back (``--ticket ID``, ``/ticket ID``)."""
        if self.conv is None:
            return
        t = self.conv.ticket
        note = t.unread_note()
        if note is not None:
            self.say(f"agentcli: warning: {_clean(note)}", "yellow")
        if not (t.resumed_from or t.questions or t.live):
            return
        n = len(t.questions)
        what = [f"{n} earlier question{'s' if n != 1 else ''}", f"{len(t.lookups)} lookup"
                f"{'s' if len(t.lookups) != 1 else ''}"]
        if t.live is not None:
            what.append(f"live draft {_clean(t.live.id)}")
        if t.scope_from is not None:
            what.append(f"customer scope {_clean(t.customer)} ({_clean(t.scope_from)})")
        self.say(f"resumed ticket {_clean(t.id)}: {', '.join(what)}; follow-ups go on from there",
                 "bold")

    def prompt_message(self) -> str:
        c = self.conv.ticket.customer if self.conv is not None else self.settings.customer
        return f"{_clean(c)} › " if c else "› "

    # -- the two faces -------------------------------------------------------------------
    async def run(self) -> int:
        """Interactive: prompt, answer, repeat, until Ctrl-D or /exit. Returns the exit code."""
        if self.session is None:
            from .history import (  # prompt_toolkit: a terminal only
                build_session,
                history_file,
            )

            self.session = build_session(history_path=history_file(), commands=COMMANDS)
        self.banner()
        behind = asyncio.create_task(self._load_behind()) if self.app is None else None
        try:
            while True:
                try:
                    self.prompts += 1
                    text = await self.session.prompt_async(self.prompt_message())
                except KeyboardInterrupt:
                    continue  # Ctrl-C at the prompt: the line is dropped, a fresh prompt follows
                except EOFError:
                    break
                if not await self.handle(text):
                    break
        finally:
            if behind is not None and not behind.done():
                behind.cancel()
        if self.failed is not None:
            return self.failed_code
        self.goodbye()
        return 0

    async def run_lines(self, fd: int) -> int:
        """Standard input is not a terminal: one question or slash command per line. The exit
        code is batch's: 0 when every question ended normally, 4 when any failed at the model
        API, else 1 when any is incomplete (or its line could not be a question)."""
        reader = LineReader(fd)
        note = self.conv.ticket.unread_note() if self.conv is not None else None
        if note is not None:  # stdout is the answers': the warning goes with the trace
            self.err.print(Text(f"agentcli: warning: {_clean(note)}"), highlight=False, soft_wrap=True)
        scoped = self.conv.ticket.scope_note() if self.conv is not None else None
        if scoped is not None and not self.quiet:  # as ask says it: no banner on a pipe
            self.err.print(Text(f"agentcli: {_clean(scoped)}"), highlight=False, soft_wrap=True)
        while True:
            line = await reader.readline()
            if line is not None and reader.cut:  # one question, refused whole
                self.error_line(f"the question is too long (a line of more than "
                                f"{reader.limit // (1 << 20)} MiB; the limit is {MAX_QUESTION_CHARS} "
                                "characters): trim quoted history from the email")
                self._failed(EXIT_INCOMPLETE)
                continue
            if line is None or not await self.handle(line):
                return self.exit_code

    def _failed(self, code: int) -> None:
        """A question ended with ``code`` (batch's rule: an API failure outranks the rest)."""
        if code == EXIT_API:
            self.exit_code = EXIT_API
        elif code != EXIT_OK and self.exit_code == EXIT_OK:
            self.exit_code = EXIT_INCOMPLETE

    # -- one input ------------------------------------------------------------------------
    async def handle(self, text: str) -> bool:
        """Act on one input; False means leave.

        Slash commands are for a person at the keyboard: on a pipe every line is a question, so
        a customer's message with a line "/customer" can never change the scope."""
        stripped = text.strip()
        if not stripped:
            return True
        if not await self.ready():  # the App is still opening: wait for it (once)
            return False
        # A command is one line: a pasted email whose first line starts with "/" is a question.
        one = "\n" not in stripped and len(stripped.splitlines()) == 1
        if self.interactive and one and stripped.startswith("/") and not stripped.startswith("//"):
            return await self.command(stripped)
        if self.interactive and one:
            habit = await self.habit(stripped)
            if habit is not None:
                return habit
        if self.interactive and stripped.startswith("//"):
            text = text.lstrip()[1:]
        try:
            question = check_question(text)
        except UsageError as e:
            self.error_line(e.message)
            self._failed(EXIT_INCOMPLETE)
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
            if not await self.confirm(f"continue for another {n} model call{'s' if n > 1 else ''}? "
                                      "[y/N, one key] "):
                self.say("stopped here; ask a follow-up question, or /new for the next ticket", "dim")
                break
            builder = await self.run_turn(question, consumers, resume=True, max_turns=n)
            if builder is not None:
                rounds.append(builder)
        if renderer is not None:
            renderer.close()
            if renderer.failed:
                self.say("(part of the trace could not be shown; the session log has all of it)", "dim")
        for b in rounds:
            self._add_cost(b)
        if rounds:
            self._failed(rounds[-1].exit_code)  # a turn limit continued: the last round says
        if self.json_out:
            for b in rounds:
                self._write_answer(json_line(b.result()))
        elif rounds and self.live and not self.quiet:
            turns = sum(b.finished.turns for b in rounds if b.finished)
            tools = sum(len(b.calls) for b in rounds)
            self.say(f"· {turns} model call{'s' if turns != 1 else ''} · {tools} tool "
                     f"call{'s' if tools != 1 else ''} · {time.monotonic() - t0:.1f} s", "dim")

    def _add_cost(self, builder: Any) -> None:
        """The same estimate as ``--json``'s ``estimated_cost_usd``, summed (None stays None)."""

        usage = builder.finished.usage if builder.finished is not None else {}
        cost = estimate_cost(builder.model, usage, self.app.settings.prices)
        self.ticket_cost = None if cost is None or self.ticket_cost is None else self.ticket_cost + cost
        self.session_cost = None if cost is None or self.session_cost is None else self.session_cost + cost

    def _renderer(self) -> ReplRenderer | None:
        if self.json_out:
            return None
        # On a pipe there are no slash commands: advice such as "/new" would be wrong there.
        command = "chat" if self.interactive else "lines"
        if self.live:
            return ReplRenderer(self.console, spinner=self.spinner, live=True, quiet=self.quiet,
                                command=command)
        return ReplRenderer(self.err, live=False, quiet=self.quiet, answer_file=self.answer_file,
                            command=command)

    def _write_answer(self, line: str) -> None:
        f = self.answer_file
        if f is None:
            self.console.file.write(line + "\n")
            self.console.file.flush()
        else:
            f.write(line + "\n")
            f.flush()

    def _so_far(self, rounds: list[Any]) -> None:
        calls = [c for b in rounds for c in b.calls]
        drafts = [d for b in rounds for d in b.drafts]
        if not calls:
            self.say("so far: no tool calls", "yellow")
            return
        counts: dict[str, int] = {}
        for c in calls:
            counts[c.name] = counts.get(c.name, 0) + 1
        failed = sum(1 for c in calls if c.is_error)
        what = ", ".join(f"{_clean(n)} ×{k}" for n, k in counts.items())
        msg = f"so far: {len(calls)} tool call{'s' if len(calls) > 1 else ''} ({what})"
        if failed:
            msg += f", {failed} failed"
        for d in drafts:
            msg += f"; draft {_clean(d['id'])} saved: {_clean(d['path'])}"
        self.say(msg, "yellow")

    async def confirm(self, message: str) -> bool:
        """A yes/no question answered by one key, as ``review`` takes its keys: y is yes; n,
        Enter, Esc or Ctrl-C is no (the default). Never asked when input is not a terminal."""
        if not self.interactive or self.session is None:
            return False
        from prompt_toolkit import PromptSession
        from prompt_toolkit.key_binding import KeyBindings, merge_key_bindings

        from .history import pasted_text_bindings

        if self._confirm_session is None:
            kb = KeyBindings()

            @kb.add("y")
            @kb.add("Y")
            def _yes(event: Any) -> None:
                event.app.exit(result="y")

            @kb.add("n")
            @kb.add("N")
            @kb.add("enter")
            @kb.add("escape", eager=True)
            @kb.add("c-c")
            @kb.add("c-d")
            def _no(event: Any) -> None:
                event.app.exit(result="n")

            @kb.add("<any>")
            def _other(event: Any) -> None:
                pass  # only y or n (or Enter for no)

            self._confirm_session = PromptSession(input=self.session.app.input,
                                                  output=self.session.app.output,
                                                  key_bindings=merge_key_bindings(
                                                      [pasted_text_bindings(), kb]))
        try:
            self.prompts += 1
            answer = await self._confirm_session.prompt_async(message)
        except (KeyboardInterrupt, EOFError):
            return False
        return (answer or "").strip().lower() == "y"

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
        """Run ``App.run`` as a task; Ctrl-C cancels it. Returns the ``Run``, or None."""
        task = asyncio.create_task(self.app.run(self.conv, question, consumers,
                                                resume=resume, max_turns=max_turns))
        self._task = task
        installed, previous = self._install_sigint()
        quiet_keys = _no_echo(self.interactive)
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:  # the REPL itself is being cancelled: take the turn along
            task.cancel()
            await asyncio.wait([task])
            raise
        finally:
            quiet_keys()
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
        self._failed(exc.exit_code if isinstance(exc, AgentcliError) else EXIT_INCOMPLETE)
        if isinstance(exc, AgentcliError):
            self.error_line(exc.message)
            detail = exc.message
        else:
            self.error_line("this question failed unexpectedly (an internal error, recorded in "
                            "the session log); the REPL goes on — if the next question fails too, "
                            "start a new ticket with /new")
            detail = f"{type(exc).__name__}: {exc}"
        try:
            self.app.log_for(self.conv).record({"type": "error", "kind": "crash",
                                                "session_id": self.conv.session_id,
                                                "message": detail[:500]})
        except Exception:  # noqa: BLE001
            pass


def db_description(url: str | None) -> str:
    """The orders database as the banner names it, without opening it (no password shown)."""
    if url is None:
        return f"sqlite:///{default_db_path()} (the demo database)"
    if "://" in url and not url.startswith("sqlite:"):
        return mask_dsn(url)
    try:
        return f"sqlite:///{sqlite_path(url)}"
    except AgentcliError:
        return mask_dsn(url)


def _no_echo(interactive: bool) -> Any:
    """While an answer runs, keys typed ahead are not echoed into the spinner line; they stay
    in the terminal's input and reach the next prompt. Returns the function that restores."""

    try:
        fd = sys.stdin.fileno()
        if not interactive or not os.isatty(fd):
            return lambda: None

        old = termios.tcgetattr(fd)
        new = list(old)
        new[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, new)
    except (AttributeError, ValueError, OSError, ImportError):
        return lambda: None

    def restore() -> None:
        try:
            termios.tcsetattr(fd, termios.TCSANOW, old)
        except (OSError, ValueError, termios.error):  # the terminal is gone (hung up)
            pass

    return restore
