"""Pieces every command shares: consoles, input reading, error exits, notices.

Imports here stay light (typer, the standard library): every command loads this module.
"""

import asyncio
import errno
import inspect
import os
import signal
import stat
import sys
import threading
from datetime import datetime
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.text import Text

from ..config import source_of
from ..errors import EXIT_INTERRUPTED, AgentcliError, UsageError
from ..redact import clean_for_terminal, json_dumps, one_line, redact_obj
from ..stdio import STOP_SAID, flush_or_drop, isatty, silence_stdout
from ..vocab import MAX_QUESTION_CHARS, check_question
from .layout import print_lines, wrapped


def _console(**kw: Any) -> Any:
    if os.environ.get("NO_COLOR"):
        # No colour and no style at all: rich's own NO_COLOR handling drops colours but keeps
        # bold, dim and reverse; without a colour system it emits no style codes whatever.
        kw["color_system"] = None
    return Console(highlight=False, soft_wrap=True, **kw)


def err_console():
    return _console(stderr=True)


def out_console():
    return _console()


def say_err(text: str, style: str = "") -> None:
    """One message on stderr: on a terminal wrapped at words to its width (continuation lines
    indented), so no word or id is broken by the terminal; elsewhere one line."""
    if isatty(sys.stderr):
        c = err_console()
        print_lines(c, wrapped(c, Text(text, style=style), c.width, 2))
    else:
        sys.stderr.write(text + "\n")
    sys.stderr.flush()


def error_line(message: str) -> None:
    """One message on stderr, redacted and cleaned of control sequences."""

    line = " ".join(clean_for_terminal(str(message)).split())
    say_err(f"agentcli: {line}")


def lock_notice(console: Any) -> Callable[[Optional[str]], None]:
    """What a drafts command says while it waits for the drafts folder's lock
    (``DraftStore.on_wait``): that it waits, and for whom."""

    def notice(holder: Optional[str]) -> None:
        console.print(Text(f"agentcli: waiting for the drafts folder's lock, held by "
                           f"{clean_for_terminal(holder or 'another process')} (up to 10 s)…",
                           style="yellow"), highlight=False, soft_wrap=not console.is_terminal)

    return notice


def fail(message: str, code: int) -> "typer.Exit":
    """Print one clear line on stderr and return the Exit to raise."""
    error_line(message)
    return typer.Exit(code)


def stopped(signum: int, line: str) -> "typer.Exit":
    """A stopping signal's line and the Exit to raise (its code). After SIGHUP the terminal
    may be gone (a write to it fails): the line is said if it can be, and what is still
    buffered for a terminal that is gone is dropped, so the interpreter's last flush cannot
    turn the exit code into 120; output to a file or a pipe is flushed, never dropped."""
    code = _STOPS[signum][0] if signum in _STOPS else 128 + signum
    try:
        error_line(line)
    except (OSError, ValueError):
        pass
    flush_or_drop()
    return typer.Exit(code)


EXIT_TERMINATED = 143  # 128 + SIGTERM, what a shell reports for a process killed by it
EXIT_HUNG_UP = 129  # 128 + SIGHUP: the terminal closed (a window shut, an ssh link dropped)
GRACE_S = 5.0  # after SIGTERM / Ctrl-C, the seconds a command has to stop on its own terms


