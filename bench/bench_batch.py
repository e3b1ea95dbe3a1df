"""Benchmark of ``agentcli batch`` (not a test: it prints a table, it asserts nothing).

Throughput: the fake Messages API answers every request after a fixed 0.5 s; each question is a
two-turn scenario (``get_order_status`` on a real demo order, looked up in a real SQLite demo
database, then a final answer). 200 questions at concurrency 1, 8, 16 and 50; the ideal wall
time is ``ceil(200 / c) * 2 * 0.5 s``; ratio = ideal / measured.

Two measured times are shown: ``batch s`` is the batch's own wall time (first question sent to
last record written, from its summary line), ``process s`` the whole subprocess including
interpreter start-up and the SDK import; the ratio uses ``batch s``.

The fake API runs in its own process (``python -m agentcli.testing.fake_anthropic --serve``,
answering with this file's ``scenario``), so its threads share neither a GIL nor this script's
process with anything; ``--in-process-server`` puts it back in this process (the old rig).
Each bare SDK and batch run gets a fresh server process (no warm threads or connections carry
over from the previous run).

Memory: peak RSS (``os.wait4`` of each child) of 1,000 and 10,000 questions at concurrency 16,
with no server latency (the point is input length, not waiting).

    python bench/bench_batch.py [--questions 200] [--latency 0.5] [--concurrency 1,8,16,50]
                                [--memory 1000,10000] [--no-stream] [--in-process-server]
    python bench/bench_batch.py --smoke   # every step, tiny and fast (bench/test_smoke.py)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import contextlib
import tempfile
import time
from pathlib import Path
from typing import Iterator

from agentcli.stores import init_sqlite
from agentcli.stores.demo import FIXED_ORDERS
from agentcli.testing.fake_anthropic import FakeAnthropic, message, text, tool_results, tool_use_block

CODES = [o[0] for o in FIXED_ORDERS]
CODE_RE = re.compile(r"\b(ORD-\d{8}|[A-Z0-9]{10})\b")


def scenario(req: dict):
    """First request: look the order up; the request carrying the tool result: answer."""
    res = tool_results(req)
    if res:
        out = json.loads(res[0]["content"])
        return text(f"Order {out.get('order_code')} is {out.get('status', 'not found')}.")
    content = req["messages"][0]["content"]
    q = content if isinstance(content, str) else "".join(b.get("text", "") for b in content
                                                         if b.get("type") == "text")
    m = CODE_RE.search(q)
    return message(tool_use_block("get_order_status", {"order_code": m.group(1) if m else "GH56JK78MN"}))


def agentcli_exe() -> str:
    exe = Path(sys.executable).parent / "agentcli"
    return str(exe) if exe.exists() else (shutil.which("agentcli") or "agentcli")


def write_questions(path: Path, n: int) -> None:
    with path.open("w") as f:
        for i in range(n):
            code = CODES[i % len(CODES)]
            if i % 2:
                f.write(json.dumps({"id": f"t-{i}", "question": f"Where is order {code}?"}) + "\n")
            else:
                f.write(f"Customer {i} asks about {code}: what is its status?\n")


@contextlib.contextmanager
def fake_server(latency: float, in_process: bool) -> Iterator[str]:
    """The fake Messages API answering with ``scenario``; yields its base URL."""
    if in_process:
        with FakeAnthropic(latency=latency, handler=scenario, record=False) as fake:
            yield fake.url
        return
    proc = subprocess.Popen([sys.executable, "-m", "agentcli.testing.fake_anthropic", "--serve",
                             "--latency", str(latency), "--handler", f"{__file__}:scenario", "--no-record"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise SystemExit(f"fake server did not start (exit {proc.wait()})")
        yield url
    finally:
        proc.stdin.close()  # the server exits when its stdin closes
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_batch(env: dict, qfile: Path, concurrency: int, extra: list[str]) -> dict:
    out = qfile.with_suffix(f".c{concurrency}.out.jsonl")
    t0 = time.perf_counter()
    with out.open("wb") as fo:
        proc = subprocess.Popen([agentcli_exe(), "batch", str(qfile), "--concurrency",
                                 str(concurrency), *extra], env=env, stdin=subprocess.DEVNULL,
                                stdout=fo, stderr=subprocess.PIPE)
        err = proc.stderr.read().decode("utf-8", "replace")
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    m = re.search(r"in ([0-9.]+) s", err)
    n = ok = 0
    ordered = True
    prev = None
    with out.open() as f:
        for line in f:
            rec = json.loads(line)
            n += 1
            ok += rec["status"] == "ok"
            key = rec["id"] if isinstance(rec["id"], int) else int(str(rec["id"]).split("-")[1]) + 1
            ordered &= prev is None or key > prev
            prev = key
    out.unlink()
    return {"exit": proc.returncode, "process_s": wall, "batch_s": float(m.group(1)) if m else wall,
            "records": n, "ok": ok, "ordered": ordered, "maxrss_mb": usage.ru_maxrss / 1024,
            "stderr": err.strip().splitlines()[-1:] if err.strip() else []}


def bare_worker(n: int, concurrency: int, stream: bool) -> None:
    """The reference: a bare async SDK loop doing the same two calls per question (same system
    prompt and tool schemas, no agentcli around it). Prints its elapsed time."""
    import asyncio

    import anthropic

    from agentcli.loop import SYSTEM_PROMPT
    from agentcli.tools import default_registry

    tools = default_registry().schemas()

    async def main() -> float:
        client = anthropic.AsyncAnthropic(max_retries=0)
        sem = asyncio.Semaphore(concurrency)

        async def call(messages):
            kw = dict(model="claude-sonnet-5-5", max_tokens=2048, system=SYSTEM_PROMPT, tools=tools,
                      messages=messages)
            if stream:
                async with client.messages.stream(**kw) as s:
                    return await s.get_final_message()
            return await client.messages.create(**kw)

        async def one(i: int) -> None:
            async with sem:
                q = [{"role": "user", "content": f"Where is order {CODES[i % len(CODES)]}?"}]
                m = await call(q)
                tu = next(b for b in m.content if b.type == "tool_use")
                q += [{"role": "assistant", "content": [b.model_dump() for b in m.content]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tu.id,
                                                    "content": '{"found": false}'}]}]
                await call(q)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        dt = time.perf_counter() - t0
        await client.close()
        return dt

    print(f"elapsed {asyncio.run(main()):.3f}")


def run_bare(env: dict, n: int, concurrency: int, stream: bool) -> float:
    p = subprocess.run([sys.executable, __file__, "--bare-worker", str(n), str(concurrency),
                        "1" if stream else "0"], env=env, capture_output=True, text=True)
    m = re.search(r"elapsed ([0-9.]+)", p.stdout)
    if not m:
        raise SystemExit(f"bare SDK loop failed: {p.stderr.strip()[-500:]}")
    return float(m.group(1))


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--bare-worker":
        bare_worker(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--concurrency", default="1,8,16,50")
    ap.add_argument("--memory", default="1000,10000", help="question counts for the memory runs ('' to skip)")
    ap.add_argument("--memory-concurrency", type=int, default=16)
    ap.add_argument("--no-stream", action="store_true", help="pass --no-stream to batch")
    ap.add_argument("--repeat", type=int, default=1, help="runs per concurrency (best is shown)")
    ap.add_argument("--no-bare", action="store_true", help="skip the bare SDK reference column")
    ap.add_argument("--in-process-server", action="store_true",
                    help="run the fake API in this process, as threads (the old rig), not its own process")
    ap.add_argument("--smoke", action="store_true",
                    help="every step, tiny and fast: checks the script runs (its figures mean nothing)")
    args = ap.parse_args()
    if args.smoke:
        # the memory runs are run_batch again on a longer file: left out
        args.questions, args.latency, args.concurrency, args.memory = 4, 0.01, "2", ""
    extra = ["--no-stream"] if args.no_stream else []
    failed = 0  # runs whose batch did not exit 0: printed, and the script exits 1

    with tempfile.TemporaryDirectory(prefix="agentcli-bench-") as tmp_s:
        tmp = Path(tmp_s)
        db = tmp / "orders.sqlite3"
        init_sqlite(db, 300)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENTCLI_", "OPENAI_"))}
        env.update(ANTHROPIC_API_KEY="bench-key", AGENTCLI_PROVIDER="anthropic", AGENTCLI_HOME=str(tmp / "home"),
                   AGENTCLI_DB=str(db), AGENTCLI_DRAFTS_DIR=str(tmp / "drafts"), AGENTCLI_RETRIES="0",
                   NO_COLOR="1")

        def served(latency: float, fn, *a):
            with fake_server(latency, args.in_process_server) as url:
                return fn({**env, "ANTHROPIC_BASE_URL": url}, *a)

        qfile = tmp / "questions.txt"
        write_questions(qfile, args.questions)
        print(f"batch of {args.questions} questions, 2 model calls each, fake API latency "
              f"{args.latency} s per response, {'no-stream' if args.no_stream else 'streaming'}; "
              f"fake API {'in this process' if args.in_process_server else 'in its own process'}; "
              f"{os.cpu_count()} CPUs")
        print(f"{'concurrency':>11} {'batch s':>8} {'ideal s':>8} {'ratio':>6} {'process s':>10} "
              f"{'peak MB':>8} {'ok':>5} {'in order':>9} {'bare SDK s':>11} {'bare ratio':>11}")
        for c in [int(x) for x in args.concurrency.split(",") if x]:
            runs = [served(args.latency, run_batch, qfile, c, extra) for _ in range(max(1, args.repeat))]
            r = min(runs, key=lambda x: x["batch_s"])
            ideal = math.ceil(args.questions / c) * 2 * args.latency
            bare = "" if args.no_bare else min(served(args.latency, run_bare, args.questions, c,
                                                      not args.no_stream)
                                               for _ in range(max(1, args.repeat)))
            bare_cols = "" if bare == "" else f" {bare:>11.2f} {ideal / bare:>11.3f}"
            print(f"{c:>11} {r['batch_s']:>8.2f} {ideal:>8.2f} {ideal / r['batch_s']:>6.3f} "
                  f"{r['process_s']:>10.2f} {r['maxrss_mb']:>8.1f} {r['ok']:>5} "
                  f"{'yes' if r['ordered'] else 'NO':>9}{bare_cols}", flush=True)
            if r["exit"] != 0:
                failed += 1
                print(f"   exit {r['exit']}: {r['stderr']}")

        sizes = [int(x) for x in args.memory.split(",") if x]
        if sizes:
            mc = args.memory_concurrency
            print(f"\npeak memory at concurrency {mc} (no server latency)")
            print(f"{'questions':>10} {'peak RSS MB':>12} {'batch s':>8} {'per s':>7} {'ok':>6}")
            for n in sizes:
                mfile = tmp / f"mem{n}.txt"
                write_questions(mfile, n)
                r = served(0.0, run_batch, mfile, mc, extra)
                print(f"{n:>10} {r['maxrss_mb']:>12.1f} {r['batch_s']:>8.1f} "
                      f"{n / r['batch_s']:>7.1f} {r['ok']:>6}", flush=True)
                if r["exit"] != 0:
                    failed += 1
                    print(f"   exit {r['exit']}: {r['stderr']}")
                shutil.rmtree(tmp / "home" / "sessions", ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
