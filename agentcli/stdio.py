"""Standard streams: small helpers every layer may use (standard library only)."""

from __future__ import annotations

import os
import signal
import sys

# What a stopping signal says on stderr, wherever it is obeyed: while the modules load
# (``_entry``) or in a command (``cli.common``); its exit code is 128 + the signal's number.
STOP_SAID = {signal.SIGTERM: "terminated (SIGTERM)", signal.SIGHUP: "hung up (SIGHUP)"}


def isatty(stream: object) -> bool:
    """``stream.isatty()``, False for a missing or closed stream."""
    try:
        return bool(stream) and stream.isatty()
    except (AttributeError, ValueError):
        return False


def silence_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null, so the interpreter's last flush at exit
    does not print "Exception ignored ... BrokenPipeError"."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, AttributeError, ValueError):
        pass


def flush_or_drop() -> None:
    """Flush stdout and stderr; a stream that cannot be flushed any more (its terminal is gone:
    SIGHUP) is pointed at /dev/null, so the interpreter's last flush cannot turn the exit code
    into 120. Output to a file or a pipe is flushed, never dropped."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            try:
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
            except (OSError, ValueError, AttributeError):
                pass
