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
import sys
import time
from pathlib import Path

import pytest

from agentcli.drafts.store import DraftStore
from tests.conftest import agentcli_exe, clean_env

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


def _in_pipe_write(pid: int) -> bool | None:
    """Whether a thread of process PID sleeps in a write to a pipe or FIFO (the kernel's wait
    channel, /proc/PID/task/*/wchan), or None where the kernel does not tell (no wchan)."""
    told = False
    for wchan in Path(f"/proc/{pid}/task").glob("*/wchan"):
        try:
            where = wchan.read_text().strip()
        except OSError:
            continue
        if where and where != "0":
            told = True
            if "pipe_write" in where:
                return True
    return False if told else None


def _wait_until_stalled(procs: dict[str, subprocess.Popen], counts: dict, *, at_least: dict) -> None:
    """Until, for each process, ``counts[name]()`` (work done so far) is at least
    ``at_least[name]`` and the process is blocked on its output: a thread of it sleeps in a
    write to the pipe or FIFO nobody reads (where the kernel does not say so, the work has not
    grown for a second). The processes run at once and are watched together."""
    give_up = time.monotonic() + GUARD_S
    last = {name: -1 for name in procs}
    since = {name: time.monotonic() for name in procs}
    waiting = set(procs)
    while waiting:
        if time.monotonic() > give_up:
            raise AssertionError(f"never stalled (work done: {({n: last[n] for n in waiting})})")
        for name in sorted(waiting):
            assert procs[name].poll() is None, f"{name}: the process ended before it could be signalled"
            n = counts[name]()
            if n != last[name]:
                last[name], since[name] = n, time.monotonic()
            if n < at_least[name]:
                continue
            blocked = _in_pipe_write(procs[name].pid)
            if blocked or (blocked is None and time.monotonic() - since[name] > 1.0):
                waiting.discard(name)
        time.sleep(0.05)


