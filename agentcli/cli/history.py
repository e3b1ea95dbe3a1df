"""The REPL's prompt: a prompt_toolkit session with a redacting, bounded history file.

prompt_toolkit is imported only inside these functions.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.keys import Keys

from ..config import state_dir
from ..errors import signals_held
from ..redact import redact


def history_file() -> Path:
    """The REPL's input history: ``state_dir() / 'history'`` (owner-only)."""

    return state_dir() / "history"


# Questions kept in the history file: enough to recall a week of tickets, and a bound on how
# much customer text sits on disk and is read at every REPL start.
HISTORY_LIMIT = 1000
# prompt_toolkit's FileHistory format: each entry is "\n# <time>\n" then its lines, each "+"-prefixed,
# so a line starting with "# " always opens an entry.
_ENTRY_START = re.compile(rb"(?:^|\n)# [^\n]*\n")


def trim_history_file(path: Path, keep: int = HISTORY_LIMIT) -> int:
    """Drop all but the newest ``keep`` entries of the history file; returns how many were dropped.

    The file is replaced atomically (owner-only). An entry another REPL appends between the read
    and the replace can be lost: it is input history, and the next start trims again.
    """
    keep = max(0, keep)
    path = path.resolve()  # a symlinked history file stays a symlink: trim its target
    try:
        data = path.read_bytes()
    except OSError:
        return 0
    starts = [m.start() for m in _ENTRY_START.finditer(data)]
    if len(starts) <= keep:
        return 0
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with signals_held():  # the history is replaced or left as it was: never a .tmp left beside it
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data[starts[-keep]:] if keep > 0 else b"")
            os.replace(tmp, path)
        except OSError:
            try:
                tmp.unlink()
            except OSError:
                pass
            return 0
    return len(starts) - keep


def _redacting_file_history(path: Path) -> Any:
    class RedactingFileHistory(FileHistory):
        """A history file that never keeps a secret someone pasted by mistake."""

        def store_string(self, string: str) -> None:
            super().store_string(redact(string))

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    else:
        trim_history_file(path)
    return RedactingFileHistory(str(path))


def _completer(commands: dict[str, str]) -> Any:
    class SlashCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Any:
            text = document.text_before_cursor
            if not text.startswith("/") or " " in text or "\n" in text:
                return
            for name, meta in commands.items():
                if name.startswith(text.lower()):
                    yield Completion(name, start_position=-len(text), display_meta=meta)

    return SlashCompleter()


# A paste without bracketed paste (older terminals, web consoles, ``tmux paste-buffer`` without
# -p) arrives as keystrokes: its Enters are followed by more keys at once or within a few
# milliseconds, which no person types. Such an Enter is a newline of the same question.
PASTE_GAP_S = 0.03


# What prompt_toolkit's input parser takes for a terminal's mouse report: ESC [ M and three
# bytes, or ESC [ digits and semicolons then M or m. Mouse reporting is never turned on at our
# prompt, so such bytes were pasted or typed: "Hi \x1b[31mthere" (a colour code from a copied
# terminal line) would reach prompt_toolkit's mouse handler, which raises on it (a traceback,
# "Press ENTER to continue..." and the rest of the question lost). Ours keeps the question:
# the sequence itself is dropped, the bytes after ESC [ M are kept as the text they were.
_X10_MOUSE = re.compile(r"\x1b\[M(.{3})\Z", re.S)


def _pasted_mouse_report(event: Any) -> None:
    m = _X10_MOUSE.match(event.data or "")
    if m:
        event.current_buffer.insert_text("".join(c for c in m.group(1) if c.isprintable()))


def pasted_text_bindings() -> Any:
    """Key bindings every prompt of ours has (the REPL's, its yes/no question's)."""
    kb = KeyBindings()
    kb.add(Keys.Vt100MouseEvent)(_pasted_mouse_report)
    return kb


def _key_bindings(pressed: list[int]) -> Any:
    kb = KeyBindings()
    kb.add(Keys.Vt100MouseEvent)(_pasted_mouse_report)

    @kb.add("escape", "enter")
    def _newline(event: Any) -> None:
        """Esc-Enter / Alt-Enter: a newline inside the question (Enter sends it)."""
        event.current_buffer.insert_text("\n")

    @kb.add("enter")
    def _enter(event: Any) -> None:
        """Enter sends the question, unless more keys follow it at once (a paste)."""
        buf = event.current_buffer
        if event.key_processor.input_queue:  # more keys came with this one
            buf.insert_text("\n")
            return
        seen = pressed[0]
        buf.insert_text("\n")  # for now: taken back if nothing follows within PASTE_GAP_S

        def decide() -> None:
            if pressed[0] != seen or not event.app.is_running or event.app.is_done:
                return  # more keys arrived: part of a paste, the newline stays
            if buf.document.char_before_cursor == "\n":
                buf.delete_before_cursor(1)
            buf.validate_and_handle()


        asyncio.get_running_loop().call_later(PASTE_GAP_S, decide)

    return kb


def build_session(*, input: Any = None, output: Any = None, history_path: Path | None = None,
                  history: Any = None, commands: dict[str, str] | None = None) -> Any:
    """The REPL's ``PromptSession``: persistent history, auto-suggest, completion, paste."""

    if history is None:
        history = _redacting_file_history(history_path) if history_path else InMemoryHistory()
    pressed = [0]  # key presses seen so far: tells a paste's Enter from a person's
    session = PromptSession(
        history=history, auto_suggest=AutoSuggestFromHistory(), completer=_completer(commands or {}),
        complete_while_typing=True, key_bindings=_key_bindings(pressed), multiline=False,
        prompt_continuation=lambda width, line_number, wrap_count: "… ".rjust(width),
        enable_suspend=True, input=input, output=output)

    def count(_: Any) -> None:
        pressed[0] += 1

    session.app.key_processor.before_key_press += count
    return session
