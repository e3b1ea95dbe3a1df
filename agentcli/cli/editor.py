"""The person's editor as a child process that signals cannot leave behind.

While the editor runs, agentcli waits for it. Ctrl-C and Ctrl-\\ are the editor's (vi uses
Ctrl-C to cancel a command; agentcli ignores both meanwhile, as git does). SIGTERM or SIGHUP
(a supervisor, the terminal closing) stop the editor (SIGTERM, then SIGKILL if it has not
ended within :data:`STOP_S`), put the terminal back as it was, and end the command with
:class:`EditorStopped`: ``drafts_show.edit_text`` then removes the temporary copy of the
draft on the way out, and the one line says so (exit 128 + the signal).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import termios
from typing import Any

from ..errors import AgentcliError

STOP_S = 2.0  # seconds the editor has to end after SIGTERM before it is killed
_NAMES = {signal.SIGTERM: "terminated (SIGTERM)", signal.SIGHUP: "hung up (SIGHUP)"}


class EditorStopped(AgentcliError):
    """A signal stopped the editor; the draft is unchanged and its temporary copy removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"{_NAMES.get(signum, f'signal {signum}')}: the editor was stopped and "
                         "the temporary copy of the draft removed; the draft is unchanged")
        self.exit_code = 128 + signum


class _Signalled(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminal() -> tuple[int, Any] | None:
    """The terminal's settings, to put back after a stopped full-screen editor."""
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd):
            return None
        return fd, termios.tcgetattr(fd)
    except (AttributeError, ValueError, OSError, termios.error):
        return None


def _restore(saved: tuple[int, Any] | None) -> None:
    if saved is None:
        return
    try:
        termios.tcsetattr(saved[0], termios.TCSADRAIN, saved[1])
    except (OSError, ValueError, termios.error):
        pass


def run_editor(argv: list[str]) -> int:
    """Run ``argv`` in the foreground and return its exit status; raises OSError when it
    cannot start and :class:`EditorStopped` when SIGTERM or SIGHUP came meanwhile."""

    # A signal that comes while Popen is still starting the editor (the child may already run
    # and write its file, while the parent has not yet been handed its pid) is held until
    # Popen returns: raised there, it would leave an editor nobody stops.
    starting = True
    held: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        if starting:
            held.append(signum)
            return
        raise _Signalled(signum)

    def ignore(signum: int, frame: Any) -> None:
        pass  # a handler, not SIG_IGN: the editor starts with these signals as they were

    saved = _terminal()
    previous: dict[int, Any] = {}
    try:
        for sig, handler in ((signal.SIGTERM, stop), (signal.SIGHUP, stop),
                             (signal.SIGINT, ignore), (signal.SIGQUIT, ignore)):
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: no signals of ours to handle
        previous = {}
    proc: subprocess.Popen | None = None
    try:
        try:
            proc = subprocess.Popen(argv)
        finally:
            starting = False
            if held:  # also when the editor could not start: the signal is what is said
                raise _Signalled(held[0])
        return proc.wait()
    except _Signalled as s:  # at any instant: before, during or just after the editor
        if proc is not None:
            _stop(proc)
        _restore(saved)
        raise EditorStopped(s.signum) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop(proc: subprocess.Popen) -> None:
    for step in (proc.terminate, proc.kill):
        try:
            step()
            proc.wait(STOP_S)
            return
        except subprocess.TimeoutExpired:
            continue
        except _Signalled:  # a second signal while it stops: kill it now
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            return
        except OSError:  # already gone
            return