def _finish(proc: subprocess.Popen, sig: int) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(timeout=GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _questions(tmp_path: Path, n: int = 3000, *, lookups: bool = True) -> Path:
    """N questions; each names an order (a lookup and a draft each), or with ``lookups=False``
    none (the offline answer asks for the code: a third of the CPU a question, ~0.5 s a
    process instead of ~1.6 s until the output stalls, ~100 questions in)."""
    f = tmp_path / "q.txt"
    q = "Where is GH56JK78MN? (ticket {})\n" if lookups else "Where is my order? (ticket {})\n"
    f.write_text("".join(q.format(i) for i in range(n)))
    return f


def _env(base: Path, demo_db: Path) -> dict[str, str]:
    """A clean environment as ``cli_env`` makes it, in a home and drafts folder of BASE."""
    return clean_env(base / "home", demo_db, AGENTCLI_DRAFTS_DIR=str(base / "drafts"),
                     COLUMNS="200")


class Stalled:
    """What a process stalled on its output left once signalled: exit status, stderr, the
    ``--output`` records and what reached the stalled pipe (when there is one)."""

    rc: int
    err: str
    recs: list[dict]
    printed: list[str]


# The processes stalled on their output, each signalled once stalled. They run at once (a module
# fixture): each one's wait after its signal (up to GRACE_S, the watchdog's, when its event loop is
# stuck in a write) overlaps the others', and their seconds of silence are watched together.
# batch-pipe-SIGTERM's questions each look an order up and draft a reply; the other two batches'
# name no order (what stalls them is their output, whatever the questions are).
CASES = {
    "batch-pipe-SIGTERM": signal.SIGTERM, "batch-pipe-SIGINT": signal.SIGINT,
    "batch-fifo-SIGTERM": signal.SIGTERM, "chat-pipe-SIGTERM": signal.SIGTERM,
    "ask-pipe-SIGTERM": signal.SIGTERM,
}


@pytest.fixture(scope="module")
def stalled(tmp_path_factory, demo_db) -> dict[str, Stalled]:
    from agentcli.testing import fake_openai as fo

    procs: dict[str, subprocess.Popen] = {}
    counts, at_least, fds, files = {}, {}, [], []
    outs, reads, errs = {}, {}, {}
    # ask's long answer comes from a model provider (the offline one's are short): openai's,
    # whose SDK loads in half the CPU of anthropic's; the pipe and the signal are the point
    with fo.FakeOpenAI() as fake:
        fake.queue(fo.text("All good. " * 3000))  # 30 KB: far more than the pipe holds
        try:
            for name in CASES:
                base = tmp_path_factory.mktemp(name)
                env, errs[name] = _env(base, demo_db), base / "err.txt"
                home = base / "home"
                ferr = open(errs[name], "wb")
                files.append(ferr)
                if name.startswith("batch-pipe"):
                    r, w = _stalled_pipe()
                    fds += [r, w]
                    out = outs[name] = base / "records.jsonl"
                    reads[name] = r
                    qs = _questions(base, lookups=name == "batch-pipe-SIGTERM")
                    procs[name] = subprocess.Popen(
                        [agentcli_exe(), "batch", str(qs), "-o", str(out)],
                        env=_offline(env), stdin=subprocess.DEVNULL, stdout=w, stderr=ferr)
                    counts[name] = (lambda out=out: out.read_bytes().count(b"\n") if out.exists() else 0)
                    at_least[name] = 8
                elif name.startswith("batch-fifo"):
                    fifo = base / "records.fifo"
                    os.mkfifo(fifo)
                    keep = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader that never reads
                    fcntl.fcntl(keep, fcntl.F_SETPIPE_SZ, 4096)
                    fds.append(keep)
                    procs[name] = subprocess.Popen(
                        [agentcli_exe(), "batch", str(_questions(base, lookups=False)), "-o", str(fifo)],
                        env=_offline(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=ferr)
                    counts[name], at_least[name] = (lambda home=home: _sessions(home)), 8
                elif name.startswith("chat"):
                    r, w = _stalled_pipe()
                    fds += [r, w]
                    fin = open(_questions(base))
                    files.append(fin)
                    procs[name] = subprocess.Popen([agentcli_exe(), "chat"], env=_offline(env),
                                                   stdin=fin, stdout=w, stderr=ferr)
                    counts[name] = lambda e=errs[name]: e.stat().st_size
                    at_least[name] = 1
                else:  # ask: one long answer
                    r, w = _stalled_pipe()
                    fds += [r, w]
                    env.update(OPENAI_BASE_URL=fake.base_url, AGENTCLI_PROVIDER="openai",
                               AGENTCLI_MODEL="fake-model", AGENTCLI_RETRIES="1")
                    procs[name] = subprocess.Popen([agentcli_exe(), "ask", "Where is GH56JK78MN?"],
                                                   env=env, stdin=subprocess.DEVNULL, stdout=w,
                                                   stderr=ferr)

                    def answered(home=home) -> int:
                        logs = list((home / "sessions").glob("*.jsonl")) if (home / "sessions").exists() else []
                        return sum("turn_finished" in p.read_text(errors="replace") for p in logs)
                    counts[name], at_least[name] = answered, 1
            _wait_until_stalled(procs, counts, at_least=at_least)
            for name, proc in procs.items():
                proc.send_signal(CASES[name])
            results = {}
            for name, proc in procs.items():
                res = results[name] = Stalled()
                res.rc = proc.wait(timeout=GUARD_S)
                res.err = errs[name].read_text()
                res.recs = ([json.loads(x) for x in outs[name].read_text().splitlines()]  # every line whole
                            if name in outs else [])
                res.printed = (os.read(reads[name], 1 << 16).decode().splitlines()
                               if name in reads else [])
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            for fd in fds:
                os.close(fd)
            for f in files:
                f.close()
    return results


@pytest.mark.parametrize("name,code,said", [("batch-pipe-SIGTERM", 143, "terminated"),
                                            ("batch-pipe-SIGINT", 130, "interrupted")])
def test_a_batch_into_a_pipe_nobody_reads_obeys_the_signal(stalled, name, code, said):
    res = stalled[name]
    assert res.rc == code, res.err
    assert said in res.err and "Traceback" not in res.err
    assert len(res.recs) >= 8 and all(r["status"] == "ok" for r in res.recs)
    assert res.printed and all(json.loads(x)["status"] == "ok" for x in res.printed[:-1])


def test_a_batch_into_a_fifo_nobody_reads_obeys_sigterm(stalled):
    res = stalled["batch-fifo-SIGTERM"]
    assert res.rc == 143, res.err
    assert "terminated" in res.err and "Traceback" not in res.err


def test_chat_on_a_pipe_nobody_reads_obeys_sigterm(stalled):
    res = stalled["chat-pipe-SIGTERM"]
    assert res.rc == 143, res.err
    assert "terminated (SIGTERM)" in res.err and "Traceback" not in res.err


def test_ask_with_a_long_answer_into_a_pipe_nobody_reads_obeys_sigterm(stalled):
    res = stalled["ask-pipe-SIGTERM"]
    assert res.rc == 143, res.err
    assert "terminated (SIGTERM)" in res.err and "Traceback" not in res.err


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


def _one_draft(cli_env: dict[str, str], i: int = 0) -> None:
    """A draft in the drafts folder, as an offline ``ask`` saves one (saved directly: the
    commands under test read the folder; a process of its own would be ~0.65 s more)."""
    DraftStore(Path(cli_env["AGENTCLI_DRAFTS_DIR"])).save(
        text=f"Hello,\n\nyour order GH56JK78MN is waiting for its payment (mail {i}).\n\nKind regards",
        ticket=f"ZD-{7000 + i}", order_code="GH56JK78MN", customer=f"customer{i}@example.com",
        questions=[f"Customer {i} asks: where is my order GH56JK78MN? (mail {i})"],
        provider="offline", mode="workflow")


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


_RACE = """
import os, sys
from pathlib import Path
from agentcli.cli.editor import EditorStopped, run_editor
editor, pid_file = sys.argv[1], Path(sys.argv[2])
alive = 0
for _ in range(int(sys.argv[3])):
    pid_file.unlink(missing_ok=True)
    try:
        run_editor([editor])
    except EditorStopped:
        pass
    pid = int(pid_file.read_text())
    try:
        if Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z":
            alive += 1
            os.kill(pid, 9)
    except OSError:
        pass
print(alive)
"""


def test_a_signal_while_the_editor_is_being_started_still_stops_it(tmp_path):
    # The editor signals agentcli as its first act, so the signal often comes while Popen is
    # still starting it (the child runs, the parent has no pid yet): it must stop the editor
    # then too (it used to be left running, holding the terminal and agentcli's pipes).
    pid_file = tmp_path / "editor.pid"
    editor = tmp_path / "signalling-editor"
    editor.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nkill -TERM $PPID\nexec sleep 60\n")
    editor.chmod(0o755)
    out = subprocess.run([sys.executable, "-c", _RACE, str(editor), str(pid_file), "20"],
                         capture_output=True, text=True, timeout=GUARD_S)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"  # editors left running


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
    for i in range(60):  # far more than one page of `drafts list`
        _one_draft(cli_env, i)
    r, w = _stalled_pipe()
    try:
        proc = subprocess.Popen([agentcli_exe(), "drafts", "list"], env=cli_env,
                                stdin=subprocess.DEVNULL, stdout=w, stderr=subprocess.PIPE)
        select.select([r], [], [], GUARD_S)  # it is writing: its handlers are in place
        _wait_until_stalled({"drafts list": proc}, {"drafts list": lambda: 1},
                            at_least={"drafts list": 1})  # blocked: the pipe holds one page
        rc = _finish(proc, sig)
        err = proc.stderr.read().decode()
    finally:
        os.close(w)
        os.close(r)
    assert rc == code, err
    assert said in err and "Traceback" not in err
