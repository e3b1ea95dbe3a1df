"""Signals held over the short windows where a file is half done (standard library only).

    with signals_held():
        fd, tmp = tempfile.mkstemp(dir=folder)
        try:
            ...write, fsync...
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise

Between ``mkstemp`` and the rename (or the removal) a temporary file exists that nothing else
would remove. A Ctrl-C, SIGTERM or SIGHUP that arrived there used to end the process right
there: a SIGHUP (no handler) killed it outright, and a handler's exception raised between
``mkstemp`` and the ``try``, or during the ``except``'s own clean-up, skipped the clean-up. Inside
``signals_held()`` those three signals are noted instead, and delivered again once the block has
ended (``signal.raise_signal``, with the handlers put back as they were): their effect is the
same as before, only after the file is in place or gone. The folder is left either as it was
or as it is meant to be, never with a stray temporary file, and the exit code is still the
signal's.

Only the main thread receives signals (Python's handlers run there): in any other thread, and
where handlers cannot be set, ``signals_held()`` does nothing. Keep the windows short (a write
and an fsync, never a wait on someone else): a signal held is a signal not yet obeyed.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator

HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP for the block; the ones that came are raised again (in the
    order they came, each once) when it ends, whether it ended normally or by an exception."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []

    def note(signum: int, frame: Any) -> None:
        if signum not in came:
            came.append(signum)

    previous: dict[int, Any] = {}
    try:
        for sig in HELD_SIGNALS:
            handler = signal.getsignal(sig)
            if handler is None:  # set outside Python: it could not be put back
                continue
            previous[sig] = signal.signal(sig, note)
    except (ValueError, OSError):  # not the main interpreter's main thread
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        previous.clear()
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in came:
            # the handler put back runs now, as if the signal had come this instant (default
            # action included: a SIGHUP nobody handles still ends the process)
            signal.raise_signal(sig)
