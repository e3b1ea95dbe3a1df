"""Session logs: one append-only JSON Lines file per session, one event a line.

Each event is written with a single ``os.write`` on an ``O_APPEND`` descriptor as it happens, so
a crash or ``kill -9`` leaves every earlier event readable (at worst the last line is cut, and
readers skip a cut line with a warning). Files are created owner-only (0600), and every string
passes through the redactor, so no API key or database password is ever written.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from pathlib import Path
from typing import Any, Iterator

from ..errors import ConfigError
from ..events import Event, to_dict
from ..redact import ascii_json_redacted, redact
from ..vocab import ticket_key

# What a session id (a log file's stem) may look like: ours are "20261130-120000-<12 hex>".
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# The ticket index: TICKETS/<ticket_key> lists the session ids whose log starts in that ticket, one
# a line, so a ticket is found among any number of logs (the newest are also searched, so a line
# a crash kept from the index is no loss).
TICKETS = ".tickets"
MAX_INDEX_BYTES = 1 << 20


class SessionLog:
    def __init__(self, directory: Path, session_id: str, *, meta: dict[str, Any] | None = None):
        self.dir = Path(directory)
        self.session_id = session_id
        self.path = self.dir / f"{session_id}.jsonl"
        self._fd: int | None = None
        self._meta = meta or {}

    def _open(self) -> int:
        if self._fd is None:
            try:
                self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            except OSError as e:
                raise ConfigError(f"cannot write the session log in {self.dir} ({e.strerror}); "
                                  "set AGENTCLI_HOME to a writable folder") from None
            if os.fstat(self._fd).st_size == 0:
                start = {"type": "session_start", "session_id": self.session_id,
                         "ts": round(time.time(), 3), **self._meta}
                self._write(start)
                ticket = self._meta.get("ticket")
                if isinstance(ticket, str):
                    self._index(redact(ticket))  # as the record holds it
        return self._fd

    def _index(self, ticket: str) -> None:
        """Name this session in its ticket's index; a shortcut only (the newest logs are
        searched too), so a folder that cannot hold it costs nothing but the shortcut."""
        index = self.dir / TICKETS
        try:
            index.mkdir(mode=0o700, exist_ok=True)
            if index.is_symlink():
                return
            fd = os.open(index / ticket_key(ticket), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                         | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    os.write(fd, (self.session_id + "\n").encode("ascii", "replace"))
            finally:
                os.close(fd)
        except OSError:
            pass

    def _write(self, d: dict[str, Any]) -> None:
        # ASCII JSON: any text (lone surrogates from a model included) encodes, and one
        # os.write per event keeps lines whole.
        line = ascii_json_redacted(d) + "\n"
        try:
            os.write(self._fd, line.encode("ascii"))  # type: ignore[arg-type]
        except OSError as e:  # a full disk mid-run: name the session log, not "the output"
            raise ConfigError(f"cannot write the session log {self.path} ({e.strerror or e}); "
                              "free some space or set AGENTCLI_HOME to another folder") from None

    def __call__(self, event: Event) -> None:
        if event.type == "text_delta":
            return  # the whole text is in model_response; deltas would only bloat the log
        self._open()
        self._write(to_dict(event))

    def record(self, d: dict[str, Any]) -> None:
        self._open()
        self._write(d)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


MAX_LINE_BYTES = 32 * 1024 * 1024  # far above any event we write (responses are bounded at 16 MiB)


def _lines(f: Any) -> Iterator[bytes | None]:
    """The lines of ``f``, each read at most ``MAX_LINE_BYTES`` at a time; None for a longer one
    (skipped whole, never held in memory)."""
    while True:
        raw = f.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = f.readline(MAX_LINE_BYTES)
            yield None
            continue
        yield raw


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    x = float(text)
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    return x


def read_events(path: Path, warnings: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """Events of one log; a corrupt, truncated or overlong line is skipped (with a warning), never
    fatal. Only a regular file is read (OSError otherwise): a FIFO named like a log would block
    forever, a link to ``/dev/zero`` would be read until memory runs out."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "it is not a regular file")
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        for n, raw in enumerate(_lines(f), 1):
            if raw is None:
                if warnings is not None:
                    warnings.append(f"{path.name}: line {n} is too long and was skipped")
                continue
            try:
                d = json.loads(raw.decode("utf-8", "surrogateescape"), parse_constant=_no_constant,
                               parse_float=_finite)
                if not isinstance(d, dict):
                    raise ValueError("not an object")
            except (ValueError, RecursionError):  # damaged, nested thousands deep, NaN or 1e400
                if warnings is not None:
                    warnings.append(f"{path.name}: line {n} is damaged and was skipped")
                continue
            yield d
