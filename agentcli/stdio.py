"""Standard streams: small helpers every layer may use (standard library only)."""

from __future__ import annotations

import os
import sys


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
