"""Order lookups at scale: SQLite and PostgreSQL side by side, and the whole tool layer.

    /work/venv/bin/python bench/bench_lookup.py                 # 1,000,000 orders, 10,000 codes
    /work/venv/bin/python bench/bench_lookup.py --reuse         # keep the databases of a previous run
    /work/venv/bin/python bench/bench_lookup.py --orders 100000 --no-pg
    python bench/bench_lookup.py --smoke      # every step, tiny and fast (bench/test_smoke.py)

Builds the demo database with N orders (SQLite with ``stores.init_sqlite``, PostgreSQL with
``stores.init_postgres`` and COPY) and reports how long that took; then looks up random codes
(half hits, half well-formed misses) on a warm cache and prints p50 / p99 per lookup for:

- bare ``sqlite3``, one reused read-only connection (the floor), and one connection per lookup;
- ``await SQLiteStore.get_order`` (the store's own fast path);
- for reference, one round trip event loop -> worker thread -> event loop with no work: what a
  lookup would pay if the tool layer ran it in a worker thread (it no longer does: SQLite runs
  on the event loop within a small budget, PostgreSQL through psycopg's async pool);
- the tool layer: ``tools.run_tool`` on ``get_order_status`` (input validation, the query, the
  result) plus ``json.dumps`` of the result, as the loop sends it;
- bare psycopg on one connection, ``await PostgresStore.get_order``, and the tool layer over PostgreSQL.

PostgreSQL: ``--pg-dsn`` / ``AGENTCLI_BENCH_PG_DSN`` / ``AGENTCLI_TEST_PG_DSN`` (an admin DSN:
the script creates database ``agentcli_bench``), else a throwaway server is started with
initdb/pg_ctl (``tests/pg.py``; fsync on), else the PostgreSQL rows are skipped.
Targets (issue 6, warm cache, 2 cores): SQLite store p99 <= 100 us, SQLite tool layer p99 <=
300 us, PostgreSQL tool layer over loopback p99 <= 1 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentcli.drafts.store import DraftStore  # noqa: E402
from agentcli.stores import init_sqlite  # noqa: E402
from agentcli.stores.sqlite import SQLiteStore  # noqa: E402
from agentcli.stores.records import ORDER_SQL  # noqa: E402
from agentcli.ticket import Ticket  # noqa: E402
from agentcli.tools import ToolDeps, default_registry, run_tool  # noqa: E402

TARGETS_P99_US = {
    "SQLiteStore.get_order": 100,
    "tool layer, SQLite": 300,
    "tool layer, PostgreSQL": 1000,
}
_ALNUM = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def pct(samples_ns: list[int]) -> tuple[float, float, float]:
    q = statistics.quantiles(samples_ns, n=100, method="inclusive")
    return q[49] / 1000, q[98] / 1000, statistics.fmean(samples_ns) / 1000


def pick_codes(sqlite_path: Path, n: int, seed: int = 7) -> list[str]:
    """n codes in random order: half existing orders, half well-formed codes that do not exist."""
    rng = random.Random(seed)
    with sqlite3.connect(f"file:{quote(str(sqlite_path))}?mode=ro", uri=True) as conn:
        all_codes = [r[0] for r in conn.execute("SELECT code FROM orders")]
    known = set(all_codes)
    hits = rng.sample(all_codes, n // 2)
    misses: list[str] = []
    while len(misses) < n - len(hits):
        code = ("ORD-" + str(rng.randrange(10**7, 10**8)) if rng.random() < 0.5
                else "".join(rng.choice(_ALNUM) for _ in range(10)))
        if code not in known:
            misses.append(code)
    codes = hits + misses
    rng.shuffle(codes)
    return codes


def time_calls(fn, codes: list[str]) -> list[int]:
    for c in codes[:2000]:  # warm-up (cache, prepared statements)
        fn(c)
    gc.collect()
    out = []
    clock = time.perf_counter_ns
    for c in codes:
        t0 = clock()
        fn(c)
        out.append(clock() - t0)
    return out


def time_store(store, codes: list[str]) -> list[int]:
    """``await store.get_order`` on one loop, back to back (the store's own strategy)."""

    async def main() -> list[int]:
        for c in codes[:2000]:
            await store.get_order(c, None, False)
        gc.collect()
        samples = []
        clock = time.perf_counter_ns
        for c in codes:
            t0 = clock()
            await store.get_order(c, None, False)
            samples.append(clock() - t0)
        return samples

    return asyncio.run(main())


def time_tool_layer(store, codes: list[str]) -> list[int]:
    registry = default_registry()
    deps = ToolDeps(store, DraftStore(Path(tempfile.gettempdir()) / "agentcli-bench-drafts"))
    view = Ticket("bench").view()

    async def main() -> list[int]:
        async def one(code: str) -> None:
            out = await run_tool(registry, "get_order_status", {"order_code": code}, deps, view, 30.0)
            if out.is_error:
                raise SystemExit(f"tool error for {code}: {out.result}")
            json.dumps(out.result, ensure_ascii=False)

        for c in codes[:2000]:
            await one(c)
        gc.collect()
        samples = []
        clock = time.perf_counter_ns
        for c in codes:
            t0 = clock()
            await one(c)
            samples.append(clock() - t0)
        return samples

    return asyncio.run(main())


def time_thread_hop(n: int) -> list[int]:
    """The floor of the tool layer's design: event loop -> worker thread -> event loop, no query."""

    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        noop = lambda: None  # noqa: E731
        for _ in range(2000):
            await loop.run_in_executor(None, noop)
        gc.collect()
        samples = []
        clock = time.perf_counter_ns
        for _ in range(n):
            t0 = clock()
            await loop.run_in_executor(None, noop)
            samples.append(clock() - t0)
        return samples

    return asyncio.run(main())


def sqlite_db(path: Path, n: int, reuse: bool) -> float | None:
    if reuse and path.exists():
        with sqlite3.connect(path) as c:
            if c.execute("SELECT count(*) FROM orders").fetchone()[0] == n:
                return None
    t0 = time.perf_counter()
    init_sqlite(path, n, force=True)
    return time.perf_counter() - t0


def pg_admin_dsn(args) -> tuple[str | None, object]:
    dsn = args.pg_dsn or os.environ.get("AGENTCLI_BENCH_PG_DSN") or os.environ.get("AGENTCLI_TEST_PG_DSN")
    if dsn:
        return dsn, None
    try:
        from tests.pg import start_server

        server = start_server(fsync=True)
    except Exception as e:  # noqa: BLE001 - no server: the table says so (as bench_queue.py does)
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        print(f"bench_lookup: no PostgreSQL server ({first})", file=sys.stderr)
        return None, None
    return (server.dsn, server) if server else (None, None)


def pg_db(admin: str, n: int, reuse: bool) -> tuple[str, float | None]:
    import psycopg

    from agentcli.stores import init_postgres
    from tests.pg import fresh_database, with_database

    url = with_database(admin, "agentcli_bench")
    if reuse:
        try:
            with psycopg.connect(url) as c:
                if c.execute("SELECT count(*) FROM orders").fetchone()[0] == n:
                    return url, None
        except psycopg.Error:
            pass
    url = fresh_database(admin, "agentcli_bench")
    t0 = time.perf_counter()
    init_postgres(url, n)
    return url, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--orders", type=int, default=1_000_000)
    ap.add_argument("--lookups", type=int, default=10_000)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "agentcli-bench")
    ap.add_argument("--reuse", action="store_true", help="keep databases of the same size from a previous run")
    ap.add_argument("--pg-dsn", help="admin DSN of a PostgreSQL server (creates database agentcli_bench)")
    ap.add_argument("--no-pg", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="every step, tiny and fast: checks the script runs (its figures mean nothing)")
    args = ap.parse_args()
    if args.smoke:
        args.orders, args.lookups = 1000, 200

    args.dir.mkdir(parents=True, exist_ok=True)
    path = args.dir / f"orders-{args.orders}.sqlite3"
    rows: list[tuple[str, int, float, float, float]] = []
    builds: list[str] = []

    t = sqlite_db(path, args.orders, args.reuse)
    builds.append(f"SQLite   init_sqlite({args.orders:,}): " + (f"{t:.1f} s" if t is not None else "reused"))
    codes = pick_codes(path, args.lookups)

    def add(name: str, samples: list[int]) -> None:
        rows.append((name, len(samples), *pct(samples)))
        print(f"  measured {name}", file=sys.stderr, flush=True)

    conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, check_same_thread=False)
    add("sqlite3, one reused ro connection", time_calls(lambda c: conn.execute(ORDER_SQL, (c,)).fetchone(), codes))
    conn.close()

    def connect_each(c: str) -> None:
        k = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
        k.execute(ORDER_SQL, (c,)).fetchone()
        k.close()

    add("sqlite3, a connection per lookup", time_calls(connect_each, codes[: max(1000, len(codes) // 10)]))
    add("(asyncio -> worker thread -> back, no query)", time_thread_hop(len(codes)))
    store = SQLiteStore(path)
    add("SQLiteStore.get_order", time_store(store, codes))
    add("tool layer, SQLite", time_tool_layer(store, codes))
    asyncio.run(store.aclose())

    server = None
    if not args.no_pg:
        admin, server = pg_admin_dsn(args)
        if admin is None:
            builds.append("PostgreSQL: no server (set AGENTCLI_BENCH_PG_DSN or install initdb/pg_ctl)")
        else:
            try:
                import psycopg

                from agentcli.stores import open_store
                from agentcli.stores.postgres import ORDER_SQL as PG_ORDER_SQL

                url, t = pg_db(admin, args.orders, args.reuse)
                with psycopg.connect(admin) as c:
                    version = c.execute("SHOW server_version").fetchone()[0]
                builds.append(f"PostgreSQL {version} init_postgres({args.orders:,}, COPY): "
                              + (f"{t:.1f} s" if t is not None else "reused"))
                with psycopg.connect(url, autocommit=True,
                                     options="-c default_transaction_read_only=on") as pconn:
                    add("psycopg, one connection", time_calls(
                        lambda c: pconn.execute(PG_ORDER_SQL, (c,)).fetchone(), codes))
                pstore = open_store(url, pool_size=4)
                try:
                    add("PostgresStore.get_order", time_store(pstore, codes))
                    add("tool layer, PostgreSQL", time_tool_layer(pstore, codes))
                finally:
                    asyncio.run(pstore.aclose())
            finally:
                if server is not None:
                    server.stop()

    load = os.getloadavg()
    print()
    print(f"Order lookups by code: {args.orders:,} orders, {args.lookups:,} random codes (half hits, "
          f"half misses), warm cache; {os.cpu_count()} CPUs, load {load[0]:.2f}; Python "
          f"{sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}")
    for b in builds:
        print("  " + b)
    print()
    header = f"| {'lookup':<44} | {'n':>6} | {'p50 µs':>8} | {'p99 µs':>8} | {'mean µs':>8} | {'target p99':>10} |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for name, n, p50, p99, mean in rows:
        target = TARGETS_P99_US.get(name)
        verdict = "" if target is None else (f"≤ {target} ✓" if p99 <= target else f"≤ {target} ✗")
        print(f"| {name:<44} | {n:>6} | {p50:>8.1f} | {p99:>8.1f} | {mean:>8.1f} | {verdict:>10} |")


if __name__ == "__main__":
    main()
