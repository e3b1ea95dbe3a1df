"""Errors that end a command, each carrying the exit code the spec assigns.

    AgentcliError                 (any failure with a one-line message for a person)
    ├── UsageError         exit 2  bad flag, bad argument, unreadable or empty input
    ├── ConfigError        exit 3  missing API key, database unreachable or not in the schema
    │   └── StoreError             the orders database failed (raised at open time it is a
    │                              configuration error; during a lookup the tool layer turns it
    │                              into an ``is_error`` result instead)
    └── ModelAPIError      exit 4  the model API failed after retries (network, 5xx, 429, auth)
        └── IncompleteResponse     a response that ended without a stop reason (dropped,
                                   stalled or truncated stream); retried like a transport fault

Tool failures are *not* exceptions that escape: the tool layer returns them as results with
``is_error: true`` (see ``agentcli.tools``). Interrupts are ``KeyboardInterrupt`` /
``asyncio.CancelledError`` and map to exit 130 in the CLI; SIGTERM to 143 and SIGHUP to 129.
``signals_held()`` (below) holds those signals over the few lines where a temporary file exists;
``write_temp`` and ``replace_file`` are those lines, for every file agentcli replaces whole.

Every message here is meant to be shown as-is: one line, what went wrong and what to do, never
a secret, a DSN password, SQL or a stack trace.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

EXIT_OK = 0
EXIT_INCOMPLETE = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_API = 4
EXIT_INTERRUPTED = 130


class AgentcliError(Exception):
    exit_code = 1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(AgentcliError):
    exit_code = EXIT_USAGE


class ConfigError(AgentcliError):
    exit_code = EXIT_CONFIG


class StoreError(ConfigError):
    """The orders database could not be opened or queried."""


class ModelAPIError(AgentcliError):
    exit_code = EXIT_API

    def __init__(self, message: str, *, kind: str = "api_error", retryable: bool = False,
                 retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.retry_after = retry_after


class IncompleteResponse(ModelAPIError):
    """A streamed response ended without a final stop reason: none of its tool calls may run."""

    def __init__(self, message: str = "the model's response ended before it was complete"):
        super().__init__(message, kind="incomplete_response", retryable=True)


# ----------------------------------------------------------------------------- held signals
# Signals held over the short windows where a file is half done (standard library only).
#
#     with signals_held():
#         fd, tmp = tempfile.mkstemp(dir=folder)
#         try:
#             ...write, fsync...
#             os.replace(tmp, target)
#         except BaseException:
#             os.unlink(tmp)
#             raise
#
# (``replace_file`` below is that block, and ``write_temp`` its first half for a caller that puts
# the file in place another way, such as ``os.link``, which never overwrites.)
#
# Between ``mkstemp`` and the rename (or the removal) a temporary file exists that nothing else
# would remove. A Ctrl-C, SIGTERM or SIGHUP that arrived there used to end the process right
# there: a SIGHUP (no handler) killed it outright, and a handler's exception raised between
# ``mkstemp`` and the ``try``, or during the ``except``'s own clean-up, skipped the clean-up. Inside
# ``signals_held()`` those three signals are noted instead, and delivered again once the block has
# ended (``signal.raise_signal``, with the handlers put back as they were): their effect is the
# same as before, only after the file is in place or gone. The folder is left either as it was
# or as it is meant to be, never with a stray temporary file, and the exit code is still the
# signal's.
#
# Only the main thread receives signals (Python's handlers run there): in any other thread, and
# where handlers cannot be set, ``signals_held()`` does nothing. Keep the windows short (a write
# and an fsync, never a wait on someone else): a signal held is a signal not yet obeyed.
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


def write_temp(folder: Path | str, data: bytes, *, prefix: str, suffix: str = "",
               on_fd: Optional[Callable[[int], None]] = None) -> str:
    """A temporary file in FOLDER holding DATA, written and fsynced: its path, for the caller to
    rename into place or remove (holding the signals from before this call until then). ON_FD
    runs on the open file first (ownership, mode). The file is removed when anything here fails."""
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=suffix, dir=folder)
    try:
        if on_fd is not None:
            on_fd(fd)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def replace_file(path: Path, data: bytes, *, prefix: str, suffix: str = "",
                 on_fd: Optional[Callable[[int], None]] = None, sync_folder: bool = True) -> None:
    """PATH replaced by DATA whole or not at all: a temporary file beside it, fsynced, renamed over
    it, with the signals held meanwhile, so a reader sees the old file or the new one and a signal
    or failure at any instant leaves no temporary file. Then the folder is fsynced (the rename
    itself survives a crash) unless SYNC_FOLDER is false. OSError goes to the caller."""
    with signals_held():
        tmp = write_temp(path.parent, data, prefix=prefix, suffix=suffix, on_fd=on_fd)
        try:
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    if sync_folder:
        fsync_folder(path.parent)


def fsync_folder(folder: Path | str) -> None:
    """fsync a folder (a rename or link in it survives a crash); any failure is ignored: some
    file systems cannot."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
