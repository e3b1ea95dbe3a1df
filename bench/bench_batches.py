"""Benchmark: one night batch through ``--via live`` at a rate limit and ``--via batches`` with a
processing delay, side by side (issue 27 item 6; prints one table, asserts nothing).

The same 1,000 questions (two model calls each: ``get_order_status`` on a real demo order in a
real SQLite database, then the answer; input tokens counted from each request's size, as the
API would bill them) through the real console script, against the fake Messages + Message
Batches API in this process:

- ``--via live``: the fake enforces ``--rps`` requests per second (429 + rate-limit headers
  beyond it) and answers each request after ``--latency`` s; ``--concurrency`` 16;
- ``--via batches``: each batch stays in progress ``--batch-delay`` s (its requests end at
  random moments within it), no rate limit (batches are off it).

Columns: wall time of the whole command (and the batch's own, from its summary line: the
interpreter and the SDK's import left out), model requests (live requests, or batch requests),
batches, tokens (input + output, from the records), and the cost at list prices
(``providers.pricing``: the records' ``estimated_cost_usd``, batch calls at half price). The
wall times scale with the two settings; the real API's batches take minutes to an hour, and a
first-tier key has 50 requests per minute, so the last line extrapolates both to those.

    python bench/bench_batches.py [--questions 1000] [--rps 20] [--latency 0.25] [--batch-delay 20]
    python bench/bench_batches.py --smoke   # every step, tiny and fast (bench/test_smoke.py)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentcli.stores import init_sqlite  # noqa: E402
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
    used = {"input_tokens": max(1, len(json.dumps(req)) // 4)}
    res = tool_results(req)
    if res:
        out = json.loads(res[0]["content"])
        return text(f"Order {out.get('order_code')} is {out.get('status', 'not found')}; a colleague "
                    "will follow up if anything changes.", usage=used)
    c = req["messages"][0]["content"]
    q = c if isinstance(c, str) else "".join(b.get("text", "") for b in c if b.get("type") == "text")
    code = next((x for x in CODES if x in q), CODES[0])
    return message(tool_use_block("get_order_status", {"order_code": code}), usage=used)


def agentcli_exe() -> str:
    exe = Path(sys.executable).parent / "agentcli"
    return str(exe) if exe.exists() else (shutil.which("agentcli") or "agentcli")


def run(via: str, fake: FakeAnthropic, qfile: Path, home: Path, db: Path) -> dict:
    out = home / f"{via}.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCLI_"))}
    env.update(AGENTCLI_HOME=str(home), AGENTCLI_DB=str(db), AGENTCLI_DRAFTS_DIR=str(home / "drafts"),
               AGENTCLI_PROVIDER="anthropic", ANTHROPIC_API_KEY="bench-key", ANTHROPIC_BASE_URL=fake.url)
    t0 = time.perf_counter()
    p = subprocess.run([agentcli_exe(), "batch", str(qfile), "--via", via, "--concurrency", "16",
                        "-o", str(out)], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    recs = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    tokens = sum(r["usage"]["input_tokens"] + r["usage"]["output_tokens"] for r in recs)
    cost = sum(r.get("estimated_cost_usd") or 0.0 for r in recs)
    n_batch = sum(len(c) for c in fake.batches.creates)
    summary = (p.stderr.strip().splitlines() or [""])[-1]
    m = re.search(r"answered .*? in ([0-9.]+) s", summary)
    return {"via": via, "exit": p.returncode, "wall": wall, "own": float(m.group(1)) if m else float("nan"), "ok": sum(r["status"] == "ok" for r in recs),
            "requests": n_batch if via == "batches" else fake.limits.admitted,
            "rejected": 0 if via == "batches" else fake.limits.rejected,
            "batches": len(fake.batches.creates), "tokens": tokens, "cost": cost,
            "summary": summary}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--rps", type=float, default=20.0)
    ap.add_argument("--latency", type=float, default=0.25)
    ap.add_argument("--batch-delay", type=float, default=20.0)
    ap.add_argument("--smoke", action="store_true",
                    help="every step, tiny and fast: checks the script runs (its figures mean nothing)")
    a = ap.parse_args(argv)
    if a.smoke:
        a.questions, a.rps, a.latency, a.batch_delay = 16, 40.0, 0.02, 0.3
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        db = home / "orders.db"
        init_sqlite(db)
        qfile = home / "q.jsonl"
        qfile.write_text("".join(json.dumps({"id": f"T-{i}", "question": f"Where is order {CODES[i % len(CODES)]}?"}) + "\n"
                                 for i in range(a.questions)))
        with FakeAnthropic(latency=a.latency, handler=scenario, record=False) as fake:
            fake.limits = Limits(requests_per_s=a.rps)
            rows.append(run("live", fake, qfile, home, db))
        with FakeAnthropic(handler=scenario, record=True, batch_delay=a.batch_delay) as fake:
            rows.append(run("batches", fake, qfile, home, db))
    print(f"One night batch, {a.questions} questions of 2 model calls: --via live at {a.rps:g} requests/s "
          f"(latency {a.latency:g} s, --concurrency 16) against --via batches (each batch "
          f"{a.batch_delay:g} s in progress)")
    print()
    print("| via | exit | ok | wall s | batch's own s | model requests | 429s | batches | tokens | "
          "cost at list prices |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['via']} | {r['exit']} | {r['ok']} | {r['wall']:.1f} | {r['own']:.1f} | {r['requests']} | "
              f"{r['rejected']} | "
              f"{r['batches'] or '-'} | {r['tokens']:,} | ${r['cost']:.4f} |")
    live, b = rows
    if live["cost"] and live["wall"]:
        print()
        print(f"batches ÷ live: wall {b['wall'] / live['wall']:.2f}x, cost {b['cost'] / live['cost']:.2f}x, "
              f"tokens {b['tokens'] / max(1, live['tokens']):.2f}x")
        reqs = live["requests"]
        rounds = max(1, b["batches"])
        print(f"at the real API's pace: live at 50 requests/minute takes {reqs / 50:.0f} min for these "
              f"{reqs} requests; {rounds} batch rounds of 5 to 60 min take {5 * rounds}-{60 * rounds} min")
    print()
    for r in rows:
        print(f"- {r['via']}: {r['summary']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
