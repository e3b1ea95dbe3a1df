"""Issue 24 item 3: signals are obeyed whatever the reader of the output does, and an editor
never outlives the command that started it.

Real processes only: the point is a real pipe that nobody reads (its buffer shrunk to one page
with F_SETPIPE_SZ, so it fills at once), a FIFO opened by nobody's reader, real signals and the
exit status a shell sees. The offline provider answers (no model), so the questions are many
and quick. Nothing here asserts a duration: a test waits for the process with a generous
guard (a hang fails it), and bench/bench_reliability.py measures the times.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import agentcli_exe

pytestmark = pytest.mark.slow  # real processes, seconds of work each

GUARD_S = 40  # only a hang reaches this


def _offline(cli_env: dict[str, str]) -> dict[str, str]:
    return {**cli_env, "AGENTCLI_PROVIDER": "offline"}


def _stalled_pipe() -> tuple[int, int]:
    """(read end, write end) of a pipe of one page that the test never reads."""
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
    return r, w


def _sessions(home: Path) -> int:
    d = home / "sessions"
    return len(list(d.glob("*.jsonl"))) if d.exists() else 0


def _wait_until_stalled(proc: subprocess.Popen, count, *, at_least: int) -> None:
    """Until ``count()`` (work done so far) is at least ``at_least`` and has not grown for a
    second: the process is blocked on its output."""
    give_up = time.monotonic() + GUARD_S
    last, since = -1, time.monotonic()
    while time.monotonic() < give_up:
        assert proc.poll() is None, "the process ended before it could be signalled"
        n = count()
        if n != last:
            last, since = n, time.monotonic()
        elif n >= at_least and time.monotonic() - since > 1.0:
            return
        time.sleep(0.1)
    raise AssertionError(f"never stalled (work done: {last})")


def _finish(proc: subprocess.Popen, sig: int) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(timeout=GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _questions(tmp_path: Path, n: int = 3000) -> Path:
    f = tmp_path / "q.txt"
    f.write_text("".join(f"Where is GH56JK78MN? (ticket {i})\n" for i in range(n)))
    return f


@pytest.mark.parametrize("sig,code,said", [(signal.SIGTERM, 143, "terminated"),
                                           (signal.SIGINT, 130, "interrupted")])
def test_a_batch_into_a_pipe_nobody_reads_obeys_the_signal(cli_env, home, tmp_path, sig, code,
                                                          said):
    r, w = _stalled_pipe()
    out = tmp_path / "records.jsonl"
    err = tmp_path / "err.txt"
    try:
        with open(err, "wb") as ferr:
            proc = subprocess.Popen([agentcli_exe(), "batch", str(_questions(tmp_path)), "-o",
                                     str(out)], env=_offline(cli_env), stdin=subprocess.DEVNULL,
                                    stdout=w, stderr=ferr)
        _wait_until_stalled(proc, lambda: out.read_bytes().count(b"\n") if out.exists() else 0,
                            at_least=8)
        rc = _finish(proc, sig)
    finally:
        os.close(w)
    text = err.read_text()
    assert rc == code, text
    assert said in text and "Traceback" not in text
    recs = [json.loads(x) for x in out.read_text().splitlines()]  # every line whole
    assert len(recs) >= 8 and all(r["status"] == "ok" for r in recs)
    printed = os.read(r, 1 << 16).decode().splitlines()
    os.close(r)
    assert printed and all(json.loads(x)["status"] == "ok" for x in printed[:-1])


def test_a_batch_into_a_fifo_nobody_reads_obeys_sigterm(cli_env, home, tmp_path):
    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)
    keep = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader that never reads
    fcntl.fcntl(keep, fcntl.F_SETPIPE_SZ, 4096)
    err = tmp_path / "err.txt"
    try:
        with open(err, "wb") as ferr:
            proc = subprocess.Popen([agentcli_exe(), "batch", str(_questions(tmp_path)), "-o",
                                     str(fifo)], env=_offline(cli_env), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=ferr)
        _wait_until_stalled(proc, lambda: _sessions(home), at_least=8)
        rc = _finish(proc, signal.SIGTERM)
    finally:
        os.close(keep)
    text = err.read_text()
    assert rc == 143, text
    assert "terminated" in text and "Traceback" not in text


def test_chat_on_a_pipe_nobody_reads_obeys_sigterm(cli_env, home, tmp_path):
    r, w = _stalled_pipe()
    err = tmp_path / "err.txt"
    try:
        with open(_questions(tmp_path)) as fin, open(err, "wb") as ferr:
            proc = subprocess.Popen([agentcli_exe(), "chat"], env=_offline(cli_env), stdin=fin,
                                    stdout=w, stderr=ferr)
            _wait_until_stalled(proc, lambda: err.stat().st_size, at_least=1)
            rc = _finish(proc, signal.SIGTERM)
    finally:
        os.close(w)
        os.close(r)
    text = err.read_text()
    assert rc == 143, text
    assert "terminated (SIGTERM)" in text and "Traceback" not in text


def test_ask_with_a_long_answer_into_a_pipe_nobody_reads_obeys_sigterm(anthropic_env,
                                                                       fake_anthropic, home,
                                                                       tmp_path):
    from agentcli.testing import fake_anthropic as fa

    fake_anthropic.queue(fa.text("All good. " * 3000))  # 30 KB: far more than the pipe holds
    r, w = _stalled_pipe()
    err = tmp_path / "err.txt"

    def answered() -> int:
        logs = list((home / "sessions").glob("*.jsonl")) if (home / "sessions").exists() else []
        return sum("turn_finished" in p.read_text(errors="replace") for p in logs)

    try:
        with open(err, "wb") as ferr:
            proc = subprocess.Popen([agentcli_exe(), "ask", "Where is GH56JK78MN?"],
                                    env=anthropic_env, stdin=subprocess.DEVNULL, stdout=w,
                                    stderr=ferr)
        _wait_until_stalled(proc, answered, at_least=1)
        rc = _finish(proc, signal.SIGTERM)
    finally:
        os.close(w)
        os.close(r)
    text = err.read_text()
    assert rc == 143, text
    assert "terminated (SIGTERM)" in text and "Traceback" not in text


# --------------------------------------------------------------------------- the editor

def _editor(tmp_path: Path) -> tuple[Path, Path]:
    """An "editor" that writes its pid and waits (a person who has not finished)."""
    pid_file = tmp_path / "editor.pid"
    script = tmp_path / "slow-editor"
    script.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    script.chmod(0o755)
    return script, pid_file


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie waiting for its parent (pytest, once agentcli has gone) is not running
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _one_draft(cli_env: dict[str, str]) -> None:
    p = subprocess.run([agentcli_exe(), "ask", "Customer asks: where is my order GH56JK78MN?"],
                       env=_offline(cli_env), capture_output=True, timeout=GUARD_S)
    assert p.returncode == 0, p.stderr


def _wait_for(path: Path) -> int:
    give_up = time.monotonic() + GUARD_S
    while time.monotonic() < give_up:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError("the editor never started")


@pytest.mark.parametrize("sig,code,said", [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                           (signal.SIGHUP, 129, "hung up (SIGHUP)")])
def test_a_signal_stops_drafts_edit_and_its_editor_and_removes_the_copy(cli_env, drafts_dir,
                                                                         tmp_path, sig, code,
                                                                         said):
    _one_draft(cli_env)
    before = {p.name: p.read_bytes() for p in drafts_dir.glob("*.md")}
    editor, pid_file = _editor(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**cli_env, "EDITOR": str(editor), "VISUAL": "", "TMPDIR": str(tmp)}
    proc = subprocess.Popen([agentcli_exe(), "drafts", "edit", "last"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    pid = _wait_for(pid_file)
    assert [p.name.startswith("agentcli-edit-") for p in tmp.iterdir()] == [True]
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=GUARD_S)
    assert proc.returncode == code, err
    assert said in err.decode() and "temporary copy of the draft removed" in err.decode()
    assert not _alive(pid)  # the editor did not outlive agentcli
    assert list(tmp.iterdir()) == []  # the draft's text is not left behind
    assert {p.name: p.read_bytes() for p in drafts_dir.glob("*.md")} == before


def test_ctrl_c_belongs_to_the_editor_while_it_runs(cli_env, drafts_dir, tmp_path):
    # vi uses Ctrl-C to cancel a command: it must not kill the editing session (as git)
    _one_draft(cli_env)
    editor, pid_file = _editor(tmp_path)
    proc = subprocess.Popen([agentcli_exe(), "drafts", "edit", "last"],
                            env={**cli_env, "EDITOR": str(editor), "VISUAL": ""},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    pid = _wait_for(pid_file)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert proc.poll() is None and _alive(pid)
    assert _finish(proc, signal.SIGTERM) == 143
    assert not _alive(pid)


def test_sigterm_during_reviews_edit_stops_the_editor(cli_env, drafts_dir, tmp_path):
    pexpect = pytest.importorskip("pexpect")
    _one_draft(cli_env)
    editor, pid_file = _editor(tmp_path)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**cli_env, "EDITOR": str(editor), "VISUAL": "", "TMPDIR": str(tmp)}
    child = pexpect.spawn(agentcli_exe(), ["review"], env=env, encoding="utf-8", timeout=GUARD_S,
                          dimensions=(50, 160))
    try:
        child.expect("quit")
        child.send("e")
        pid = _wait_for(pid_file)
        child.kill(signal.SIGTERM)
        child.expect(pexpect.EOF)
        out = child.before
    finally:
        child.close()
    assert child.exitstatus == 143, out
    assert "temporary copy of the draft removed" in out and "Traceback" not in out
    assert not _alive(pid) and list(tmp.iterdir()) == []


@pytest.mark.parametrize("sig,code,said", [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                           (signal.SIGINT, 130, "interrupted")])
def test_a_command_without_an_event_loop_exits_with_the_signals_code(cli_env, drafts_dir,
                                                                      tmp_path, sig, code, said):
    # `drafts list` into a pipe nobody reads: SIGTERM is exit 143 and one line, as in ask and
    # batch, not a process killed by the signal
    qs = tmp_path / "q.txt"
    qs.write_text("".join(f"Customer {i} asks: where is my order GH56JK78MN? (mail {i})\n"
                          for i in range(60)))
    p = subprocess.run([agentcli_exe(), "batch", str(qs)], env=_offline(cli_env),
                       capture_output=True, timeout=GUARD_S * 3)
    assert p.returncode == 0, p.stderr
    r, w = _stalled_pipe()
    try:
        proc = subprocess.Popen([agentcli_exe(), "drafts", "list"], env=cli_env,
                                stdin=subprocess.DEVNULL, stdout=w, stderr=subprocess.PIPE)
        select.select([r], [], [], GUARD_S)  # it is writing: its handlers are in place
        time.sleep(0.3)
        assert proc.poll() is None, proc.stderr.read()  # blocked: the pipe holds one page
        rc = _finish(proc, sig)
        err = proc.stderr.read().decode()
    finally:
        os.close(w)
        os.close(r)
    assert rc == code, err
    assert said in err and "Traceback" not in err
