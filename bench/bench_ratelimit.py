"""Benchmark of a batch at the API's limits (issue 17; not a test: it prints tables).

1. **Rate limits.** The fake Messages API enforces a request rate (``--rps``, a one-second
   bucket) or input tokens per minute (set to the same number of requests per second for this
   batch's requests), answering 429 + ``retry-after-ms`` + the rate-limit headers beyond it.
   The batch runs at 4x the concurrency the limit allows (``4 * rps * latency``). Goals: 0
   questions lost, throughput (answers/s; admitted tokens/s for the token limit) >= 0.90 of
   the limit.
2. **Realistic latency.** Each answer takes a time drawn from a log-normal distribution
   (median 2 s, sigma 0.6: a long tail, p99 ~8 s; capped at 20 s), fixed per question, no
   limit. At concurrency 16, 50, 100: ideal = the makespan of the same latencies on
   ``c`` workers taking questions in input order; goal >= 0.95 of ideal.
   (The fixed 0.5 s run of ``bench_batch.py`` stays the stress figure.)

Everything runs in this process: the real SDK over HTTP to the fake on 127.0.0.1 and the real
``BatchRunner`` with a real ``App`` (demo SQLite database, temporary home). One-turn questions.

    python bench/bench_ratelimit.py [--rps 20] [--latency 0.5] [--questions 200]
                                    [--concurrency 16,50,100] [--quick]
    python bench/bench_ratelimit.py --smoke   # every step, tiny and fast (bench/test_smoke.py)
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentcli.testing.fake_anthropic import FakeAnthropic, text  # noqa: E402
from agentcli.testing.limits import Limits  # noqa: E402


LATENCY_SCALE = 1.0  # --smoke shrinks the log-normal latencies (median 2 s) to milliseconds


def _latency(q: str) -> float:
    r = random.Random(q)
    return min(20.0, 2.0 * math.exp(r.gauss(0.0, 0.6))) * LATENCY_SCALE


def _question(req: dict) -> str:
    c = req["messages"][0]["content"]
    return c if isinstance(c, str) else "".join(b.get("text", "") for b in c if b.get("type") == "text")


async def _batch(n: int, concurrency: int) -> tuple[object, list[dict], object]:
    from agentcli.app import App
    from agentcli.batch.engine import BatchRunner, Item
    from agentcli.config import resolve

    out: list[str] = []
    app = App.open(resolve(retries=2), pool_size=concurrency)
    try:
        runner = BatchRunner(app, concurrency=concurrency, emit=out.append)
        summary = await runner.run([Item(i, i, f"ticket {i}: where is my order?") for i in range(1, n + 1)])
        return summary, [json.loads(x) for x in out], runner.gate
    finally:
        await app.aclose()


def _env(fake: FakeAnthropic, home: str) -> None:
    os.environ.update(AGENTCLI_HOME=home, AGENTCLI_PROVIDER="anthropic", ANTHROPIC_API_KEY="bench-key",
                      ANTHROPIC_BASE_URL=fake.url, AGENTCLI_DRAFTS_DIR=os.path.join(home, "drafts"))


def limit_runs(rps: float, latency: float, n: int, home: str) -> list[dict]:
    rows = []
    conc = max(1, round(4 * rps * latency))
    for kind in ("requests", "input tokens"):
        with FakeAnthropic(latency=latency, handler=lambda req: text("Order found."), record=False) as fake:
            _env(fake, home)
            if kind == "requests":
                fake.limits = Limits(requests_per_s=rps)
            else:
                probe = Limits(requests_per_s=1e9)  # measure one request's size first
                fake.limits = probe
                asyncio.run(_batch(1, 1))
                per = probe.admitted_tokens
                # a minute shrunk to a second (window_scale): the run meets the limit within seconds
                fake.limits = Limits(input_tokens_per_min=per * rps, window_scale=1 / 60)
            t0 = time.perf_counter()
            summary, recs, gate = asyncio.run(_batch(n, conc))
            dt = time.perf_counter() - t0
            lim = fake.limits
            if kind == "requests":
                rate, limit = summary.ok / dt, rps
            else:
                rate, limit = lim.admitted_tokens / dt, per * rps
            lost = n - sum(r["status"] == "ok" for r in recs)
            rows.append({"limit": f"{kind} ({limit:,.0f}/s)", "concurrency": f"{conc} (4x)",
                         "lost": lost, "429s": lim.rejected, "seconds": dt,
                         "ratio": rate / limit, "gate": gate.status()})
    return rows


def _ideal(lat: list[float], c: int) -> float:
    free = [0.0] * c
    end = 0.0
    for x in lat:
        t = heapq.heappop(free) + x
        end = max(end, t)
        heapq.heappush(free, t)
    return end


def latency_runs(concs: list[int], per: int, home: str) -> list[dict]:
    rows = []
    for c in concs:
        n = per * c
        with FakeAnthropic(handler=lambda req: text("Order found.", delay=_latency(_question(req))),
                           record=False) as fake:
            _env(fake, home)
            lat = [_latency(f"ticket {i}: where is my order?") for i in range(1, n + 1)]
            t0 = time.perf_counter()
            summary, recs, _ = asyncio.run(_batch(n, c))
            dt = time.perf_counter() - t0
            ideal = _ideal(lat, c)
            rows.append({"concurrency": c, "questions": n, "lost": n - summary.ok,
                         "ideal": ideal, "seconds": dt, "ratio": ideal / dt})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rps", type=float, default=20.0)
    ap.add_argument("--latency", type=float, default=0.5)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--concurrency", default="16,50,100")
    ap.add_argument("--per-worker", type=int, default=4, help="questions per worker in the latency runs")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="every step, tiny and fast: checks the script runs (its figures mean nothing)")
    a = ap.parse_args(argv)
    if a.quick:
        a.questions, a.concurrency, a.per_worker = 60, "16", 2
    if a.smoke:
        global LATENCY_SCALE
        a.questions, a.latency, a.concurrency, a.per_worker = 8, 0.05, "2", 2
        LATENCY_SCALE = 0.01
    from agentcli.stores import init_sqlite

    with tempfile.TemporaryDirectory() as home:
        db = Path(home) / "orders.db"
        init_sqlite(db)
        os.environ["AGENTCLI_DB"] = str(db)
        lim = limit_runs(a.rps, a.latency, a.questions, home)
        lat = latency_runs([int(x) for x in a.concurrency.split(",") if x], a.per_worker, home)
    print(f"Rate limits: {a.questions} questions, latency {a.latency} s, goal 0 lost and >= 0.90 of the limit")
    print()
    print("| limit | concurrency | lost | 429s | seconds | of the limit | verdict | gate at the end |")
    print("|---|---|---|---|---|---|---|---|")
    for r in lim:
        ok = r["lost"] == 0 and r["ratio"] >= 0.90
        print(f"| {r['limit']} | {r['concurrency']} | {r['lost']} | {r['429s']} | {r['seconds']:.1f} | "
              f"{r['ratio']:.2f} | {'ok' if ok else 'MISSED'} | {r['gate']} |")
    print()
    print(f"Realistic latency (log-normal, median {2 * LATENCY_SCALE:g} s, sigma 0.6, no limit), "
          "goal >= 0.95 of ideal")
    print()
    print("| concurrency | questions | lost | ideal s | measured s | ratio | verdict |")
    print("|---|---|---|---|---|---|---|")
    for r in lat:
        ok = r["lost"] == 0 and r["ratio"] >= 0.95
        print(f"| {r['concurrency']} | {r['questions']} | {r['lost']} | {r['ideal']:.2f} | "
              f"{r['seconds']:.2f} | {r['ratio']:.3f} | {'ok' if ok else 'MISSED'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
