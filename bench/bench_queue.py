"""The drafts queue at scale: a folder and PostgreSQL side by side (issue 26 item 7).

    python bench/bench_queue.py                    # 100,000 drafts, 8 reviewers over 10,000
    python bench/bench_queue.py --drafts 20000 --no-pg
    python bench/bench_queue.py --smoke            # every step, tiny (bench/test_smoke.py)

Drafts are generated fast (files written directly with the store's format and index, rows
COPYed into the queue), never through a model. Then, for each backend:

- **save latency at N drafts**: ``store.save`` of a new draft in a new ticket, p50 / p99 (the
  folder also without its ticket index: what every save cost before, reading the whole folder);
- **first page of ``drafts list``**: ``queue.select(limit=50)`` in-process (p50), and the real
  ``agentcli drafts list -n 50 --json`` as a process (wall, start-up included);
- **8 concurrent reviewers** (processes) over a pool of 10,000 pending drafts: each claims the
  next free draft (``claim_next``) and decides it (approve or reject, with the version shown),
  for a fixed time: claim latency p50 / p99, decisions per second (all reviewers), and
  collisions (a draft decided by two reviewers: must be 0);
- **a batch of 1,000 questions** (``agentcli batch --provider offline``) writing into the
  store: wall time and questions per second.

PostgreSQL: ``--pg-dsn`` / ``AGENTCLI_BENCH_PG_DSN`` / ``AGENTCLI_TEST_PG_DSN`` (an admin DSN:
databases ``agentcli_bench_q*`` are created), else a throwaway server (``tests/pg.py``; fsync
on), else the PostgreSQL column says it has none. Targets: a save <= 20 ms and the first page
<= 0.5 s at 100,000 drafts, both backends.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentcli.drafts.backends import create_schema, open_drafts  # noqa: E402
from agentcli.drafts.base import DraftChanged, ReviewConflict  # noqa: E402
from agentcli.drafts.format import draft_id, render, text_hash, text_key  # noqa: E402
from agentcli.drafts.queue import Query, select  # noqa: E402
from agentcli.drafts.store import DraftStore  # noqa: E402

TEXT = ("Hi {n},\n\nThank you for your patience. Your order ORD-2026{i:04d} shipped on "
        "2026-11-20 and should arrive within three working days.\n\nBest regards,\nSupport")
Q = "Hi, where is my order ORD-20261234? Thanks"


def pct(xs: list[float], p: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, round(p * (len(s) - 1)))]


def ms(x: float | None) -> str:
    return "—" if x is None else (f"{x * 1000:.2f} ms" if x < 1 else f"{x:.2f} s")


def _meta(i: int, start: datetime, text: str) -> dict:
    ticket = f"T-{i}"
    return {"id": draft_id(ticket, text), "status": "pending_review",
            "created_at": (start + timedelta(milliseconds=i)).isoformat(timespec="microseconds"),
            "ticket": ticket, "order_code": f"ORD-2026{i % 10000:04d}",
            "customer": f"c{i % 997}@example.com", "question": None, "model": "bench",
            "provider": "offline", "session_id": None, "prompt_version": "p-bench", "mode": "agent",
            "questions": [Q], "lookups": [], "findings": [], "findings_sha256": text_key(text),
            "history": [], "text_sha256": text_hash(text)}


def fill_folder(folder: Path, n: int) -> float:
    """``n`` drafts written as the store writes them, with its index (no model, no lock)."""
    t0 = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / DraftStore.TICKETS).mkdir(exist_ok=True)
    start = datetime.now(timezone.utc) - timedelta(hours=6)
    index = []
    for i in range(n):
        text = TEXT.format(n=f"customer {i}", i=i % 10000)
        meta = _meta(i, start, text)
        with open(folder / f"{meta['id']}.md", "w", encoding="utf-8") as f:
            f.write(render(meta, text))
        key = DraftStore.ticket_key(meta["ticket"])
        index.append(f"{meta['created_at']}\t{meta['id']}\t{key}\n")
        with open(folder / DraftStore.TICKETS / key, "w") as f:
            f.write(meta["id"] + "\n")
    (folder / DraftStore.INDEX).write_text("".join(index))
    (folder / ".lock").touch()  # a folder in use has its lock file
    state = folder / DraftStore.STATE
    state.write_text(" " * 64)
    state.write_text(json.dumps({"version": 1, "mtime_ns": os.stat(folder).st_mtime_ns}).ljust(64))
    return time.perf_counter() - t0


def fill_queue(url: str, n: int) -> float:
    import psycopg

    t0 = time.perf_counter()
    start = datetime.now(timezone.utc) - timedelta(hours=6)
    with psycopg.connect(url) as conn:
        with conn.cursor().copy("COPY agentcli_drafts (id, ticket, saved_sha256, status, "
                                "created_at, order_code, customer, meta, body, findings, "
                                "findings_sha256) FROM STDIN") as cp:
            for i in range(n):
                text = TEXT.format(n=f"customer {i}", i=i % 10000)
                m = _meta(i, start, text)
                fixed = {k: v for k, v in m.items() if k not in (
                    "id", "status", "history", "findings", "findings_sha256")}
                cp.write_row((m["id"], json.dumps(m["ticket"]), m["text_sha256"], "pending_review",
                              m["created_at"], m["order_code"], m["customer"],
                              json.dumps(fixed, ensure_ascii=True), text.encode(), "[]",
                              json.dumps(m["findings_sha256"])))
        conn.execute("ANALYZE agentcli_drafts")
    return time.perf_counter() - t0


def save_latency(store, reps: int, tag: str) -> list[float]:
    out = []
    for r in range(reps):
        t0 = time.perf_counter()
        store.save(text=f"A new reply {tag} {r}.", ticket=f"NEW-{tag}-{r}", model="bench")
        out.append(time.perf_counter() - t0)
    return out


def save_without_index(folder: Path, reps: int) -> list[float]:
    """What a save cost before the ticket index: it read the whole folder."""
    store = DraftStore(folder)
    out = []
    for r in range(reps):
        shutil.rmtree(folder / DraftStore.TICKETS, ignore_errors=True)
        t0 = time.perf_counter()
        store.save(text=f"An old-style reply {r}.", ticket=f"OLD-{r}")
        out.append(time.perf_counter() - t0)
    # the index again, for what follows (what the next save under the lock would do)
    shutil.rmtree(folder / DraftStore.TICKETS, ignore_errors=True)
    (folder / DraftStore.STATE).write_text(" " * 64)
    with store._locked():  # noqa: SLF001 - re-index now, not inside a timed save
        pass
    return out


def first_page(store, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        sel = select(store, Query(), limit=50)
        out.append(time.perf_counter() - t0)
        assert len(sel.drafts) == 50
    return out


def cli_page(flags: list[str], home: Path) -> float:
    env = {**os.environ, "AGENTCLI_HOME": str(home), "NO_COLOR": "1"}
    env.pop("AGENTCLI_DRAFTS_URL", None)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "agentcli", "drafts", "list", "-n", "50", "--json",
                        *flags], env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if p.returncode != 0 or len(json.loads(p.stdout)) != 50:
        raise RuntimeError(f"drafts list failed: {p.stderr[-500:]}")
    return wall


def _reviewer(kind: str, where: str, who: str, seconds: float, go, out) -> None:
    store = open_drafts(url=where, folder=None) if kind == "pg" else DraftStore(where)
    claims, decided, refused = [], 0, 0
    go.wait()
    deadline = time.monotonic() + seconds
    try:
        i = 0
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            d = store.claim_next(who)
            claims.append(time.perf_counter() - t0)
            if d is None:
                break
            try:
                store.set_status(d.id, "approved" if i % 3 else "rejected", reviewer=who,
                                 reason=None if i % 3 else "bench", expect=d.version)
                decided += 1
            except (DraftChanged, ReviewConflict):
                refused += 1
            store.release(d.id, who)
            i += 1
    finally:
        store.close()
    out.put((claims, decided, refused))


def reviewers(kind: str, where: str, n: int, seconds: float) -> dict:
    ctx = multiprocessing.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_reviewer, args=(kind, where, f"r{i}", seconds, go, out))
             for i in range(n)]
    for p in procs:
        p.start()
    time.sleep(1.5 if n > 2 else 0.5)  # every process imported and connected
    t0 = time.perf_counter()
    go.set()
    res = [out.get(timeout=seconds + 120) for _ in procs]
    wall = time.perf_counter() - t0
    for p in procs:
        p.join(timeout=30)
    claims = [c for r in res for c in r[0]]
    decided = sum(r[1] for r in res)
    return {"claim_p50": pct(claims, 0.5), "claim_p99": pct(claims, 0.99),
            "decisions_s": decided / wall if wall else 0.0, "decided": decided,
            "refused": sum(r[2] for r in res)}


def collisions(kind: str, where: str) -> int:
    """Drafts that two decisions reached (must be 0: a claim is one reviewer's)."""
    store = open_drafts(url=where, folder=None) if kind == "pg" else DraftStore(where)
    try:
        n = 0
        for d in store.iter():
            hist = getattr(d, "meta", {}).get("history") or []
            if sum(1 for h in hist if h.get("to") in ("approved", "rejected")) > 1:
                n += 1
        return n
    finally:
        store.close()


def batch(flags: list[str], home: Path, n: int) -> tuple[float, int]:
    lines = "".join(json.dumps({"id": f"B-{i}", "question": Q.replace("1234", f"{i % 10000:04d}")})
                    + "\n" for i in range(n))
    env = {**os.environ, "AGENTCLI_HOME": str(home), "NO_COLOR": "1"}
    env.pop("AGENTCLI_DRAFTS_URL", None)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "agentcli", "batch", "--provider", "offline",
                        *flags, "-"], input=lines, env=env, capture_output=True, text=True,
                       timeout=3600)
    wall = time.perf_counter() - t0
    recs = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    drafted = sum(len(r.get("drafts") or []) for r in recs)
    if len(recs) != n:
        raise RuntimeError(f"batch gave {len(recs)} of {n} records: {p.stderr[-500:]}")
    return wall, drafted


