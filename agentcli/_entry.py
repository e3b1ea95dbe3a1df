"""The console script's entry point: ``agentcli --help`` answered without loading typer.

Every ``agentcli`` run starts here. For the top-level help (``agentcli --help`` / ``-h``, the
most frequent cold start there is) it prints the text typer renders for it, stored in
``_help_text.py``, and exits: no typer, no click, no command tree built from 27 function
signatures (~85 ms of a ~100 ms run). Everything else, and the help on a terminal narrower than
80 columns (where click wraps the text differently), goes to :func:`agentcli.cli.main`.

``_help_text.py`` is generated: ``python -m agentcli._entry --write-help`` renders the help
through typer (at click's widest layout) and writes it. ``tests/test_cli_help.py`` fails when the
stored text and typer's rendering differ, so a changed command or help string cannot ship a
stale copy.
"""

import os
import signal
import sys

from ._help_text import HELP
from .stdio import STOP_SAID, flush_or_drop, silence_stdout

# Set (to anything) to always render the help through typer; the tests and --write-help use it.
TYPER_HELP_ENV = "_AGENTCLI_TYPER_HELP"
# click lays help out at min(terminal columns, 80) - 2: the stored text is the 80-column layout.
_WIDE = 80


def _stored_help() -> str | None:
    """The stored top-level help when it is exactly what typer would print here, else None."""
    if sys.argv[1:] not in (["--help"], ["-h"]) or os.environ.get(TYPER_HELP_ENV):
        return None
    if _columns() < _WIDE:
        return None
    return HELP


def _columns() -> int:
    """``shutil.get_terminal_size().columns``, without importing shutil (with bz2, lzma and
    fnmatch, a tenth of a cold ``--help``): ``COLUMNS`` when set to a positive number, else
    stdout's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _keys_kept() -> "object | None":
    """Starting the REPL on a terminal (``agentcli``, ``agentcli chat``): from the first instant,
    keys typed are not echoed (an arrow key would print ``^[[A`` while the modules load); they
    stay in the terminal's input for the prompt. Returns what to restore, or None."""
    if sys.argv[1:2] not in ([], ["chat"]) or not (sys.stdin and sys.stdin.isatty()):
        return None
    try:
        import termios  # a C module: no cost worth counting

        fd = sys.stdin.fileno()
        old = termios.tcgetattr(fd)
        new = list(old)
        new[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSANOW, new)
    except (ImportError, OSError, ValueError):
        return None
    return (termios, fd, old)  # put back by main on the way out, a signal's way included


class _Stopped(BaseException):
    """SIGTERM or SIGHUP while the modules load (before a command's own handlers are in place,
    or after they are gone). A BaseException: no ``except Exception`` on the way swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _obey_while_loading() -> None:
    """From the first instant, SIGTERM and SIGHUP end the run as they do a command (one line,
    exit 128 + the signal), not a process killed in the middle of an import; Ctrl-C is
    Python's own KeyboardInterrupt, answered in :func:`main`. A signal ignored from the start
    (``nohup``) stays ignored. The commands put their own handlers over these while they run."""

    def stop(signum: int, frame: object) -> None:
        raise _Stopped(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) == signal.SIG_IGN:
                continue
            signal.signal(sig, stop)
        except (ValueError, OSError):  # not the main thread (agentcli run from a thread)
            return


def _say_and_exit(what: str, code: int) -> None:
    """The one line for a signal outside a command's body, then exit ``code``. The terminal may
    be gone (SIGHUP): the line is said if it can be, and a stream that cannot be flushed any
    more is pointed at /dev/null, so the interpreter's last flush does not change the code."""
    flush_or_drop()
    try:
        if sys.stderr is not None:
            sys.stderr.write(f"agentcli: {what}\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stderr.fileno())
        except (OSError, ValueError, AttributeError):
            pass
    sys.exit(code)


def main() -> None:
    text = _stored_help()
    if text is None:
        _obey_while_loading()
        kept = None
        try:
            kept = _keys_kept()
            from .cli import main as typer_main

            typer_main()
        except KeyboardInterrupt:  # Ctrl-C while the modules load, before typer runs
            _say_and_exit("interrupted", 130)
        except _Stopped as s:
            _say_and_exit(STOP_SAID.get(s.signum, f"signal {s.signum}"), 128 + s.signum)
        finally:
            if kept is not None:
                termios, fd, old = kept
                try:
                    termios.tcsetattr(fd, termios.TCSANOW, old)
                except (OSError, ValueError, termios.error):  # the terminal is gone (SIGHUP)
                    pass
        return
    if sys.stdout is None:  # started with stdout closed: nowhere to print (typer is silent too)
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away before the help was written
        silence_stdout()
        sys.exit(1)
    except OSError as e:
        sys.stderr.write(f"agentcli: cannot write the help ({e.strerror or e})\n")
        sys.exit(1)


def write_help_text() -> str:
    """Render the top-level help through typer at the 80-column layout and store it."""
    import subprocess  # --write-help only

    env = {**os.environ, TYPER_HELP_ENV: "1", "COLUMNS": str(_WIDE), "NO_COLOR": "1"}
    p = subprocess.run([sys.executable, "-m", "agentcli", "--help"], env=env, capture_output=True,
                       text=True, check=True)
    target = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_help_text.py")
    with open(target, "w", encoding="utf-8") as f:
        f.write('"""Generated by `python -m agentcli._entry --write-help`: do not edit."""\n\n'
                f"HELP = {p.stdout!r}\n")
    return target


if __name__ == "__main__":
    if sys.argv[1:] == ["--write-help"]:
        print(f"wrote {write_help_text()}")
    else:
        sys.exit("usage: python -m agentcli._entry --write-help")
