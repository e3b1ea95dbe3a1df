"""Batch input: one question per non-empty line, read lazily, detected per line.

- plain text: the line is the question; its id is the line number;
- JSON Lines: ``{"id": ..., "question": ..., "customer": ...}`` (``id`` defaults to the line
  number, ``customer`` to ``--customer``); a line that starts with ``{`` but is not such an
  object becomes an error record for that line, and the batch goes on.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, AsyncIterator, Callable

from ..errors import UsageError
from ..lines import FdLines, ThreadCaller
from ..vocab import check_question, customer_address

# A line may hold a 100,000-character question written as JSON \uXXXX escapes (6 bytes each);
# longer lines are input errors (and the question itself is checked against 100,000 characters).
MAX_LINE_BYTES = 600_129
INPUT_ERROR = "invalid_input"  # stop_reason of a record for a malformed input line


@dataclass(slots=True)
class Item:
    """One question of the input (or the error of one input line)."""
    line: int                  # 1-based line number in the input
    id: Any                    # the JSONL id, or the line number
    question: str | None = None
    customer: str | None = None
    error: str | None = None   # the line could not be used: becomes an error record
    error_kind: str = INPUT_ERROR  # that record's stop_reason
    id_given: bool = False     # the line named its id (else ``id`` is the line number)


def id_key(value: Any) -> str:
    """How ids compare for --resume: 7 and "7" are the same question."""
    return value if isinstance(value, str) else json.dumps(value)


def parse_line(line_no: int, raw: str) -> Item | None:
    """One input line -> an Item (None for a blank line)."""
    text = raw.strip()
    if text.startswith("\ufeff"):  # a byte-order mark must not hide a JSON line's "{"
        text = text[1:].lstrip()
    if not text:
        return None
    if not text.startswith("{"):
        try:
            return Item(line_no, line_no, check_question(text))
        except UsageError as e:
            return Item(line_no, line_no, error=f"line {line_no}: {e.message}")
    try:
        obj = json.loads(text)
    except RecursionError:  # arrays or objects nested thousands deep, well under the size limit
        return Item(line_no, line_no, error=f"line {line_no}: the JSON is nested too deeply; "
                                            "expected {\"id\", \"question\", \"customer\"}")
    except ValueError as e:
        return Item(line_no, line_no, error=f"line {line_no}: not valid JSON ({e.msg} at column "
                                            f"{e.colno}); expected {{\"id\", \"question\", \"customer\"}}")
    if not isinstance(obj, dict):
        return Item(line_no, line_no, error=f"line {line_no}: expected a JSON object")
    qid = obj.get("id")
    if qid is None:
        qid = line_no
    elif isinstance(qid, bool) or not isinstance(qid, (str, int)) or (isinstance(qid, str) and not qid.strip()):
        # a blank id ("   ") would be the line's ticket: refused as a blank --ticket is
        return Item(line_no, line_no, error=f"line {line_no}: \"id\" must be a non-empty string "
                                            "or an integer")
    q = obj.get("question")
    if not isinstance(q, str):
        return Item(line_no, qid, error=f"line {line_no}: \"question\" must be a string")
    cust = obj.get("customer")
    if cust is not None and not isinstance(cust, str):
        return Item(line_no, qid, error=f"line {line_no}: \"customer\" must be a string or null")
    try:
        q = check_question(q)
    except UsageError as e:
        return Item(line_no, qid, error=f"line {line_no}: {e.message}")
    given = "id" in obj and obj["id"] is not None
    if cust is None:
        return Item(line_no, qid, q, id_given=given)
    try:
        return Item(line_no, qid, q, customer_address(cust), id_given=given)
    except ValueError as e:
        return Item(line_no, qid, error=f"line {line_no}: \"customer\" {e}")


class LineSource:
    """Reads the input line by line; pipes and terminals are read in a thread (they may block)."""

    def __init__(self, f: IO[bytes], name: str):
        self.f = f
        self.name = name
        try:
            self.regular = stat.S_ISREG(os.fstat(f.fileno()).st_mode)
        except (OSError, ValueError, AttributeError):
            self.regular = False
        # A pipe or terminal is read in a thread, straight from the descriptor: a thread parked
        # in a buffered file's readline holds its lock and aborts the interpreter at exit.
        self.readline: Callable[[int], bytes] = f.readline if self.regular else FdLines(f.fileno()).readline
        self.line_no = 0

    @classmethod
    def open(cls, path: str | None) -> "LineSource":
        if path is None or path == "-":
            if sys.stdin is None:
                raise UsageError("standard input is closed: pass the questions as a FILE")
            return cls(sys.stdin.buffer, "standard input")
        try:
            f = open(path, "rb")
            if stat.S_ISDIR(os.fstat(f.fileno()).st_mode):
                f.close()
                raise IsADirectoryError(21, "is a directory")
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        return cls(f, str(path))

    def count_items(self) -> int | None:
        """How many non-blank lines a regular file holds (None for a pipe): the progress total."""
        if not self.regular:
            return None
        try:
            with open(self.f.fileno(), "rb", closefd=False) as g:
                pos = self.f.tell()
                g.seek(pos)
                n = sum(1 for ln in g if ln.strip())
                self.f.seek(pos)
            return n
        except OSError:
            return None

    def _readline(self) -> tuple[int, str] | None:
        """The next line (number, text), or None at the end; overlong lines are cut and flagged."""
        raw = self.readline(MAX_LINE_BYTES)
        if not raw:
            return None
        self.line_no += 1
        if len(raw) >= MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while True:  # skip the rest of the line without holding it
                more = self.readline(1 << 16)
                if not more or more.endswith(b"\n"):
                    break
            return self.line_no, "\x00too-long"
        return self.line_no, raw.decode("utf-8", errors="replace")

    async def items(self) -> AsyncIterator[Item]:
        reader = None if self.regular else ThreadCaller("agentcli-batch-input")
        while True:
            try:
                got = self._readline() if reader is None else await reader.call(self._readline)
            except OSError as e:
                raise UsageError(f"cannot read {self.name}: {e.strerror or e}") from None
            if got is None:
                return
            n, text = got
            if text == "\x00too-long":
                yield Item(n, n, error=f"line {n}: the line is too long (the limit is 100000 characters)")
                continue
            item = parse_line(n, text)
            if item is not None:
                yield item

    def same_file(self, path: Path) -> bool:
        """Whether ``path`` is this input (``--output`` onto the input would read its own records)."""
        try:
            a, b = os.fstat(self.f.fileno()), os.stat(path)
        except (OSError, ValueError, AttributeError):
            return False
        return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)

    def close(self) -> None:
        if self.f is not sys.stdin.buffer:
            self.f.close()