class _Terminated(BaseException):
    """SIGTERM (a supervisor, ``timeout``, a cron limit) or SIGHUP (the terminal closed) arrived
    while a command body ran. A BaseException, as KeyboardInterrupt: no ``except Exception`` in
    a command swallows it."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_a_terminal() -> bool:
    """A standard stream is a terminal (a character device: once hung up, ``isatty`` says no)."""
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            if stat.S_ISCHR(os.fstat(stream.fileno()).st_mode):
                return True
        except (OSError, ValueError, AttributeError):
            continue
    return False


def hup_ignored() -> bool:
    """SIGHUP is ignored (``nohup agentcli batch ...``): it stays ignored."""
    return signal.getsignal(signal.SIGHUP) == signal.SIG_IGN


# what each stopping signal exits with and says (the interrupt's are EXIT_INTERRUPTED's)
_STOPS = {signal.SIGTERM: (EXIT_TERMINATED, STOP_SAID[signal.SIGTERM]),
          signal.SIGHUP: (EXIT_HUNG_UP, STOP_SAID[signal.SIGHUP])}


def _stop_line(signum: int, blocked: bool = False) -> str:
    said = _STOPS[signum][1]
    return f"{said}{' while the output was blocked' if blocked else ''}; what was finished is kept"


class _Watchdog:
    """The last resort after SIGTERM or Ctrl-C: if the command has not ended ``GRACE_S`` later
    (its event loop stuck in a write to a full pipe or a FIFO nobody reads, a thread stuck in
    a system call), say so on stderr and end the process with the signal's exit code. What
    was finished is already on disk (session logs, drafts and ``--output`` records are each
    written whole as they happen), so nothing done is lost. Once started it stays armed until
    the process ends: the interpreter's last flush of a buffered stdout into a full pipe would
    hang the exit too."""

    _armed: threading.Event | None = None  # set: disarmed (the command ended on its own)

    @classmethod
    def start(cls, code: int, line: str) -> None:
        if cls._armed is not None:
            return
        cls._armed = done = threading.Event()
        threading.Thread(target=cls._wait, args=(done, code, line), name="agentcli-watchdog",
                         daemon=True).start()

    @classmethod
    def disarm(cls) -> None:
        """The command ended (its last line written): nothing for the watchdog to do."""
        if cls._armed is not None:
            cls._armed.set()
            cls._armed = None

    @staticmethod
    def _wait(done: threading.Event, code: int, line: str) -> None:
        if done.wait(GRACE_S):
            return
        # stderr may be the stalled pipe too: its line is written by a thread of its own and
        # waited for briefly, never for ever
        say = threading.Thread(target=_write_fd, args=(2, f"agentcli: {line}\n".encode()),
                               daemon=True)
        say.start()
        say.join(0.5)
        os._exit(code)


def _write_fd(fd: int, data: bytes) -> None:
    try:
        os.write(fd, data)
    except OSError:
        pass


async def _stop_on_sigterm(coro: Any) -> Any:
    """Await ``coro``; SIGTERM cancels it the way Ctrl-C does (in-flight calls are cancelled, the
    history is repaired, logs and records already written are kept), then exits 143; SIGHUP
    does the same and exits 129.

    The handlers are the interpreter's (``signal.signal``), not the event loop's: they run in
    the main thread even while it is blocked in a write (the write is interrupted, the handler
    runs, the write goes on), so a signal is seen whatever the reader of standard output does.
    Each asks the loop to cancel and starts the :class:`_Watchdog`."""

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    hit: list[int] = []

    def on_term(signum: int, frame: Any) -> None:
        hit.append(signum)
        _Watchdog.start(_STOPS[signum][0], _stop_line(signum, blocked=True))
        if task is not None:
            loop.call_soon_threadsafe(task.cancel)

    try:
        previous_term = signal.signal(signal.SIGTERM, on_term)
    except (ValueError, OSError):  # not the main thread
        return await coro
    previous_hup = None if hup_ignored() else signal.signal(signal.SIGHUP, on_term)
    previous_int = signal.getsignal(signal.SIGINT)  # asyncio.run's own (it cancels the task)

    def on_int(signum: int, frame: Any) -> None:
        _Watchdog.start(EXIT_INTERRUPTED, _INT_LINE)
        if callable(previous_int):
            previous_int(signum, frame)  # the first cancels, a second raises KeyboardInterrupt
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_int)
    try:
        result = await coro
    except asyncio.CancelledError:
        if hit:
            raise _Terminated(hit[0]) from None
        raise
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        if previous_hup is not None:
            signal.signal(signal.SIGHUP, previous_hup)
        if signal.getsignal(signal.SIGINT) is on_int:  # the REPL may have put its own back
            signal.signal(signal.SIGINT, previous_int)
    if hit:  # the body caught the cancellation and finished on its own terms
        raise _Terminated(hit[0])
    return result


_INT_LINE = "interrupted while the output was blocked; what was finished is kept"


def _obey_signals() -> dict[int, Any]:
    """For a command body that is not a coroutine: SIGTERM ends it as Ctrl-C does (exit 143,
    not a process killed by a signal), SIGHUP too (exit 129), and each starts the
    :class:`_Watchdog` (a write to a full pipe, or the last flush at exit, must not hold the
    process). The previous handlers."""

    stopping: list[int] = []

    def on_term(signum: int, frame: Any) -> None:
        # once: a second SIGTERM / SIGHUP (a closing terminal sends SIGHUP more than once)
        # must not cut short the clean-up the first one started (a review's claim let go, a
        # temporary copy removed); the watchdog still ends a clean-up that hangs
        if stopping:
            return
        stopping.append(signum)
        _Watchdog.start(_STOPS[signum][0], _stop_line(signum, blocked=True))
        raise _Terminated(signum)

    def on_int(signum: int, frame: Any) -> None:
        _Watchdog.start(EXIT_INTERRUPTED, _INT_LINE)
        raise KeyboardInterrupt

    previous: dict[int, Any] = {}
    try:
        for sig, handler in ((signal.SIGTERM, on_term), (signal.SIGHUP, on_term),
                             (signal.SIGINT, on_int)):
            if sig == signal.SIGINT and signal.getsignal(sig) is not signal.default_int_handler:
                continue  # Ctrl-C is someone else's (an embedding program's)
            if sig == signal.SIGHUP and hup_ignored():
                continue  # started under nohup: a closing terminal is not to stop it
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread
        pass
    return previous


def run(fn: Callable[[], Any]) -> Any:
    """Run a command body: AgentcliError -> one line + its exit code; Ctrl-C -> 130; SIGTERM ->
    143; SIGHUP -> 129."""
    previous = _obey_signals()
    try:
        return _run(fn, previous)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(fn: Callable[[], Any], previous: dict[int, Any]) -> Any:
    try:
        result = fn()
        if inspect.iscoroutine(result):
            # the loop's turn: asyncio.run puts its own Ctrl-C handler only over the default one,
            # and _stop_on_sigterm its own over that
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            result = asyncio.run(_stop_on_sigterm(result))
        return result
    except AgentcliError as e:
        raise fail(e.message, e.exit_code) from None
    except KeyboardInterrupt:
        raise fail("interrupted", EXIT_INTERRUPTED) from None
    except _Terminated as t:
        raise stopped(t.signum, _stop_line(t.signum)) from None
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as Unix tools do.
        silence_stdout()
        raise typer.Exit(1) from None
    except (typer.Exit, SystemExit):
        raise
    except OSError as e:  # the system's, not ours: a full disk under stdout, a vanished file
        if e.errno == errno.EIO and _on_a_terminal():
            # the terminal hung up (its window closed): its SIGHUP is on the way, often just
            # after the I/O error it causes; the same end as SIGHUP's
            raise stopped(signal.SIGHUP, _stop_line(signal.SIGHUP)) from None
        where = f"cannot use {e.filename}" if e.filename else "cannot write the output"
        if e.errno == errno.ENAMETOOLONG:  # a path the settings made (AGENTCLI_HOME, a folder)
            raise fail(f"{where}: its path is longer than the file system allows; shorten "
                       "AGENTCLI_HOME or the setting that names it", 3) from None
        raise fail(f"{where} ({e.strerror or e})", 1) from None
    except Exception as e:  # a bug: one line, never a traceback
        raise fail(f"internal error ({type(e).__name__}: {str(e)[:200]}); please report it "
                   "with the session log (agentcli log show last)", 1) from None


def read_question(arg: Optional[str]) -> str:
    """The question from the argument, or all of standard input for None / '-'."""
    if arg is not None and arg != "-":
        q = arg
    else:
        if sys.stdin is None:  # started with standard input closed (`agentcli <&-`)
            raise UsageError("no question: standard input is closed; pass the question as an argument")
        if arg is None and sys.stdin.isatty():
            raise UsageError("no question: pass one as an argument, or pipe it in "
                             "(echo '...' | agentcli ask)")
        if sys.stdin.isatty():  # `agentcli ask -` typed at a terminal: say what it waits for
            sys.stderr.write("agentcli: paste the question, then press Ctrl-D on a line of its "
                             "own (Ctrl-C cancels)\n")
            sys.stderr.flush()
        data = sys.stdin.buffer.read(MAX_QUESTION_CHARS * 4 + 1)
        q = data.decode("utf-8", errors="replace")
    return check_question(q)


OFFLINE_NOTICE = ("agentcli: using the offline workflow (rule-based order lookups and drafts, not "
                  "a language model); set ANTHROPIC_API_KEY, or OPENAI_BASE_URL with "
                  "--provider openai, to use a model")
OFFLINE_CHOSEN = ("agentcli: using the offline workflow (rule-based order lookups and drafts, not "
                  "a language model), as chosen")


def offline_text(chosen: bool) -> str:
    """The offline notice: how to use a model when offline was the default; only what is
    used when it was chosen (a key that is set is no advice then)."""
    return OFFLINE_CHOSEN if chosen else OFFLINE_NOTICE


def provider_chosen(opts: Any) -> bool:
    """Was the provider named (flag, environment, config file), rather than defaulted?"""
    try:
        return source_of("provider", getattr(opts, "provider", None)) != "default"
    except AgentcliError:  # an unreadable config file: said by the check that reads it
        return False


def offline_notice(settings: Any, opts: Any = None) -> None:
    if settings.provider == "offline":
        say_err(offline_text(opts is not None and provider_chosen(opts)))


def json_line(obj: Any) -> str:
    """The one ``--json`` writer's line: redacted here, at the sink, whatever built the object."""
    return json_dumps(redact_obj(obj))


def dump_json(obj: Any) -> None:
    """One JSON document on one line of stdout."""
    sys.stdout.write(json_line(obj) + "\n")
    sys.stdout.flush()


MAX_WARN_LINES = 20  # then one line says how many more (3,000 damaged files: 3,000 lines)


def warn(lines: list[str]) -> None:
    """Warnings (damaged files, skipped records), one line each on stderr, cleaned; at most
    ``MAX_WARN_LINES`` of them, then how many more there were."""

    for w in lines[:MAX_WARN_LINES]:
        say_err(f"agentcli: warning: {' '.join(clean_for_terminal(w).split())}")
    if len(lines) > MAX_WARN_LINES:
        say_err(f"agentcli: warning: … and {len(lines) - MAX_WARN_LINES} more like these")


def tsv(*cells: Any) -> str:
    """One tab-separated line for a pipe: every cell on one line, no tabs inside."""
    return "\t".join(one_line("" if c is None else c, 200).replace("\t", " ") for c in cells)


def format_time(iso: str | None) -> str:
    """An ISO UTC time as local ``YYYY-MM-DD HH:MM`` for tables."""
    if not iso:
        return "?"

    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M")
    except (ValueError, OverflowError):
        return one_line(iso, 32)
