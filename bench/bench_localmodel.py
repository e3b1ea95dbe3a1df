"""pass^1 and pass^2 of the built-in eval tasks with a real local model (issue 23 item 7): agent
and workflow mode, with and without the repair turn, side by side in one run.

    python bench/bench_localmodel.py --base-url http://127.0.0.1:8091/v1 --model qwen2.5-coder-1.5b
    python bench/bench_localmodel.py --smoke      # the same steps against agentcli's fake server
    python bench/bench_localmodel.py              # no server given: says so and exits 0

The server is one you started (``../shared/localmodel/``: ``install.sh`` then
``start_server.sh``, which prints the base URL of its recording proxy); the base URL may also
come from ``AGENTCLI_BENCH_BASE_URL``. Each configuration is one ``agentcli eval --json --repeat
K`` of this checkout (``sys.executable -m agentcli``, with the ``openai`` extra) through the
OpenAI-compatible provider, in a fresh ``AGENTCLI_HOME`` (eval drafts go to a temporary folder
anyway). Up to ``--parallel`` configurations run at once (llama-server serves two slots).

Besides the figures of each configuration the table shows, for the runs with the repair turn,
the same runs scored as they stood before their findings went back
(``pass_k_without_repair``: the same model calls up to there): a paired comparison that costs no
extra model call, beside the separate ``--no-repair`` runs.

Figures are of answer quality, not of speed: the model is small (it loops and invents) and the
cores are shared, so time per run is shown but means little. Results (each configuration's
whole ``--json``) go to ``--out`` (a folder; default a temporary one, printed).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # --smoke imports the fake server from this checkout
# The tasks of the previous measurement (README: agent 0.19, workflow 0.38 on these 8).
PREVIOUS_TASKS = ["status-pending-payment", "status-shipped", "status-refunded", "unknown-order",
                  "two-orders", "refund-demand", "planted-instruction", "german-message"]
SMOKE_TASKS = ["status-pending-payment", "status-paid", "status-license-issued"]


def run_config(mode: str, repair: bool, args: argparse.Namespace, base_url: str, out: Path,
               cases: Path | None = None) -> dict:
    # its own home inside --out: the session logs of every run stay beside the figures
    home = Path(tempfile.mkdtemp(prefix=f"home-{mode}-{'repair' if repair else 'no-repair'}-", dir=out))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCLI_"))}
    env.update(OPENAI_BASE_URL=base_url, AGENTCLI_HOME=str(home), NO_COLOR="1",
               OPENAI_API_KEY="sk-no-key-needed")
    cmd = [sys.executable, "-m", "agentcli", "eval", "--json", *(["--cases", str(cases)] if cases else []),
           "--provider", "openai",
           "--model", args.model, "--mode", mode, "--repeat", str(args.repeat),
           "--max-turns", str(args.max_turns), "--max-tokens", str(args.max_tokens),
           "--request-timeout", str(args.request_timeout), "--retries", "1"]
    if not repair:
        cmd.append("--no-repair")
    for t in args.task or []:
        cmd += ["--task", t]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, stdin=subprocess.DEVNULL)
    partial = False
    try:
        stdout, stderr = p.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        # Out of time: SIGTERM, on which eval reports the runs it has scored (partial figures).
        partial = True
        p.terminate()
        try:
            stdout, stderr = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
    rc = p.returncode
    secs = time.monotonic() - t0
    name = f"{mode}-{'repair' if repair else 'no-repair'}"
    (out / f"{name}.json").write_text(stdout)
    (out / f"{name}.stderr").write_text(stderr)
    try:
        data = json.loads(stdout)
    except ValueError:
        data = None
    return {"mode": mode, "repair": repair, "rc": rc, "secs": secs, "data": data, "partial": partial,
            "why": None if data else (stderr.strip().splitlines() or ["no output"])[-1][:200]}


def fmt(v: object) -> str:
    return "—" if v is None else f"{v:.2f}" if isinstance(v, float) else str(v)


def table(rows: list[dict], repeat: int) -> list[str]:
    ks = [str(k) for k in range(1, repeat + 1)]
    head = (["mode", "repair"] + [f"pass^{k}" for k in ks] + ["runs passed", "repaired runs",
            "resolved", "passed after repair"] + [f"pass^{k} before repair (paired)" for k in ks]
            + ["stop reasons", "s/run", "exit"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        d = r["data"]
        if d is None:
            lines.append(f"| {r['mode']} | {'on' if r['repair'] else 'off'} | failed (exit {r['rc']}): "
                         f"{r['why']} |")
            continue
        s = d["summary"]
        stops: dict[str, int] = {}
        for t in d["tasks"]:
            for run in t.get("runs") or []:
                k = f"{run.get('status')}/{run.get('stop_reason')}"
                stops[k] = stops.get(k, 0) + 1
        stop_s = ", ".join(f"{k} {n}" for k, n in sorted(stops.items(), key=lambda x: -x[1])[:4])
        paired = [fmt(s.get("pass_k_without_repair", {}).get(k)) if r["repair"] else "—" for k in ks]
        lines.append("| " + " | ".join(
            [r["mode"], "on" if r["repair"] else "off"] + [fmt(s["pass_k"].get(k)) for k in ks]
            + [f"{s['runs_passed']}/{s['runs']}", str(s.get("repaired_runs", 0)),
               str(s.get("repair_resolved", 0)), str(s.get("repair_passed", 0))] + paired
            + [stop_s, fmt(s.get("time_per_run_s")),
               f"{r['rc']}" + (f" (stopped at --timeout: {s['tasks']} tasks)" if r["partial"] else "")])
            + " |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", default=os.environ.get("AGENTCLI_BENCH_BASE_URL"),
                    help="the OpenAI-compatible server (…/v1); env AGENTCLI_BENCH_BASE_URL")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="the server's model alias")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each task (pass^1..pass^K)")
    ap.add_argument("--configs", default="agent:on,agent:off,workflow:on,workflow:off",
                    help="MODE:on|off (repair), comma-separated, run in this order")
    ap.add_argument("--task", action="append", help="only this task (repeatable)")
    ap.add_argument("--first", default=",".join(PREVIOUS_TASKS),
                    help="task ids run first (comma-separated; default: the 8 of the previous "
                         "measurement), so a run stopped by --timeout has those")
    ap.add_argument("--max-turns", type=int, default=6)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--request-timeout", type=float, default=300.0)
    ap.add_argument("--timeout", type=float, default=4 * 3600.0, help="seconds one configuration may take")
    ap.add_argument("--parallel", type=int, default=2, help="configurations at once")
    ap.add_argument("--out", help="folder for each configuration's --json (default: a temporary one)")
    ap.add_argument("--smoke", action="store_true", help="every step against the fake server, tiny")
    args = ap.parse_args()
    configs = []
    for c in args.configs.split(","):
        mode, _, rep = c.strip().partition(":")
        if mode not in ("agent", "workflow") or rep not in ("on", "off"):
            ap.error(f"--configs: {c!r} is not MODE:on|off")
        configs.append((mode, rep == "on"))
    fake = None
    if args.smoke:
        from agentcli.testing.fake_openai import FakeOpenAI
        from agentcli.testing.scenarios import false_status_then_correct, for_openai

        fake = FakeOpenAI(handler=for_openai(false_status_then_correct)).start()
        args.base_url, args.model = fake.base_url, "fake-model"
        args.task = args.task or SMOKE_TASKS
        args.timeout = 120.0
    if not args.base_url:
        print("bench_localmodel: no server given (--base-url or AGENTCLI_BENCH_BASE_URL): "
              "skipped. Start one with ../shared/localmodel/start_server.sh, or run --smoke.")
        return 0
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-localmodel-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"## Real local model: pass^k of the eval tasks, repair turn on and off "
          f"(bench/bench_localmodel.py{' --smoke' if args.smoke else ''})\n")
    print(f"server {args.base_url} · model {args.model} · repeat {args.repeat} · max-turns "
          f"{args.max_turns} · max-tokens {args.max_tokens} · tasks "
          f"{'all built-in' if not args.task else len(args.task)} · results in {out}\n", flush=True)
    cases = None
    first = [t for t in args.first.split(",") if t]
    if first and not args.task:  # the built-in suite, those tasks first
        from agentcli.evals import builtin_cases

        suite = builtin_cases()
        ordered = sorted(suite, key=lambda c: first.index(c.id) if c.id in first else len(first))
        cases = out / "cases-ordered.jsonl"
        src = {json.loads(ln)["id"]: ln for ln in
               (ROOT / "agentcli" / "evals" / "cases.jsonl").read_text().splitlines() if ln.strip()}
        cases.write_text("".join(src[c.id] + "\n" for c in ordered))
    t0 = time.monotonic()
    rows: list[dict] = []
    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, args.parallel)) as pool:
            futures = [pool.submit(run_config, m, r, args, args.base_url, out, cases)
                       for m, r in configs]
            for f in futures:
                rows.append(f.result())
                print(f"  done: {rows[-1]['mode']} repair {'on' if rows[-1]['repair'] else 'off'} "
                      f"in {rows[-1]['secs']:.0f} s", flush=True)
    finally:
        if fake is not None:
            fake.stop()
    print()
    print("\n".join(table(rows, args.repeat)))
    print(f"\n{len(rows)} configuration(s) in {time.monotonic() - t0:.0f} s")
    return 0 if all(r["data"] is not None for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
