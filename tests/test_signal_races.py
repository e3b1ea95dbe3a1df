"""Signals at the unlucky instants: while a temporary file exists but is not yet renamed into
place or removed, while the modules load, and when the terminal closes (SIGHUP).

Real processes and real signals only. To hit a window every time instead of now and then, the
child runs with a ``sitecustomize`` (on its PYTHONPATH, the test's own file, nothing of
agentcli's patched): it counts the calls that open and close those windows, at the standard
library's boundary (``tempfile.mkstemp`` / ``mkdtemp`` and ``os.fsync`` / ``mkdir`` just after
they return; ``os.replace`` / ``link`` / ``unlink`` / ``rmdir`` and ``shutil.rmtree`` just before
they run) and, at the Nth of them, sends the process a real signal (``os.kill`` to itself). A
first run without a signal counts the instants; then one run per instant, each with a signal
(SIGINT, SIGTERM and SIGHUP in turn), and each must end with that signal's exit code and one line, no traceback, and leave the
folder as it was or as it is meant to be, with no temporary file. The same hook can send a
signal as a given module starts to import (the load before typer runs, a command's module
that ``get_command`` imports).

The runs of one test are started together (a few at a time): each is a short process.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from agentcli.drafts.store import Draft, DraftStore
from tests.conftest import agentcli_exe, clean_env

pytestmark = pytest.mark.slow  # real processes

GUARD_S = 40  # only a hang reaches this
AT_ONCE = 6  # processes of one test running at the same time

EXPECT = {signal.SIGINT: (130, "agentcli: interrupted"),
          signal.SIGTERM: (143, "agentcli: terminated (SIGTERM)"),
          signal.SIGHUP: (129, "agentcli: hung up (SIGHUP)")}
SIGNALS = tuple(EXPECT)

_HOOK = r'''
import os, signal
_at = os.environ.get("RACE_AT")
if _at:
    import atexit, shutil, sys, tempfile
    _kind, _where, _name = _at.split(":")
    _sig = getattr(signal, _name)
    if _kind == "import":
        class _Finder:
            @staticmethod
            def find_spec(name, path=None, target=None):
                if name == _where:
                    sys.meta_path.remove(_Finder)
                    os.kill(os.getpid(), _sig)
                return None
        sys.meta_path.insert(0, _Finder)
    else:
        _n, _seen = int(_where), []
        def _tick(what):
            _seen.append(what)
            if len(_seen) == _n:
                os.kill(os.getpid(), _sig)
        def _hook(mod, name, after):
            real = getattr(mod, name)
            def hooked(*a, **k):
                if not after:
                    _tick(name)
                r = real(*a, **k)
                if after:
                    _tick(name)
                return r
            setattr(mod, name, hooked)
        for mod, name, after in ((tempfile, "mkstemp", True), (tempfile, "mkdtemp", True),
                                 (os, "fsync", True), (os, "mkdir", True),
                                 (os, "replace", False), (os, "link", False),
                                 (os, "unlink", False), (os, "rmdir", False),
                                 (shutil, "rmtree", False)):
            _hook(mod, name, after)
        if os.environ.get("RACE_LOG"):
            def _log():
                with open(os.environ["RACE_LOG"], "w") as f:
                    f.write(" ".join(_seen))
            atexit.register(_log)
'''


def _hooked(env: dict[str, str], hook_dir: Path, at: str, **extra: str) -> dict[str, str]:
    hook_dir.mkdir(exist_ok=True)
    (hook_dir / "sitecustomize.py").write_text(_HOOK)
    path = os.pathsep.join(p for p in (str(hook_dir), env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, "RACE_AT": at, **extra}


class Attempt:
    def __init__(self, label: str, args: list[str], env: dict[str, str], base: Path):
        self.label, self.args, self.env, self.base = label, args, env, base
        self.sig = 0  # the signal it gets, when it gets one
        self.rc: int | None = None
        self.err = ""


def _run_all(attempts: list[Attempt]) -> None:
    """Run every attempt to its end, AT_ONCE at a time (each waited for with the guard)."""
    todo = list(attempts)
    running: list[tuple[Attempt, subprocess.Popen]] = []
    give_up = time.monotonic() + GUARD_S
    try:
        while todo or running:
            while todo and len(running) < AT_ONCE:
                a = todo.pop(0)
                errf = open(a.base / "stderr.txt", "wb")
                p = subprocess.Popen([agentcli_exe(), *a.args], env=a.env, cwd=a.base,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=errf)
                errf.close()
                running.append((a, p))
            a, p = running.pop(0)
            p.wait(timeout=max(1.0, give_up - time.monotonic()))
            a.rc, a.err = p.returncode, (a.base / "stderr.txt").read_text(errors="replace")
    finally:
        for _, p in running:
            p.kill()
            p.wait()


def _count_instants(args: list[str], env: dict[str, str], base: Path) -> list[str]:
    log = base / "instants.txt"
    p = subprocess.run([agentcli_exe(), *args], env={**env, "RACE_LOG": str(log)}, cwd=base,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=GUARD_S)
    assert p.returncode == 0, p.stderr.decode()
    return log.read_text().split()


def _draft(ddir: Path, status: str | None = None) -> str:
    d, _ = DraftStore(ddir).save(
        text="Hello,\n\nyour order GH56JK78MN is waiting for its payment.\n\nKind regards",
        ticket="ZD-7000", order_code="GH56JK78MN", customer="customer@example.com",
        questions=["Customer asks: where is my order GH56JK78MN?"], provider="offline",
        mode="workflow")
    if status:
        DraftStore(ddir).set_status(d.id, status, reviewer="lead")
    return d.id


def _junk(*folders: Path) -> list[str]:
    """What a window left: temporary files (``.tmp-``, ``.export-``, probes), edit copies."""
    out = []
    for folder in folders:
        if not folder.exists():
            continue
        for p in folder.rglob("*"):
            n = p.name
            if (n.startswith((".tmp-", ".export-", ".agentcli-probe-", "agentcli-edit-"))
                    or n.endswith(".replaced")):
                out.append(str(p.relative_to(folder)))
    return out


def _signalled(a: Attempt, sig: int) -> str | None:
    """What is wrong with an attempt that got ``sig``, or None."""
    code, said = EXPECT[sig]
    if a.rc != code:
        return f"exit {a.rc}, not {code}: {a.err.strip()[-300:]!r}"
    if "Traceback" in a.err or said not in a.err:
        return f"said {a.err.strip()[-300:]!r}"
    lines = [ln for ln in a.err.splitlines() if ln.strip()]
    if lines[-1:] != [ln for ln in lines if ln.startswith(said)][-1:]:
        return f"the signal's line is not the last: {a.err!r}"
    return None


def _races(tmp_path: Path, demo_db: Path, args: list[str], prepare, check, *,
           signals=SIGNALS, extra_env=None) -> list[str]:
    """Run ``args`` once to count its instants, then once per instant with a signal (SIGINT,
    SIGTERM and SIGHUP in turn), each in a folder of its own made by ``prepare(base)``; ``check(base, attempt)`` says what is
    wrong with the state it left (or None). Returns every problem found."""
    hook = tmp_path / "hook"

    def env_for(base: Path, at: str) -> dict[str, str]:
        env = clean_env(base / "home", demo_db, AGENTCLI_DRAFTS_DIR=str(base / "drafts"),
                        COLUMNS="200", AGENTCLI_PROVIDER="offline", TMPDIR=str(base / "tmp"))
        (base / "tmp").mkdir(exist_ok=True)
        env.update(extra_env(base) if extra_env else {})
        return _hooked(env, hook, at)

    base0 = tmp_path / "count"
    base0.mkdir()
    prepare(base0)
    instants = _count_instants(args, env_for(base0, "file:0:SIGINT"), base0)
    assert instants, "nothing to race: the command opened no window"
    attempts = []
    for n in range(1, len(instants) + 1):
        sig = signals[(n - 1) % len(signals)]  # the three in turn: a third of the processes
        name = signal.Signals(sig).name
        base = tmp_path / f"at{n}-{name}"
        base.mkdir()
        prepare(base)
        a = Attempt(f"{name} at {instants[n - 1]} (#{n})", args,
                    env_for(base, f"file:{n}:{name}"), base)
        a.sig = sig
        attempts.append(a)
    _run_all(attempts)
    problems = []
    for a in attempts:
        why = _signalled(a, a.sig) or check(a.base, a)
        junk = _junk(a.base / "drafts", a.base / "tmp", a.base / "home", a.base / "out")
        if junk:
            why = (why + "; " if why else "") + f"left {junk}"
        if why:
            problems.append(f"{a.label}: {why}")
    return problems


# --------------------------------------------------------------------------- the windows

def _one_draft_state(base: Path, status: str | None = None) -> None:
    _draft(base / "drafts", status)


def _draft_is(base: Path, statuses: set[str]) -> str | None:
    items = list(DraftStore(base / "drafts").iter())
    drafts = [d for d in items if isinstance(d, Draft)]
    if len(items) != 1 or len(drafts) != 1:
        return f"the drafts folder holds {items}"
    st = drafts[0].meta.get("status")
    return None if st in statuses else f"the draft is {st}"


def test_a_signal_at_any_instant_of_a_drafts_save_leaves_the_old_draft_or_the_new(tmp_path, demo_db):
    problems = _races(tmp_path, demo_db, ["drafts", "approve", "last"], _one_draft_state,
                      lambda base, a: _draft_is(base, {"pending_review", "approved"}))
    assert problems == [], "\n".join(problems)


def test_a_signal_at_any_instant_of_an_export_leaves_no_file_or_a_whole_one(tmp_path, demo_db):
    def prepare(base: Path) -> None:
        _one_draft_state(base, "approved")
        (base / "out").mkdir()

    def check(base: Path, a: Attempt) -> str | None:
        out = base / "out" / "approved.jsonl"
        if out.exists():
            recs = [json.loads(x) for x in out.read_text().splitlines()]  # every line whole
            if len(recs) != 1:
                return f"the export holds {len(recs)} records"
        return _draft_is(base, {"approved"})

    problems = _races(tmp_path, demo_db, ["drafts", "export", "--to", "jsonl", "--output",
                                          "out/approved.jsonl"], prepare, check)
    assert problems == [], "\n".join(problems)


def test_a_signal_at_any_instant_of_the_folder_checks_leaves_no_probe_and_no_folder(tmp_path,
                                                                                    demo_db):
    # doctor tries every folder for real: a probe file written, read and removed; the drafts
    # and sessions folders created only to be probed are removed again
    def check(base: Path, a: Attempt) -> str | None:
        left = sorted(p.name for p in (base / "home").iterdir())
        return None if "sessions" not in left else f"left the folder it only probed: {left}"

    problems = _races(tmp_path, demo_db, ["doctor"], lambda base: (base / "drafts").mkdir(),
                      check)
    assert problems == [], "\n".join(problems)


def test_a_signal_at_any_instant_of_drafts_edit_leaves_no_copy_of_the_draft(tmp_path, demo_db):
    editor = tmp_path / "editor"
    editor.write_text("#!/bin/sh\nprintf 'Hello,\\n\\nedited by hand.\\n' > \"$1\"\n")
    editor.chmod(0o755)

    def check(base: Path, a: Attempt) -> str | None:
        why = _draft_is(base, {"pending_review"})
        if why is None and list((base / "tmp").iterdir()):
            why = f"left {list((base / 'tmp').iterdir())} in TMPDIR"
        return why

    problems = _races(tmp_path, demo_db, ["drafts", "edit", "last"], _one_draft_state, check,
                      extra_env=lambda base: {"EDITOR": str(editor), "VISUAL": ""})
    assert problems == [], "\n".join(problems)


# --------------------------------------------------------------------------- the modules loading

@pytest.mark.parametrize("module", ["typer", "agentcli.cli.drafts"])
def test_a_signal_while_the_modules_load_says_one_line_and_exits_with_its_code(tmp_path, demo_db,
                                                                               module):
    # "typer": before typer runs at all; "agentcli.cli.drafts": the command's module, imported
    # by get_command once typer has parsed the command line
    hook = tmp_path / "hook"
    attempts = []
    for sig in SIGNALS:
        base = tmp_path / signal.Signals(sig).name
        base.mkdir()
        env = clean_env(base / "home", demo_db, AGENTCLI_DRAFTS_DIR=str(base / "drafts"))
        a = Attempt(signal.Signals(sig).name, ["drafts", "list"],
                    _hooked(env, hook, f"import:{module}:{signal.Signals(sig).name}"), base)
        a.sig = sig
        attempts.append(a)
    _run_all(attempts)
    assert [f"{a.label}: {_signalled(a, a.sig)}" for a in attempts if _signalled(a, a.sig)] == []


# --------------------------------------------------------------------------- SIGHUP

def _wait(cond, what: str) -> None:
    give_up = time.monotonic() + GUARD_S
    while not cond():
        if time.monotonic() > give_up:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.02)


def _session_lines(home: Path) -> list[dict]:
    d = home / "sessions"
    logs = sorted(d.glob("*.jsonl")) if d.exists() else []
    return [json.loads(x) for p in logs for x in p.read_text().splitlines()]  # each line whole


def _finished(home: Path) -> int:
    try:
        return sum(r.get("type") == "turn_finished" for r in _session_lines(home))
    except ValueError:  # a line being written
        return 0


def test_sighup_ends_batch_with_129_and_keeps_the_records(cli_env, home, tmp_path):
    out = tmp_path / "records.jsonl"
    proc = subprocess.Popen([agentcli_exe(), "batch", "-", "-o", str(out)],
                            env={**cli_env, "AGENTCLI_PROVIDER": "offline"},
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        proc.stdin.write(b"".join(b"Where is GH56JK78MN? (ticket %d)\n" % i for i in range(3)))
        proc.stdin.flush()  # and kept open: batch waits for more
        _wait(lambda: out.exists() and out.read_bytes().count(b"\n") >= 3, "three records")
        proc.send_signal(signal.SIGHUP)
        err = proc.stderr.read().decode()
        rc = proc.wait(timeout=GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
    assert rc == 129, err
    assert "agentcli: hung up (SIGHUP)" in err and "Traceback" not in err
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(recs) == 3 and all(r["status"] == "ok" for r in recs)


def test_sighup_ends_ask_and_chat_with_129_and_keeps_what_was_answered(cli_env, home, drafts_dir):
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    chat = subprocess.Popen([agentcli_exe(), "chat"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ask = subprocess.Popen([agentcli_exe(), "ask", "-"], env=env, stdin=subprocess.PIPE,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        chat.stdin.write(b"Customer asks: where is my order GH56JK78MN?\n")
        chat.stdin.flush()  # and kept open: the next question never comes
        ask.stdin.write(b"Where is GH56JK78MN?")  # kept open: ask waits for the end of it
        ask.stdin.flush()
        _wait(lambda: _finished(home) >= 1, "chat's first turn")
        results = {}
        for name, proc in (("chat", chat), ("ask", ask)):
            proc.send_signal(signal.SIGHUP)
            err = proc.stderr.read().decode()
            results[name] = (proc.wait(timeout=GUARD_S), err)
    finally:
        for proc in (chat, ask):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdin.close()
    for name, (rc, err) in results.items():
        assert rc == 129, (name, err)
        assert "agentcli: hung up (SIGHUP)" in err and "Traceback" not in err, (name, err)
    assert _finished(home) == 1 and _junk(drafts_dir, home) == []


def _on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    """``agentcli ARGS`` on a terminal of its own (a pty it controls, as in a terminal window):
    (process, the terminal's master end). Closing the master closes the window: the kernel
    hangs the terminal up and sends the process SIGHUP."""
    master, slave = pty.openpty()
    import fcntl
    import termios

    def controlling() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([agentcli_exe(), *args], env={**env, "TERM": "xterm"}, stdin=slave,
                            stdout=slave, stderr=slave, preexec_fn=controlling, close_fds=True)
    os.close(slave)
    return proc, master


def _read_until(master: int, text: bytes) -> bytes:
    seen = b""
    give_up = time.monotonic() + GUARD_S
    while text not in seen:
        left = give_up - time.monotonic()
        assert left > 0, f"never shown: {text!r} (shown: {seen[-500:]!r})"
        if select.select([master], [], [], left)[0]:
            try:
                seen += os.read(master, 65536)
            except OSError:
                break
    return seen


@pytest.mark.parametrize("args", [["review"], []], ids=["review", "agentcli"])
def test_closing_the_terminal_ends_the_command_with_129_and_loses_nothing(cli_env, home,
                                                                          drafts_dir, args):
    did = _draft(drafts_dir)
    env = {**cli_env, "AGENTCLI_PROVIDER": "offline"}
    proc, master = _on_a_terminal(args, env)
    try:
        if args == ["review"]:
            _read_until(master, b"quit")  # the draft is on screen, claimed for this reviewer
            assert (drafts_dir / ".claims" / did).exists()
        else:
            _read_until(master, b"offline")  # the banner: the REPL is up
            os.write(master, b"Customer asks: where is my order GH56JK78MN?\r")
            _wait(lambda: _finished(home) >= 1, "the first turn")
    finally:
        os.close(master)  # the window closes
        try:
            rc = proc.wait(timeout=GUARD_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert rc == 129
    if args == ["review"]:
        # the claim is let go at once (a teammate need not wait for it to expire), the draft
        # is as it was
        assert not (drafts_dir / ".claims" / did).exists()
        assert DraftStore(drafts_dir).get(did).meta["status"] == "pending_review"
    else:
        assert _finished(home) == 1
    assert _junk(drafts_dir, home) == []