def pg_admin(args) -> tuple[str | None, object]:
    dsn = args.pg_dsn or os.environ.get("AGENTCLI_BENCH_PG_DSN") or os.environ.get("AGENTCLI_TEST_PG_DSN")
    if dsn:
        return dsn, None
    try:
        from tests.pg import start_server

        server = start_server(fsync=True)
    except Exception as e:  # noqa: BLE001 - no server: the column says so
        print(f"bench_queue: no PostgreSQL server ({e})", file=sys.stderr)
        return None, None
    return (server.dsn, server) if server is not None else (None, None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--drafts", type=int, default=100_000)
    ap.add_argument("--pool", type=int, default=10_000, help="pending drafts the reviewers share")
    ap.add_argument("--reviewers", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=15.0, help="how long the reviewers work")
    ap.add_argument("--questions", type=int, default=1000, help="the batch's size")
    ap.add_argument("--saves", type=int, default=50)
    ap.add_argument("--pg-dsn")
    ap.add_argument("--no-pg", action="store_true")
    ap.add_argument("--dir", help="work folder (default: a temporary one)")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args(argv)
    if a.smoke:
        a.drafts, a.pool, a.reviewers, a.seconds, a.questions, a.saves = 300, 60, 4, 1.0, 6, 5
    work = Path(a.dir or tempfile.mkdtemp(prefix="agentcli-bench-queue-"))
    work.mkdir(parents=True, exist_ok=True)
    home = work / "home"
    home.mkdir(exist_ok=True)
    server = None
    rows: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    try:
        kinds = ["folder"]
        admin = None
        if not a.no_pg:
            admin, server = pg_admin(a)
            if admin:
                kinds.append("pg")
        for kind in kinds:
            col: dict[str, str] = {}
            rows[kind] = col
            if kind == "folder":
                big, pool = work / "big", work / "pool"
                shutil.rmtree(big, ignore_errors=True)
                shutil.rmtree(pool, ignore_errors=True)
                made = fill_folder(big, a.drafts)
                fill_folder(pool, a.pool)
                flags, pool_where = ["--drafts-dir", str(big)], str(pool)
                store = DraftStore(big)
            else:
                from tests.pg import fresh_database

                big = fresh_database(admin, "agentcli_bench_qbig")
                pool_url = fresh_database(admin, "agentcli_bench_qpool")
                create_schema(big)
                create_schema(pool_url)
                made = fill_queue(big, a.drafts)
                fill_queue(pool_url, a.pool)
                flags, pool_where = ["--drafts-url", big], pool_url
                store = open_drafts(url=big, folder=None)
            col["generate"] = f"{made:.1f} s"
            try:
                s = save_latency(store, a.saves, kind)
                col["save p50"], col["save p99"] = ms(pct(s, 0.5)), ms(pct(s, 0.99))
                if kind == "folder":
                    old = save_without_index(big, 3 if not a.smoke else 2)
                    col["save without the ticket index (before) p50"] = ms(pct(old, 0.5))
                pages = first_page(store, 5)
                col["first page (select, in-process) p50"] = ms(pct(pages, 0.5))
            finally:
                store.close()
            col["first page (`drafts list -n 50 --json`, process)"] = ms(cli_page(flags, home))
            r = reviewers(kind, pool_where, a.reviewers, a.seconds)
            col[f"{a.reviewers} reviewers: claim p50"] = ms(r["claim_p50"])
            col[f"{a.reviewers} reviewers: claim p99"] = ms(r["claim_p99"])
            col[f"{a.reviewers} reviewers: decisions/s"] = f"{r['decisions_s']:.0f}"
            col[f"{a.reviewers} reviewers: collisions"] = str(collisions(kind, pool_where))
            bflags = flags if kind == "pg" else ["--drafts-dir", str(work / "batch")]
            if kind == "folder":
                (work / "batch").mkdir(exist_ok=True)
            wall, drafted = batch(bflags, home, a.questions)
            col[f"batch of {a.questions} (offline)"] = f"{wall:.1f} s, {a.questions / wall:.0f} q/s, {drafted} drafts"
        if "pg" not in rows:
            notes.append("PostgreSQL: no server (set AGENTCLI_BENCH_PG_DSN or install initdb/pg_ctl)")
    finally:
        if server is not None:
            server.stop()
        if not a.dir:
            shutil.rmtree(work, ignore_errors=True)
    keys = list(rows["folder"].keys())
    for k in rows.get("pg", {}):
        if k not in keys:
            keys.append(k)
    print(f"drafts: {a.drafts:,}; reviewers: {a.reviewers} over {a.pool:,} pending for "
          f"{a.seconds:g} s; targets at 100,000: save <= 20 ms, first page <= 0.5 s")
    print()
    w = max(len(k) for k in keys)
    print(f"| {'measure':<{w}} | folder | PostgreSQL |")
    print(f"|{'-' * (w + 2)}|--------|------------|")
    for k in keys:
        print(f"| {k:<{w}} | {rows['folder'].get(k, '—')} | {rows.get('pg', {}).get(k, '—')} |")
    for n in notes:
        print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
