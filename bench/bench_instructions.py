"""Instructions executed, counted by callgrind: issue 22 item 9's figures where wall times are noise.

On a shared or throttled machine the same ``ask`` takes 250 ms in one run and 360 ms in the next,
and a change of 10% cannot be seen in wall or CPU times. Valgrind's callgrind counts the
instructions a process executes (user space, every thread), the same from run to run to within a
fraction of a percent, so a before/after table of counts says what a change did. Counts are not
time: a cache miss costs more than an add, and the kernel's share (syscalls, page faults) is not
in them; divide by what the interpreter alone executes per millisecond on a quiet machine for an
estimate.

    python bench/bench_instructions.py                    # this checkout
    python bench/bench_instructions.py --before e782ca2   # and git ref e782ca2's package beside it
    python bench/bench_instructions.py --questions 20     # questions per difference (default 10)
    python bench/bench_instructions.py --smoke            # each workload once, uncounted (CI)

Measures:

1. Our instructions per model call: a process that runs 2 + N five-turn questions through
   ``App.run`` (the anthropic provider against ``FakeAnthropic`` in the same process, four real
   SQLite lookups and an answer, the session log written, the checks' model layer off: the
   workload of ``bench_overhead.py``) minus one that runs 2 of them is N questions' worth; the
   same difference for the bare ``AsyncAnthropic`` SDK replaying agentcli's 5 requests is taken
   off, and what is left is divided by 5 N calls. Threads are counted: the checks' worker thread
   (the question's grounding checks are in the figure) and the fake server's (the same in both).
   Per tool cycle: the same with a ``TraceRenderer`` drawing every event on a 120-column
   truecolor terminal console (into memory), minus the bare SDK, over the 4 cycles of each
   question (the final answer's call charged to them, as ``bench_overhead.py`` does).
2. ``ask`` offline, the whole process: ``python -m agentcli ask --provider offline QUESTION`` on
   the demo database in a fresh home.
3. ``python -c pass``: the interpreter alone, for scale.

``--before REF`` extracts REF's ``agentcli`` package (as ``bench/run.py --before`` does) and
counts the same workloads on it through PYTHONPATH. Without valgrind the script says so and
exits 0 having run nothing (``--smoke`` still runs each workload once, uncounted).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ASK_QUESTION = "Hi, I paid for order GH56JK78MN three days ago but have no license key yet. Why?"
WARM = 2  # questions both processes of a difference run first (imports, first requests, caches)
_COLLECTED = re.compile(r"Collected : (\d+)")


def _scrubbed_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCLI_", "PG"))}
    # One hash seed for every counted process: str hashes decide the order of sets and dicts of
    # strings (the checks' needle sets among them), and a random seed moved the counts between runs.
    env.update(NO_COLOR="1", PYTHONHASHSEED="0", **extra)
    return env


# ------------------------------------------------------------------ the workloads (--child)
def child(mode: str, questions: int) -> int:
    """Run WARM + ``questions`` five-turn questions, through agentcli (``agent``; ``render``:
    with a TraceRenderer on a terminal console) or the bare SDK (``bare``, replaying agentcli's
    requests of the first question)."""
    sys.path.insert(0, str(HERE))
    import anthropic
    import bench_overhead as bo

    from agentcli.app import App
    from agentcli.config import resolve
    from agentcli.stores import init_sqlite
    from agentcli.testing.fake_anthropic import FakeAnthropic

    tmp = Path(tempfile.mkdtemp(prefix="agentcli-bench-instr-"))
    fake = FakeAnthropic(handler=bo.five_turn_handler).start()
    try:
        db = tmp / "orders.sqlite3"
        init_sqlite(db, 300)
        env = _scrubbed_env({"AGENTCLI_HOME": str(tmp / "home"), "ANTHROPIC_BASE_URL": fake.url,
                             "ANTHROPIC_API_KEY": "sk-ant-bench-not-a-secret"})
        os.environ.clear()
        os.environ.update(env)
        try:
            settings = resolve(provider="anthropic", db=str(db), drafts_dir=tmp / "drafts", retries=0,
                               check_model="off")
        except TypeError:  # a --before ref older than the model layer
            settings = resolve(provider="anthropic", db=str(db), drafts_dir=tmp / "drafts", retries=0)

        # The checks' budget is wall time too: under valgrind (~50 times slower) on a loaded
        # machine a question's checks could run past it and be cut short ("not fully checked"),
        # and the count would drop with the load. The child checks every text whole.
        import agentcli.app as app_module

        app_module.CHECK_BUDGET_S = 1e6

        async def main() -> None:
            app = App.open(settings)

            consumers: list[Any] = []
            if mode == "render":
                import io

                from rich.console import Console

                from agentcli.cli import render
                from agentcli.cli.render import TraceRenderer

                # A step shorter than SPIN_DELAY_S of wall time starts no Live (the preview, its
                # refresh thread): a fast model's steps never do, but valgrind runs ~50 times
                # slower, and a Live redrawn 8 times a second made the count follow the machine's
                # load (4.4 M to 5.6 M a cycle for the same code). The step's own drawing is counted.
                render.SPIN_DELAY_S = float("inf")

                buf = io.StringIO()
                console = Console(file=buf, force_terminal=True, color_system="truecolor", width=120,
                                  highlight=False, soft_wrap=True)

            async def agent() -> None:
                conv = app.conversation()
                if mode == "render":
                    consumers[:] = [TraceRenderer(console, live=True)]
                    buf.seek(0)
                    buf.truncate()
                b = await app.run(conv, bo.QUESTION, consumers)
                app.log_for(conv).close()
                res = b.result()
                if res["status"] != "ok" or res["turns"] != 5:
                    raise SystemExit(f"bench_instructions: unexpected result {res['status']} {res.get('error')}")

            await agent()  # agentcli's own requests: the bare SDK replays exactly these
            payloads = [json.loads(json.dumps(r)) for r in fake.requests]
            fake.reset()
            bare = anthropic.AsyncAnthropic(api_key="sk-ant-bench-not-a-secret", base_url=fake.url,
                                            max_retries=0)

            async def bare_once() -> None:
                for p in payloads:
                    params = {k: v for k, v in p.items() if k != "stream"}
                    async with bare.messages.stream(**params) as s:
                        async for _ev in s:
                            pass
                        await s.get_final_message()

            one = bare_once if mode == "bare" else agent
            for _ in range(WARM + questions):
                await one()
                fake.reset()
            await bare.close()
            await app.aclose()

        asyncio.run(main())
    finally:
        fake.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


# ------------------------------------------------------------------ counting
def count(argv: list[str], env: dict[str, str], timeout: float, valgrind: str | None, cwd: Path) -> int | None:
    """Instructions ``argv`` executed (None: run uncounted, without valgrind). Raises on failure.
    ``cwd``: not the checkout, whose ``agentcli`` ``python -m`` would import ahead of PYTHONPATH."""
    cmd = ([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null"] if valgrind else []) + argv
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                       cwd=cwd)
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1][:200]
        raise RuntimeError(f"{' '.join(argv[:4])} ... exited {p.returncode}: {tail}")
    if not valgrind:
        return None
    m = _COLLECTED.search(p.stderr)
    if m is None:
        raise RuntimeError("callgrind printed no 'Collected' line")
    return int(m.group(1))


def measure(tree: Path | None, questions: int, valgrind: str | None, log: Any) -> dict[str, float | None]:
    """The three figures for the package at ``tree`` (None: this checkout's)."""
    extra = {"PYTHONPATH": str(tree)} if tree is not None else {}
    py = sys.executable
    out: dict[str, float | None] = {}
    timeout = 1800.0 if valgrind else 300.0
    runs: dict[tuple[str, int], int | None] = {}
    home = Path(tempfile.mkdtemp(prefix="agentcli-bench-instr-home-"))
    try:
        for mode in ("agent", "render", "bare"):
            for n in (0, questions):
                log(f"{'counting' if valgrind else 'running'} {mode}, {WARM + n} questions ...")
                runs[mode, n] = count([py, str(Path(__file__).resolve()), "--child", mode, str(n)],
                                      _scrubbed_env(extra), timeout, valgrind, home)
        if valgrind:
            ours = (runs["agent", questions] - runs["agent", 0]) - (runs["bare", questions] - runs["bare", 0])
            out["per_call"] = ours / (5 * questions)
            out["bare_per_call"] = (runs["bare", questions] - runs["bare", 0]) / (5 * questions)
            drawn = (runs["render", questions] - runs["render", 0]) - (runs["bare", questions] - runs["bare", 0])
            out["per_cycle"] = drawn / (4 * questions)
        from agentcli.stores import init_sqlite  # this checkout's (the package counted runs in the child)

        init_sqlite(home / "orders.sqlite3", 300)
        env = _scrubbed_env({**extra, "AGENTCLI_HOME": str(home), "AGENTCLI_DRAFTS_DIR": str(home / "drafts")})
        log("ask offline ...")
        out["ask_offline"] = count([py, "-m", "agentcli", "ask", "--provider", "offline", ASK_QUESTION],
                                   env, timeout, valgrind, home)
        out["pass"] = count([py, "-c", "pass"], env, timeout, valgrind, home)
        if tree is not None:  # the package counted is the one asked for
            where = subprocess.run([py, "-c", "import agentcli; print(agentcli.__file__)"], env=env, cwd=home,
                                   capture_output=True, text=True, timeout=60).stdout.strip()
            if not where.startswith(str(tree)):
                raise RuntimeError(f"the --before package was not the one imported ({where})")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return out


def _m(v: float | None) -> str:
    return "n/a" if v is None else f"{v / 1e6:,.2f} M"


def report(now: dict[str, float | None], before: dict[str, float | None] | None, ref: str | None,
           questions: int) -> list[str]:
    head = ["measure", "this checkout"] + ([f"before ({ref})", "change"] if before is not None else [])
    rows = [head, ["---"] * len(head)]
    names = [("per_call", "our instructions per model call"),
             ("per_cycle", "our instructions per tool cycle (drawn on a terminal)"),
             ("bare_per_call", "the bare SDK's per call (for scale)"),
             ("ask_offline", "`ask` offline, whole process"), ("pass", "`python -c pass`")]
    for key, label in names:
        row = [label, _m(now.get(key))]
        if before is not None:
            b, a = before.get(key), now.get(key)
            row += [_m(b), f"{(a - b) / b:+.1%}" if a is not None and b else "n/a"]
        rows.append(row)
    lines = ["| " + " | ".join(r) + " |" for r in rows]
    lines += ["", f"- per call: ({WARM}+{questions} questions - {WARM}) of agentcli minus the same of the bare "
              f"SDK, over {5 * questions} calls; threads included (the question's checks are in it)",
              f"- per tool cycle: the same with a TraceRenderer on a 120-column truecolor console, over "
              f"{4 * questions} cycles"]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=10, help="questions per difference (default 10)")
    ap.add_argument("--before", metavar="REF", help="count git ref REF's agentcli package beside this checkout's")
    ap.add_argument("--smoke", action="store_true", help="each workload once, uncounted: checks the script runs")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "N"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child[0], int(a.child[1]))

    def log(msg: str) -> None:
        print(f"bench_instructions: {msg}", file=sys.stderr, flush=True)

    valgrind = None if a.smoke else shutil.which("valgrind")
    questions = 1 if a.smoke else max(1, a.questions)
    if not valgrind and not a.smoke:
        print("not counted: valgrind is not installed (Debian: apt-get install valgrind)")
        return 0
    env_note = os.environ.get("PYTHONDONTWRITEBYTECODE")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # byte-code kept: a fresh process must not recompile
    tmp = Path(tempfile.mkdtemp(prefix="agentcli-bench-instr-"))
    sys.path.insert(0, str(HERE))
    import run as bench_run

    try:
        bench_run.compile_tree(ROOT)
        before = None
        if a.before:
            tree = bench_run.before_tree(a.before, tmp)
            bench_run.compile_tree(tree)
            log(f"{a.before} ...")
            before = measure(tree, questions, valgrind, log)
        log("this checkout ...")
        now = measure(None, questions, valgrind, log)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"FAILED: {e}")
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if env_note is not None:
            os.environ["PYTHONDONTWRITEBYTECODE"] = env_note
    if a.smoke:
        print("smoke: every workload ran once, uncounted (the figures are not measured in --smoke)\n")
    print("\n".join(report(now, before, a.before, questions)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
