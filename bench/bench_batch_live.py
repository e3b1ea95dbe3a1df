"""Benchmark of a live batch at a rate limit, from its first request (issue 27 item 5; prints a
table, asserts nothing).

The fake Messages API enforces a request rate (``--rps``, a one-second bucket, answering 429 +
``retry-after-ms`` + the rate-limit headers beyond it) and answers each request after
``--latency`` s. Each question is two model calls (``get_order_status`` on a real demo order in a
real SQLite database, then the answer). The concurrency the limit allows is ``rps * latency``;
the batch runs at 4x and 16x that, from a cold start (no rate-limit header known when the
first request goes). "of the limit" is requests answered per second over the limit; the bucket
starts full (one second's worth may go at once), so the column beside it leaves that burst out.
Seconds are the batch's own (its summary: first question sent to last
record written; the interpreter, the SDK's import and the App are outside them). Goals: 0 questions lost, model requests answered per second >= 0.95 of the
limit, 429s <= 5 % of the requests sent.

Everything in this process: the real SDK over HTTP to the fake on 127.0.0.1 and the real
``BatchRunner`` with a real ``App`` (demo SQLite database, temporary home).

    python bench/bench_batch_live.py [--rps 20] [--latency 0.25] [--questions 200] [--times 4,16]
    python bench/bench_batch_live.py --smoke   # every step, tiny and fast (bench/test_smoke.py)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentcli.stores.demo import FIXED_ORDERS  # noqa: E402
from agentcli.testing.fake_anthropic import (  # noqa: E402
    FakeAnthropic,
    message,
    text,
    tool_results,
    tool_use_block,
)
from agentcli.testing.limits import Limits  # noqa: E402

CODES = [o[0] for o in FIXED_ORDERS]


def scenario(req: dict):
    res = tool_results(req)
    if res:
        out = json.loads(res[0]["content"])
        return text(f"Order {out.get('order_code')} is {out.get('status', 'not found')}.")
    c = req["messages"][0]["content"]
    q = c if isinstance(c, str) else "".join(b.get("text", "") for b in c if b.get("type") == "text")
    code = next((x for x in CODES if x in q), CODES[0])
    return message(tool_use_block("get_order_status", {"order_code": code}))


async def _batch(n: int, concurrency: int) -> tuple[object, list[dict], object]:
    from agentcli.app import App
    from agentcli.batch.engine import BatchRunner, Item
    from agentcli.config import resolve

    out: list[str] = []
    app = App.open(resolve(retries=3), pool_size=8)
    try:
        runner = BatchRunner(app, concurrency=concurrency, emit=out.append)
        items = [Item(i, i, f"ticket {i}: where is order {CODES[i % len(CODES)]}?") for i in range(1, n + 1)]
        summary = await runner.run(items)
        return summary, [json.loads(x) for x in out], runner.gate
    finally:
        await app.aclose()


def run_one(rps: float, latency: float, n: int, times: int, home: str) -> dict:
    allowed = max(1, round(rps * latency))
    conc = min(256, allowed * times)
    with FakeAnthropic(latency=latency, handler=scenario, record=False) as fake:
        os.environ.update(AGENTCLI_HOME=home, AGENTCLI_PROVIDER="anthropic", ANTHROPIC_API_KEY="bench-key",
                          ANTHROPIC_BASE_URL=fake.url, AGENTCLI_DRAFTS_DIR=os.path.join(home, "drafts"))
        fake.limits = Limits(requests_per_s=rps)
        summary, recs, gate = asyncio.run(_batch(n, conc))
        dt = summary.elapsed_s  # the batch's own time: first question sent to last record written
        lim = fake.limits
    ok = sum(r["status"] == "ok" for r in recs)
    sent = lim.admitted + lim.rejected
    return {"times": times, "concurrency": conc, "allowed": allowed, "questions": n,
            "lost": n - ok, "requests": lim.admitted, "429s": lim.rejected,
            "share_429": lim.rejected / sent if sent else 0.0, "seconds": dt,
            "ratio": lim.admitted / dt / rps, "net": max(0, lim.admitted - rps) / dt / rps,
            "start": getattr(gate, "start_limit", None), "gate": gate.status()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rps", type=float, default=20.0)
    ap.add_argument("--latency", type=float, default=0.25)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--times", default="4,16", help="multiples of the concurrency the limit allows")
    ap.add_argument("--smoke", action="store_true",
                    help="every step, tiny and fast: checks the script runs (its figures mean nothing)")
    a = ap.parse_args(argv)
    if a.smoke:
        a.questions, a.rps, a.latency = 12, 40.0, 0.05
    from agentcli.stores import init_sqlite

    rows = []
    with tempfile.TemporaryDirectory() as home:
        db = Path(home) / "orders.db"
        init_sqlite(db)
        os.environ["AGENTCLI_DB"] = str(db)
        for t in [int(x) for x in a.times.split(",") if x]:
            rows.append(run_one(a.rps, a.latency, a.questions, t, home))
    print(f"Live batch at a rate limit from a cold start: {a.questions} questions of 2 model calls, "
          f"limit {a.rps:g} requests/s, latency {a.latency:g} s (the limit allows "
          f"{rows[0]['allowed'] if rows else '?'} in flight); goals: 0 lost, >= 0.95 of the limit, "
          "429s <= 5 % of requests")
    print()
    print("| concurrency | started at | lost | requests ok | 429s | 429 share | seconds | of the limit "
          "| without the first second's burst | verdict | gate at the end |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        good = r["lost"] == 0 and r["ratio"] >= 0.95 and r["share_429"] <= 0.05
        print(f"| {r['concurrency']} ({r['times']}x) | {r['start']} | {r['lost']} | {r['requests']} | "
              f"{r['429s']} | {r['share_429'] * 100:.1f} % | {r['seconds']:.1f} | {r['ratio']:.3f} | "
              f"{r['net']:.3f} | "
              f"{'ok' if good else 'MISSED'} | {r['gate']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
