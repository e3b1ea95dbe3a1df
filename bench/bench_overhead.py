"""Lean turns: agentcli's own cost per model call and per tool cycle, concurrent tools, caching.

All in one process, against ``FakeAnthropic`` on 127.0.0.1 answering instantly:

1. Per-call overhead. A 5-turn question (4 turns that each ask for one real
   ``get_order_status`` lookup in a real SQLite demo database, then ``end_turn``) runs through
   ``App.run`` with the anthropic provider (streaming; the session log is written to real files
   as in production). Beside it, the bare ``AsyncAnthropic`` SDK sends the very same 5 request
   bodies (recorded from agentcli's own requests) and consumes the same streams. The three
   variants (bare SDK, agentcli without a renderer, agentcli with a ``TraceRenderer`` writing to
   an ``io.StringIO``-backed rich terminal console) alternate within each repetition, and the
   p50 of the paired differences gives agentcli's overhead, as the issue defines its targets:
   per model call = (agentcli without renderer - bare) / 5, everything but the HTTP exchange;
   per tool cycle = (agentcli with renderer - bare) / 4, a model call plus the lookup, the
   results message and the rendering (the final answer's call is charged to the four cycles, so
   this errs high). Process CPU time is reported beside the wall time: steadier under load.
   The grounding checks' model layer is off in these variants (the bare SDK sends no such
   call); a fourth variant with the default settings measures it apart: one forced call of its
   own per checked question, HTTP to the fake included.
2. Concurrent tools. Two read-only ``get_order_status`` calls in one turn against a store whose
   every lookup sleeps 0.5 s (a subclass of ``orders.SQLiteStore``): the wall time of the tool
   phase (first call started to last result) should be about 0.5 s, not 1 s.
3. Prompt caching. A follow-up question in the same ticket: its request must carry the cache
   breakpoints (tools, system prompt, newest message), at most 4 of them, with a byte-identical
   tools+system prefix and the previous request's messages as its prefix.
4. Tool result size: the largest ``get_order_status`` result without line items over the demo
   database (target: under 400 bytes).

    python bench/bench_overhead.py                 # 200 repetitions
    python bench/bench_overhead.py --quick         # 40 repetitions
    python bench/bench_overhead.py --profile       # + a pyinstrument profile of agentcli's side
    python bench/bench_overhead.py --json          # machine-readable (used by bench/run.py)
    python bench/bench_overhead.py --smoke         # every step, tiny and fast (bench/test_smoke.py)
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QUESTION = "Hi, can you check my orders GH56JK78MN, ORD-20261234, ORD-20260001 and KL12MN34PQ?"
FOLLOW_UP = "Thanks. And which of them has shipped?"
CODES = ["GH56JK78MN", "ORD-20261234", "ORD-20260001", "KL12MN34PQ"]
ANSWER = ("GH56JK78MN is waiting for payment to be matched; ORD-20261234 has shipped and should "
          "arrive soon; ORD-20260001 was delivered; KL12MN34PQ is complete and its license was "
          "issued. Nothing was promised beyond what the lookups returned.")
# Per call and per tool cycle: issue 22 item 9 ("back to the floor"; issue 9 had 2 and 5 ms).
TARGETS = {"per_call_ms": 0.6, "per_cycle_ms": 1.2, "result_bytes": 400}
SLOW = 0.5  # seconds per lookup of the concurrent-tools run (--smoke: 0.05)
CONCURRENT_RUNS = 3


def five_turn_handler(body: dict[str, Any]):
    """Turns 1-4: a short text and one lookup each; then the answer. Deterministic ids, so a
    replayed request gets the same reply."""
    from agentcli.testing.fake_anthropic import message, text, text_block, tool_use_block

    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    if turn < len(CODES):
        code = CODES[turn]
        return message(text_block(f"Checking order {code}."),
                       tool_use_block("get_order_status",
                                      {"order_code": code, "include_line_items": turn == 1},
                                      id=f"toolu_bench_{turn:02d}"),
                       usage={"input_tokens": 1200 + 150 * turn, "output_tokens": 40})
    return text(ANSWER, usage={"input_tokens": 1900, "output_tokens": 60})


def two_lookups_handler(body: dict[str, Any]):
    from agentcli.testing.fake_anthropic import message, text, tool_use_block

    if any(m.get("role") == "assistant" for m in body.get("messages", [])):
        return text("Both orders checked.")
    return message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}, id="toolu_c1"),
                   tool_use_block("get_order_status", {"order_code": "ORD-20261234"}, id="toolu_c2"))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Timed:
    """A consumer wrapper that adds up the time spent inside the wrapped consumer."""

    def __init__(self, inner):
        self.inner = inner
        self.seconds = 0.0

    def __call__(self, ev) -> None:
        t0 = time.perf_counter()
        self.inner(ev)
        self.seconds += time.perf_counter() - t0

    def close(self) -> None:
        self.inner.close()


class TimedLog:
    """Wraps the real SessionLog App.run writes to, adding up the time spent in it."""

    def __init__(self, inner):
        self.inner = inner
        self.seconds = 0.0

    def __call__(self, ev) -> None:
        t0 = time.perf_counter()
        self.inner(ev)
        self.seconds += time.perf_counter() - t0

    def __getattr__(self, name):
        return getattr(self.inner, name)


class PhaseClock:
    """Records when the tool phase of a question starts and ends."""

    def __init__(self):
        self.first_start: float | None = None
        self.last_result: float | None = None

    def __call__(self, ev) -> None:
        from agentcli.events import ToolCallStarted, ToolResult

        if isinstance(ev, ToolCallStarted) and self.first_start is None:
            self.first_start = time.perf_counter()
        elif isinstance(ev, ToolResult):
            self.last_result = time.perf_counter()


def _strip_cache(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_cache(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_cache(v) for v in obj]
    return obj


def _count_breakpoints(obj: Any) -> int:
    if isinstance(obj, dict):
        return ("cache_control" in obj) + sum(_count_breakpoints(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(_count_breakpoints(v) for v in obj)
    return 0


async def _run(reps: int, warmup: int, profile: bool, log) -> dict[str, Any]:
    import anthropic
    from rich.console import Console

    from agentcli.app import App
    from agentcli.config import resolve
    from agentcli.stores import init_sqlite
    from agentcli.stores.sqlite import SQLiteStore
    from agentcli.cli.render import TraceRenderer
    from agentcli.testing.fake_anthropic import FakeAnthropic

    tmp = Path(tempfile.mkdtemp(prefix="agentcli-bench-overhead-"))
    fake = FakeAnthropic(handler=five_turn_handler).start()
    slow_fake = FakeAnthropic(handler=two_lookups_handler).start()
    saved_env = dict(os.environ)
    try:
        db = tmp / "orders.sqlite3"
        init_sqlite(db, 300)
        for k in list(os.environ):
            if k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCLI_", "PG")):
                del os.environ[k]
        os.environ.update(AGENTCLI_HOME=str(tmp / "home"), ANTHROPIC_API_KEY="sk-ant-bench-not-a-secret",
                          ANTHROPIC_BASE_URL=fake.url, NO_COLOR="1")
        common = dict(provider="anthropic", db=str(db), drafts_dir=tmp / "drafts", retries=0)
        # Like for like with the bare SDK, which replays agentcli's 5 conversation requests: the
        # grounding checks' model layer (a forced call of its own after the question) is off in
        # the measured variants, and measured apart ("agent_checked", the default settings).
        try:
            settings = resolve(**common, check_model="off")
        except TypeError:  # a --before ref older than the model layer
            settings = resolve(**common)
        checked_settings = resolve(**common)
        class MeasuredApp(App):
            """The real App; its session log is wrapped to time it."""

            timed: TimedLog | None = None

            def log_for(self, conv):
                log = super().log_for(conv)
                if self.timed is None or self.timed.inner is not log:
                    self.timed = TimedLog(log)
                return self.timed

        app = MeasuredApp.open(settings)  # client, schemas, system prompt, store: built once
        checked_app = MeasuredApp.open(checked_settings)
        bare = anthropic.AsyncAnthropic(api_key="sk-ant-bench-not-a-secret", base_url=fake.url,
                                        max_retries=0, timeout=settings.request_timeout)
        buf = io.StringIO()
        console = Console(file=buf, force_terminal=True, color_system="truecolor", width=120,
                          highlight=False, soft_wrap=True)

        async def agent_once(render: bool, checked: bool = False) -> dict[str, float]:
            """Wall and CPU seconds of one 5-turn question through App.run, and its parts
            (``checked``: with the checks' model layer, as the default settings run it)."""
            a = checked_app if checked else app
            conv = a.conversation()
            consumers: list[Any] = []
            r = None
            if render:
                r = Timed(TraceRenderer(console, live=True))
                consumers.append(r)
            c0, t0 = time.process_time(), time.perf_counter()
            b = await a.run(conv, QUESTION, consumers)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if r:
                r.close()
            log = a.log_for(conv)
            log.close()  # one session file per question; do not hold descriptors
            res = b.result()
            if res["status"] != "ok" or res["turns"] != 5 or len(res["tool_calls"]) != 4:
                raise RuntimeError(f"unexpected result: {res['status']} {res['turns']} {res.get('error')}")
            buf.seek(0)
            buf.truncate()
            return {"wall": wall, "cpu": cpu, "render": r.seconds if r else 0.0, "log": log.seconds,
                    "lookup": sum(c["duration_ms"] for c in res["tool_calls"]) / 1000}

        async def bare_once(payloads: list[dict[str, Any]]) -> dict[str, float]:
            c0, t0 = time.process_time(), time.perf_counter()
            for p in payloads:
                params = {k: v for k, v in p.items() if k != "stream"}
                async with bare.messages.stream(**params) as s:
                    async for _ev in s:
                        pass
                    msg = await s.get_final_message()
                if msg.stop_reason is None:
                    raise RuntimeError("bare SDK: incomplete message")
            return {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}

        # Record agentcli's own 5 requests: the bare SDK replays exactly these bodies.
        await agent_once(False)
        payloads = [json.loads(json.dumps(r)) for r in fake.requests]
        if len(payloads) != 5 or not all(p.get("stream") is True for p in payloads):
            raise RuntimeError(f"expected 5 streaming requests, got {len(payloads)}")
        fake.reset()

        built = (app.provider.client, app.provider.tools, app.provider.system, app.store)
        variants = ("bare", "agent", "agent_render", "agent_checked")
        samples: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
        for i in range(warmup + reps):
            order = list(variants) if i % 2 == 0 else list(reversed(variants))  # none always first
            got = {v: await (bare_once(payloads) if v == "bare"
                             else agent_once(v == "agent_render", checked=v == "agent_checked"))
                   for v in order}
            fake.reset()
            if i >= warmup:
                for v in variants:
                    samples[v].append(got[v])
            if (i + 1) % 50 == 0:
                log(f"{i + 1}/{warmup + reps} repetitions")

        questions = 1 + 2 * (warmup + reps)
        now = (app.provider.client, app.provider.tools, app.provider.system, app.store)
        same = all(a is b for a, b in zip(built, now))
        conns = len(getattr(app.store, "_conns", []) or [])
        once = {"ok": same, "detail": f"SDK client, tool schemas, system prompt and store: the same objects "
                                      f"across {questions} questions; {conns} SQLite connection(s) "
                                      f"(one per thread that ran lookups)"}

        def col(v: str, k: str) -> list[float]:
            return [x[k] for x in samples[v]]

        def diff(v: str, k: str) -> list[float]:
            return [a - b for a, b in zip(col(v, k), col("bare", k))]

        prof_text = None
        if profile:
            prof_text = await _profile(agent_once, log)

        # Prompt caching: a follow-up question in the same ticket.
        fake.reset()
        conv = app.conversation()
        await app.run(conv, QUESTION)
        await app.run(conv, FOLLOW_UP)
        app.log_for(conv).close()
        reqs = list(fake.requests)
        cache = _cache_checks(reqs, conv.history)
        fake.reset()

        # Concurrent tools against a slowed store.
        slow_store = _slow_store_class(SQLiteStore)(db, SLOW)
        os.environ["ANTHROPIC_BASE_URL"] = slow_fake.url
        slow_app = App.open(settings, store=slow_store)
        phases, questions = [], []
        try:
            for _ in range(CONCURRENT_RUNS):
                clock = PhaseClock()
                conv = slow_app.conversation()
                t0 = time.perf_counter()
                b = await slow_app.run(conv, "GH56JK78MN and ORD-20261234?", [clock])
                questions.append(time.perf_counter() - t0)
                slow_app.log_for(conv).close()
                if b.result()["status"] != "ok" or len(b.result()["tool_calls"]) != 2:
                    raise RuntimeError("concurrency run: unexpected result")
                phases.append(clock.last_result - clock.first_start)
        finally:
            await slow_app.aclose()

        result_bytes = _max_result_bytes(db)

        await bare.close()
        await app.aclose()
        await checked_app.aclose()
        return {
            "reps": reps,
            "p50_ms": {v: pct(col(v, "wall"), 50) * 1000 for v in variants},
            "cpu_p50_ms": {v: pct(col(v, "cpu"), 50) * 1000 for v in variants},
            "diff_p50_ms": {v: pct(diff(v, "wall"), 50) * 1000 for v in variants[1:]},
            "diff_p90_ms": {v: pct(diff(v, "wall"), 90) * 1000 for v in variants[1:]},
            "cpu_diff_p50_ms": {v: pct(diff(v, "cpu"), 50) * 1000 for v in variants[1:]},
            "model_layer_p50_ms": pct([c - a for c, a in zip(col("agent_checked", "wall"),
                                                             col("agent", "wall"))], 50) * 1000,
            "model_layer_cpu_p50_ms": pct([c - a for c, a in zip(col("agent_checked", "cpu"),
                                                                 col("agent", "cpu"))], 50) * 1000,
            "render_p50_ms": pct(col("agent_render", "render"), 50) * 1000,
            "log_p50_ms": pct(col("agent_render", "log"), 50) * 1000,
            "lookup_p50_ms": pct(col("agent_render", "lookup"), 50) * 1000,
            "cache": cache,
            "once": once,
            "concurrent_phase_s": statistics.median(phases),
            "concurrent_question_s": statistics.median(questions),
            "result_bytes": result_bytes,
            "profile": prof_text,
        }
    finally:
        fake.stop()
        slow_fake.stop()
        os.environ.clear()
        os.environ.update(saved_env)
        shutil.rmtree(tmp, ignore_errors=True)


def _slow_store_class(base):
    class SlowStore(base):
        """The real SQLite store; every lookup sleeps first (as tests/test_loop.py's SlowStore).
        A store this slow is not run inline on the event loop (``inline``): like PostgreSQL,
        its lookups go to worker threads, which is what lets two of them overlap."""

        inline = False

        def __init__(self, path, delay):
            super().__init__(path)
            self.delay = delay

        def lookup(self, code, customer, include_lines):
            time.sleep(self.delay)
            return super().lookup(code, customer, include_lines)

    return SlowStore


def _cache_checks(reqs: list[dict[str, Any]], history: list[Any]) -> dict[str, Any]:
    eph = {"type": "ephemeral"}
    if len(reqs) != 6:
        return {"ok": False, "detail": f"expected 5 + 1 requests, got {len(reqs)}"}
    prev, follow = reqs[4], reqs[5]
    marks = {
        "tools": follow["tools"][-1].get("cache_control") == eph,
        "system": follow["system"][-1].get("cache_control") == eph,
        "newest message": follow["messages"][-1]["content"][-1].get("cache_control") == eph,
    }
    max_bp = max(_count_breakpoints(r) for r in reqs)
    stable = len({json.dumps([r["tools"], r["system"]], sort_keys=True) for r in reqs}) == 1
    pm, fm = _strip_cache(prev["messages"]), _strip_cache(follow["messages"])
    prefix = fm[:len(pm)] == pm
    clean_history = _count_breakpoints(history) == 0
    ok = all(marks.values()) and max_bp <= 4 and stable and prefix and clean_history
    detail = (f"breakpoints on {', '.join(k for k, v in marks.items() if v) or 'nothing'}; "
              f"max {max_bp} per request; tools+system identical in all: {'yes' if stable else 'NO'}; "
              f"previous request is a prefix: {'yes' if prefix else 'NO'}; "
              f"history free of markers: {'yes' if clean_history else 'NO'}")
    return {"ok": ok, "detail": detail, "follow_up_messages": len(follow["messages"])}


def _max_result_bytes(db: Path) -> int:
    from agentcli.stores.sqlite import SQLiteStore

    store = SQLiteStore(db)
    try:
        codes = [r[0] for r in sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute("SELECT code FROM orders")]
        return max(len(json.dumps(store.lookup(c, None, False), ensure_ascii=False).encode()) for c in codes)
    finally:
        close = getattr(store, "close", None)
        if close:
            close()


async def _profile(agent_once, log) -> str | None:
    try:
        from pyinstrument import Profiler
    except ImportError:
        return "pyinstrument is not installed (pip install pyinstrument)"
    log("profiling 100 questions with rendering ...")
    prof = Profiler(interval=0.0002, async_mode="enabled")
    prof.start()
    for _ in range(100):
        await agent_once(True)
    prof.stop()
    return prof.output_text(unicode=False, color=False, show_all=False)


def report(res: dict[str, Any]) -> dict[str, Any]:
    p50, d = res["p50_ms"], res["diff_p50_ms"]
    rows = [
        {"measure": "5-turn question, bare AsyncAnthropic SDK", "value": f"{p50['bare']:.2f} ms p50",
         "target": "", "verdict": "the floor"},
        {"measure": "5-turn question, agentcli App.run", "value": f"{p50['agent']:.2f} ms p50",
         "target": "", "verdict": f"{p50['agent'] / p50['bare']:.2f}x bare"},
        {"measure": "5-turn question, agentcli + TraceRenderer", "value": f"{p50['agent_render']:.2f} ms p50",
         "target": "", "verdict": f"{p50['agent_render'] / p50['bare']:.2f}x bare"},
    ]
    cd = res["cpu_diff_p50_ms"]
    # The two targets: per model call, agentcli's own cost (loop, tools, session log;
    # everything but the HTTP exchange); per tool cycle, including the lookup and the rendering.
    per_call, per_cycle = d["agent"] / 5, d["agent_render"] / 4
    rows.append({"measure": "overhead per model call (no renderer)",
                 "value": f"{per_call:.3f} ms p50 (CPU {cd['agent'] / 5:.3f})",
                 "target": f"<= {TARGETS['per_call_ms']:g} ms",
                 "verdict": "ok" if per_call <= TARGETS["per_call_ms"] else "MISSED"})
    rows.append({"measure": "overhead per tool cycle (lookup + rendering)",
                 "value": f"{per_cycle:.3f} ms p50 (CPU {cd['agent_render'] / 4:.3f})",
                 "target": f"<= {TARGETS['per_cycle_ms']:g} ms",
                 "verdict": "ok" if per_cycle <= TARGETS["per_cycle_ms"] else "MISSED"})
    rows.append({"measure": "  per model call with rendering", "value":
                 f"{d['agent_render'] / 5:.3f} ms p50 (CPU {cd['agent_render'] / 5:.3f})",
                 "target": "", "verdict": "info"})
    rows.append({"measure": "  in it: session log (SessionLog)", "value": f"{res['log_p50_ms'] / 4:.3f} ms p50",
                 "target": "", "verdict": "per tool cycle"})
    rows.append({"measure": "  in it: rendering (TraceRenderer)", "value": f"{res['render_p50_ms'] / 4:.3f} ms p50",
                 "target": "", "verdict": "per tool cycle"})
    if "model_layer_p50_ms" in res:
        rows.append({"measure": "  checks' model layer (its own call)", "value":
                     f"{res['model_layer_p50_ms']:.3f} ms p50 (CPU {res['model_layer_cpu_p50_ms']:.3f})",
                     "target": "", "verdict": "per checked question, HTTP included: not in the rows above"})
    rows.append({"measure": "  lookup, start to result", "value": f"{res['lookup_p50_ms'] / 4:.3f} ms p50",
                 "target": "", "verdict": "per call: the tool's duration_ms (overlaps event handling)"})
    ph = res["concurrent_phase_s"]
    rows.append({"measure": f"2 concurrent lookups of {SLOW:g} s each, tool phase",
                 "value": f"{ph:.3f} s", "target": f"~{SLOW:g} s (not {2 * SLOW:g})",
                 "verdict": "ok" if ph < 1.5 * SLOW else "MISSED"})
    rows.append({"measure": "built once per process", "value": "yes" if res["once"]["ok"] else "NO",
                 "target": "client, schemas, prompt, db", "verdict": "ok" if res["once"]["ok"] else "MISSED"})
    c = res["cache"]
    rows.append({"measure": "follow-up request carries cache breakpoints", "value": "yes" if c["ok"] else "NO",
                 "target": "tools, system, newest", "verdict": "ok" if c["ok"] else "MISSED"})
    rows.append({"measure": "largest order result without line items", "value": f"{res['result_bytes']} B",
                 "target": f"< {TARGETS['result_bytes']} B",
                 "verdict": "ok" if res["result_bytes"] < TARGETS["result_bytes"] else "MISSED"})
    return {"title": f"Per-call overhead (in process, FakeAnthropic answering instantly, {res['reps']} repetitions)",
            "rows": rows,
            "notes": ["overhead = p50 of paired (agentcli - bare SDK) wall times of one repetition; per call "
                      "= no-renderer difference / 5, per tool cycle = with-renderer difference / 4; CPU = the "
                      "same with process CPU time (steadier on a busy machine); p90 per call "
                      f"{res['diff_p90_ms']['agent'] / 5:.3f} ms, per tool cycle "
                      f"{res['diff_p90_ms']['agent_render'] / 4:.3f} ms",
                      f"caching: {c['detail']}",
                      f"built once: {res['once']['detail']}",
                      f"concurrent tools: whole question {res['concurrent_question_s']:.3f} s (2 model calls)"]}


def print_section(sec: dict[str, Any]) -> None:
    print(sec["title"])
    w = max(len(r["measure"]) for r in sec["rows"])
    wv = max(len(r["value"]) for r in sec["rows"])
    wt = max(len(r["target"]) for r in sec["rows"])
    for r in sec["rows"]:
        print(f"  {r['measure']:<{w}}  {r['value']:<{wv}}  {r['target']:<{wt}}  {r['verdict']}".rstrip())
    for n in sec.get("notes", []):
        print(f"  note: {n}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200, help="measured repetitions (default 200)")
    ap.add_argument("--quick", action="store_true", help="40 repetitions")
    ap.add_argument("--profile", action="store_true", help="also profile agentcli's side (pyinstrument)")
    ap.add_argument("--json", action="store_true", help="print one JSON object (for bench/run.py)")
    ap.add_argument("--smoke", action="store_true",
                    help="every step, tiny and fast: checks the script runs (its figures mean nothing)")
    a = ap.parse_args(argv)
    reps = 40 if a.quick else max(5, a.reps)
    warmup = max(5, reps // 10)
    if a.smoke:
        global SLOW, CONCURRENT_RUNS
        reps, warmup, SLOW, CONCURRENT_RUNS = 3, 1, 0.05, 1

    def log(msg: str) -> None:
        sys.stderr.write(f"bench_overhead: {msg}\n")
        sys.stderr.flush()

    res = asyncio.run(_run(reps, warmup=warmup, profile=a.profile, log=log))
    sec = report(res)
    if a.json:
        print(json.dumps({"sections": [sec], "raw": {k: v for k, v in res.items() if k != "profile"}}))
    else:
        print_section(sec)
    if res.get("profile"):
        (sys.stderr if a.json else sys.stdout).write("\n" + res["profile"] + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
