"""Issue 24's waits, measured (not a test: it prints a table and asserts nothing).

Each row is the real console script in a subprocess, against the fake Messages API in this
process (real SDK, real HTTP on 127.0.0.1) or the offline workflow, in a temporary home:

- a stream that only sends pings after ``message_start`` (``ask --request-timeout 3``);
- a stream of text deltas without end, as fast as the client reads (``ask``, default
  ``--max-tokens``);
- one answer whose rate-limit headers say "0 left until 2099" (``ask``: a lookup, then the
  next model call);
- a limit that never lifts with ``retry-after: 0`` (``batch --concurrency 4``, 4 questions):
  requests sent and the time to a clean stop (the issue saw 416 requests and 4 API errors);
- SIGTERM into a pipe nobody reads (its buffer one page): ``batch``, ``batch -o FIFO``,
  ``chat`` on a pipe, ``ask`` with a 30 KB answer; seconds from the signal to the exit;
- SIGTERM while ``drafts edit`` waits for an editor.

    python bench/bench_reliability.py [--quick]     # --quick skips the retry-after: 0 row (~2 min)
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentcli.testing import fake_anthropic as fa  # noqa: E402

EXE = str(Path(sys.executable).parent / "agentcli")
GUARD = 900.0


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCLI_"))}
    env.update(AGENTCLI_HOME=str(home), AGENTCLI_DRAFTS_DIR=str(home / "drafts"), NO_COLOR="1")
    env.update(extra)
    return env


def _timed(args: list[str], env: dict[str, str], stdin: str | None = None) -> tuple[float, int]:
    t = time.perf_counter()
    p = subprocess.run([EXE, *args], env=env, input=stdin, text=True, capture_output=True,
                       timeout=GUARD)
    return time.perf_counter() - t, p.returncode


def api_rows(fake: fa.FakeAnthropic, home: Path, quick: bool) -> list[tuple[str, str, str]]:
    env = _env(home, ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=fake.url)
    rows = []
    fake.reset()
    fake.queue(fa.stream_forever("ping", every=0.5))
    s, rc = _timed(["ask", "--request-timeout", "3", "--retries", "0", "hello?"], env)
    rows.append(("pings only after message_start (--request-timeout 3)",
                 "600 s per attempt", f"{s:.1f} s, exit {rc}"))
    fake.reset()
    fake.queue(fa.stream_forever("text", every=0))
    s, rc = _timed(["ask", "--retries", "0", "hello?"], env)
    rows.append(("text deltas without end (--max-tokens 2048)", "minutes of CPU to 16 MiB",
                 f"{s:.1f} s, exit {rc}"))
    fake.reset()
    headers = {"anthropic-ratelimit-requests-limit": "2", "anthropic-ratelimit-requests-remaining": "0",
               "anthropic-ratelimit-requests-reset": "2099-01-01T00:00:00Z"}
    fake.queue(fa.message(fa.tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}),
                          headers=headers), fa.text("never sent"))
    s, rc = _timed(["ask", "where is GH56JK78MN?"], env)
    rows.append(("headers: 0 left until 2099, then the next call", "a sleep of 86,400 s",
                 f"{s:.1f} s, exit {rc}, {len(fake.requests)} request(s)"))
    if not quick:
        fake.reset()
        fake.handler = lambda req: fa.error(429, "slow down", headers={"retry-after": "0"})
        s, rc = _timed(["batch", "--concurrency", "4", "-"], env,
                       stdin="".join(f"question {i}\n" for i in range(4)))
        rows.append(("429 + retry-after: 0 for ever, 4 questions", "416 requests in 6-12 s",
                     f"{len(fake.requests)} requests, stopped after {s:.0f} s, exit {rc}"))
        fake.handler = None
    return rows


def _stalled() -> tuple[int, int]:
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
    return r, w


def _signal_after_stall(proc: subprocess.Popen, progress, sig: int = signal.SIGTERM) -> tuple[float, int]:
    last, since = -1, time.monotonic()
    while time.monotonic() - since < 1.5 or last < 1:
        n = progress()
        if n != last:
            last, since = n, time.monotonic()
        time.sleep(0.1)
    t = time.perf_counter()
    proc.send_signal(sig)
    try:
        rc = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    return time.perf_counter() - t, rc


def signal_rows(fake: fa.FakeAnthropic, tmp: Path) -> list[tuple[str, str, str]]:
    rows = []
    questions = tmp / "q.txt"
    questions.write_text("".join(f"Where is GH56JK78MN? ({i})\n" for i in range(3000)))
    for label, extra in (("batch into a reader that never reads", []),
                         ("batch -o FIFO nobody reads", ["-o", str(tmp / "fifo")])):
        home = Path(tempfile.mkdtemp(dir=tmp))
        env = _env(home, AGENTCLI_PROVIDER="offline")
        keep = None
        if extra:
            os.mkfifo(tmp / "fifo")
            keep = os.open(tmp / "fifo", os.O_RDONLY | os.O_NONBLOCK)
            fcntl.fcntl(keep, fcntl.F_SETPIPE_SZ, 4096)
        r, w = _stalled()
        proc = subprocess.Popen([EXE, "batch", str(questions), *extra], env=env,
                                stdin=subprocess.DEVNULL, stdout=w, stderr=subprocess.DEVNULL)
        sessions = home / "sessions"
        s, rc = _signal_after_stall(proc, lambda: len(list(sessions.glob("*.jsonl"))) if sessions.exists() else 0)
        os.close(w)
        os.close(r)
        if keep is not None:
            os.close(keep)
            os.unlink(tmp / "fifo")
        rows.append((f"SIGTERM: {label}", "ignored (11 min observed)", f"exit {rc} {s:.1f} s after"))
    home = Path(tempfile.mkdtemp(dir=tmp))
    r, w = _stalled()
    err = home / "err"
    with open(questions) as fin, open(err, "wb") as ferr:
        proc = subprocess.Popen([EXE, "chat"], env=_env(home, AGENTCLI_PROVIDER="offline"),
                                stdin=fin, stdout=w, stderr=ferr)
        s, rc = _signal_after_stall(proc, lambda: err.stat().st_size)
    os.close(w)
    os.close(r)
    rows.append(("SIGTERM: chat on a pipe nobody reads", "ignored", f"exit {rc} {s:.1f} s after"))
    home = Path(tempfile.mkdtemp(dir=tmp))
    fake.reset()
    fake.queue(fa.text("All good. " * 3000))
    r, w = _stalled()
    sessions = home / "sessions"
    proc = subprocess.Popen([EXE, "ask", "Where is GH56JK78MN?"],
                            env=_env(home, ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=fake.url),
                            stdin=subprocess.DEVNULL, stdout=w, stderr=subprocess.DEVNULL)
    s, rc = _signal_after_stall(proc, lambda: sum("turn_finished" in p.read_text(errors="replace")
                                                  for p in sessions.glob("*.jsonl")) if sessions.exists() else 0)
    os.close(w)
    os.close(r)
    rows.append(("SIGTERM: ask, 30 KB answer into a pipe nobody reads", "ignored",
                 f"exit {rc} {s:.1f} s after"))
    # drafts edit under SIGTERM
    home = Path(tempfile.mkdtemp(dir=tmp))
    env = _env(home, AGENTCLI_PROVIDER="offline")
    subprocess.run([EXE, "ask", "Customer asks: where is my order GH56JK78MN?"], env=env,
                   capture_output=True, timeout=GUARD)
    pid_file = home / "editor.pid"
    editor = home / "editor"
    editor.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 300\n")
    editor.chmod(0o755)
    proc = subprocess.Popen([EXE, "drafts", "edit", "last"], env={**env, "EDITOR": str(editor)},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    while not (pid_file.exists() and pid_file.read_text().strip()):
        time.sleep(0.05)
    t = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=60)
    s = time.perf_counter() - t
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
        alive = Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (ProcessLookupError, OSError):
        alive = False
    if alive:
        os.kill(pid, signal.SIGKILL)
    rows.append(("SIGTERM: drafts edit, editor open", "editor left running, copy left",
                 f"exit {rc} {s:.1f} s after, editor {'still running' if alive else 'stopped'}"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip the retry-after: 0 row (~2 min)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="agentcli-bench-rel-") as tmp, fa.FakeAnthropic() as fake:
        tmp_p = Path(tmp)
        rows = api_rows(fake, Path(tempfile.mkdtemp(dir=tmp)), args.quick)
        rows += signal_rows(fake, tmp_p)
    w = max(len(r[0]) for r in rows)
    v = max(len(r[1]) for r in rows)
    print(f"| {'scenario'.ljust(w)} | {'issue 24 saw'.ljust(v)} | now |")
    print(f"|{'-' * (w + 2)}|{'-' * (v + 2)}|-----|")
    for a, b, c in rows:
        print(f"| {a.ljust(w)} | {b.ljust(v)} | {c} |")
    print(json.dumps({"rows": rows}), file=sys.stderr)


if __name__ == "__main__":
    main()
