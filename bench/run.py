"""All performance figures in one run, one report: ``python bench/run.py``.

Runs each benchmark script as a subprocess (so every one starts clean) and prints one report:
the machine, then one section per script. The two scripts of issue 9 print rows of one shape
(measure, value, target, verdict); the batch (issue 4) and lookup (issue 6) scripts print their
own tables, shown as they are under their own headings.

    python bench/run.py                  # the default run (about 5 minutes on 2 cores)
    python bench/run.py --quick          # fewer repetitions, smaller batch and lookup runs
    python bench/run.py --full           # batch and lookup benchmarks at their own default sizes
    python bench/run.py --only startup,overhead
    python bench/run.py --no-llm         # do not pip-install llm for the peer comparison
    python bench/run.py --out report.md  # also write the report (markdown) to a file
    python bench/run.py --smoke          # every script tiny and fast (bench/test_smoke.py)
    python bench/run.py --only startup,overhead --before 2b9d64e   # before/after, one run

``--before REF`` extracts git ref REF's ``agentcli`` package (``git archive``) and runs the
startup and overhead scripts of this checkout on it (through PYTHONPATH) just before each runs on
this checkout, so the closing table shows both side by side from one run (on a busy machine,
compare columns, never runs). Both packages' byte-code is compiled first (the environment may
set PYTHONDONTWRITEBYTECODE=1, which would make every fresh process compile them again); the
report says so.

The report ends with the four targets of issue 22 item 9, each beside what the bare SDK (or
the interpreter) does in the same run, with a pass/fail column: agentcli's own cost per model
call and per tool cycle (bench_overhead.py), ``ask`` offline wall time and ``--help`` against
``python -c pass`` (bench_startup.py). The exit status is 1 when a script failed (its section
says how), else 0; a missed target is a "fail" in the table, not an exit status.

Sizes in the default run (to stay within ~5 minutes on 2 cores): batch 200 questions at
concurrency 8, 16 and 50 (memory at 1,000 questions), lookups over 200,000 orders with 5,000
codes. ``--full`` uses the scripts' own defaults: 200 questions at concurrency 1, 8, 16, 50
(memory at 1,000 and 10,000), lookups over 1,000,000 orders with 10,000 codes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# Scripts owned by other issues: how to make them smaller for the default and quick runs. An
# option is passed only if the script's --help lists it; a script's own --quick wins in --quick.
FOREIGN = {
    "batch": {
        "script": "bench_batch.py",
        "title": "Batch throughput against the ideal (bench/bench_batch.py, issue 4)",
        "default": ["--questions", "200", "--concurrency", "8,16,50", "--memory", "1000"],
        "quick": ["--questions", "16", "--concurrency", "16", "--memory", ""],
    },
    "lookup": {
        "script": "bench_lookup.py",
        "title": "Order lookup p50/p99, SQLite and PostgreSQL (bench/bench_lookup.py, issue 6)",
        "default": ["--orders", "200000", "--lookups", "5000"],
        "quick": ["--orders", "20000", "--lookups", "2000"],
        "dir_option": "--dir",
    },
}
FOREIGN["ratelimit"] = {
    "script": "bench_ratelimit.py",
    "title": "Batch at the API's limits; realistic latency (bench/bench_ratelimit.py, issue 17)",
    "default": ["--questions", "200", "--concurrency", "16,50,100"],
    "quick": ["--questions", "60", "--concurrency", "16"],
}
FOREIGN["batchlive"] = {
    "script": "bench_batch_live.py",
    "title": "A live batch from a cold start at a rate limit (bench/bench_batch_live.py, issue 27)",
    "default": ["--questions", "200"],
    "quick": ["--questions", "60"],
}
FOREIGN["batches"] = {
    "script": "bench_batches.py",
    "title": "Night batch, --via live against --via batches (bench/bench_batches.py, issue 27)",
    "default": ["--questions", "300", "--batch-delay", "10"],
    "quick": ["--questions", "60", "--batch-delay", "3"],
}
FOREIGN["grounding"] = {
    "script": "bench_grounding.py",
    "title": "Grounding checks on the labelled set (bench/bench_grounding.py, issue 23)",
    "default": [],
    "quick": [],
}
FOREIGN["queue"] = {
    "script": "bench_queue.py",
    "title": "The drafts queue at scale, folder and PostgreSQL (bench/bench_queue.py, issue 26)",
    "default": ["--drafts", "20000", "--pool", "2000", "--seconds", "8", "--questions", "200"],
    "quick": ["--drafts", "5000", "--pool", "500", "--seconds", "3", "--questions", "40"],
    "dir_option": "--dir",
}
FOREIGN["instructions"] = {
    "script": "bench_instructions.py",
    "title": "Instructions executed, counted by callgrind (bench/bench_instructions.py, issue 22 item 9)",
    "default": ["--questions", "10"],
    "quick": ["--questions", "4"],
    "before_option": "--before",
}
ORDER = ("startup", "overhead", "batch", "ratelimit", "batchlive", "batches", "lookup", "grounding",
         "queue", "instructions")


def machine() -> list[str]:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor() or "?"
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        commit = "?"
    load = os.getloadavg()
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GB"
    except OSError:
        pass
    return [f"machine: {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu}, {mem} RAM; "
            f"{platform.system()} {platform.release()}",
            f"python {platform.python_version()} ({sys.executable}); agentcli commit {commit}; "
            f"load average at start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"]


def run_script(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    """(exit code, stdout, seconds); stderr (progress) goes straight to ours."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout, time.perf_counter() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return -1, out + f"\n(timed out after {timeout:g} s)", time.perf_counter() - t0


def foreign_args(name: str, mode: str, tmp: Path, before: str | None = None) -> tuple[list[str], str]:
    """(arguments, how they were chosen) for another issue's script, from its --help (``before``:
    the --before ref, passed on to a script that takes one)."""
    spec = FOREIGN[name]
    script = HERE / spec["script"]
    try:
        helptext = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True,
                                  text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        helptext = ""
    args: list[str] = []
    if spec.get("dir_option") and spec["dir_option"] in helptext:
        args += [spec["dir_option"], str(tmp / name)]
    if before and mode != "smoke" and spec.get("before_option") and spec["before_option"] in helptext:
        args += [spec["before_option"], before]
    if mode == "full":
        return args, "its own defaults"
    if mode == "smoke":
        return args + ["--smoke"], "its --smoke"
    if mode == "quick" and "--quick" in helptext:
        return args + ["--quick"], "its --quick"
    wanted = spec[mode]
    used = []
    for i in range(0, len(wanted), 2):
        if wanted[i] in helptext:
            used += wanted[i:i + 2]
    return args + used, " ".join(used) if used else "its own defaults (no size options found)"


def table(rows: list[dict]) -> list[str]:
    w = [max(len(r[k]) for r in rows) for k in ("measure", "value", "target")]
    out = [f"| {'measure':<{w[0]}} | {'value':<{w[1]}} | {'target':<{w[2]}} | verdict |"]
    out.append(f"|{'-' * (w[0] + 2)}|{'-' * (w[1] + 2)}|{'-' * (w[2] + 2)}|---------|")
    for r in rows:
        out.append(f"| {r['measure']:<{w[0]}} | {r['value']:<{w[1]}} | {r['target']:<{w[2]}} | {r['verdict']} |")
    return out


# Issue 22 item 9 ("back to the floor"): the four targets of the closing table.
FLOOR_TARGETS = {"per_call_ms": 0.6, "per_cycle_ms": 1.2, "ask_offline_ms": 130.0, "help_vs_pass": 2.5}


def floor_rows(raw: dict[str, dict]) -> list[dict]:
    """The four rows of issue 22 item 9 from the raw results of bench_overhead and bench_startup
    (missing ones say "not measured")."""
    t = FLOOR_TARGETS
    rows: list[dict] = []

    def row(measure: str, value: float | None, fmt: str, beside: str, target: float, unit: str) -> None:
        rows.append({"measure": measure, "agentcli": "not measured" if value is None else fmt.format(value),
                     "beside": beside, "target": f"<= {target:g}{unit}",
                     "result": "n/a" if value is None else "pass" if value <= target else "FAIL"})

    ov = raw.get("overhead")
    if ov:
        d, p50, cpu = ov["diff_p50_ms"], ov["p50_ms"], ov["cpu_diff_p50_ms"]
        bare_call = f"bare SDK: {p50['bare'] / 5:.2f} ms per call, HTTP to the fake included"
        if "model_layer_p50_ms" in ov:  # measured with it off, like the bare SDK; its call apart
            bare_call += (f"; checks' model layer off (its own call: {ov['model_layer_p50_ms']:.2f} ms "
                          "a question)")
        row("our cost per model call (p50)", d["agent"] / 5, "{:.3f} ms", bare_call + f"; CPU {cpu['agent'] / 5:.3f} ms",
            t["per_call_ms"], " ms")
        row("our cost per tool cycle (p50)", d["agent_render"] / 4, "{:.3f} ms",
            f"bare SDK: {p50['bare'] / 5:.2f} ms per call; CPU {cpu['agent_render'] / 4:.3f} ms",
            t["per_cycle_ms"], " ms")
    else:
        row("our cost per model call (p50)", None, "", "bench_overhead.py not run", t["per_call_ms"], " ms")
        row("our cost per tool cycle (p50)", None, "", "bench_overhead.py not run", t["per_cycle_ms"], " ms")
    st = {r["name"]: r for r in (raw.get("startup") or {}).get("rows", []) if "median_ms" in r}
    med = {k: v["median_ms"] for k, v in st.items()}
    pass_ms, bare_ask = med.get("python -c pass"), med.get("bare SDK, same 3 requests")
    beside = "; ".join(x for x in (
        f"python -c pass {pass_ms:.1f} ms" if pass_ms else "",
        f"bare SDK asking the same question (3 requests) {bare_ask:.0f} ms" if bare_ask else "") if x)
    row("`ask` offline, wall (median)", med.get("agentcli ask (offline)"), "{:.1f} ms",
        beside or "bench_startup.py not run", t["ask_offline_ms"], " ms")
    helpx = med["agentcli --help"] / pass_ms if pass_ms and "agentcli --help" in med else None
    row("`--help` / `python -c pass` (medians)", helpx, "{:.2f}x",
        f"--help {med['agentcli --help']:.1f} ms, python -c pass {pass_ms:.1f} ms" if helpx else
        "bench_startup.py not run", t["help_vs_pass"], "x")
    return rows


def compile_tree(tree: Path) -> str:
    """Byte-code for ``tree``'s agentcli, written now: PYTHONDONTWRITEBYTECODE=1 (set here) would
    otherwise make every fresh process compile the package again. Returns what the table says."""
    p = subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "agentcli")],
                       capture_output=True, text=True, timeout=300)
    return "compiled first (python -m compileall)" if p.returncode == 0 else "NOT compiled (compileall failed)"


def before_tree(ref: str, tmp: Path) -> Path:
    """The agentcli package of git ref ``ref``, extracted into ``tmp`` (``git archive``): the
    benchmarks of this checkout then measure it through PYTHONPATH, the same way, in the same run."""
    out = tmp / "before"
    out.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "agentcli"],
                             capture_output=True, timeout=120)
    if archive.returncode != 0:
        raise SystemExit(f"run.py: --before {ref}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True, timeout=120)
    return out


def with_before(rows: list[dict], before: list[dict], ref: str) -> list[dict]:
    """The closing rows with a column for the same measure at ``ref`` (--before): its value, its
    CPU figure where the row has one, and its verdict when it differs."""
    out = []
    for r, b in zip(rows, before):
        cpu = re.search(r"CPU (-?[0-9.]+ ms)", b["beside"])
        cell = b["agentcli"] + (f" (CPU {cpu.group(1)})" if cpu else "")
        if b["result"] not in ("n/a", r["result"]):
            cell += f", {b['result']}"
        out.append({**r, "before": cell})
    return out


def floor_table(rows: list[dict], before: str | None = None) -> list[str]:
    keys = ("measure", "agentcli", "beside", "target", "result")
    heads = {"measure": "measure", "agentcli": "agentcli", "beside": "beside it, same run",
             "target": "target", "result": "pass/fail"}
    if before is not None:
        keys = ("measure", "before", "agentcli", "beside", "target", "result")
        heads = {**heads, "before": f"before ({before})", "agentcli": "agentcli (this checkout)"}
    w = {k: max(len(heads[k]), *(len(r[k]) for r in rows)) for k in keys}
    out = ["| " + " | ".join(f"{heads[k]:<{w[k]}}" for k in keys) + " |",
           "|" + "|".join("-" * (w[k] + 2) for k in keys) + "|"]
    out += ["| " + " | ".join(f"{r[k]:<{w[k]}}" for k in keys) + " |" for r in rows]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, smaller batch/lookup runs")
    ap.add_argument("--full", action="store_true", help="batch and lookup at their own default sizes")
    ap.add_argument("--only", default=",".join(ORDER), help=f"comma-separated subset of {','.join(ORDER)}")
    ap.add_argument("--no-llm", action="store_true", help="skip the llm --help peer measurement")
    ap.add_argument("--llm-venv", help="keep llm in this venv between runs (default: a temp dir)")
    ap.add_argument("--out", type=Path, help="also write the report to this file")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per script (default 1800)")
    ap.add_argument("--before", metavar="REF",
                    help="also measure git ref REF's agentcli (startup and overhead, same scripts, "
                         "just before this checkout's) and show it beside it in the closing table")
    ap.add_argument("--smoke", action="store_true",
                    help="every script with --smoke: tiny and fast, checks they run (figures mean nothing)")
    a = ap.parse_args(argv)
    only = [s.strip() for s in a.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in ORDER]
    if unknown:
        ap.error(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(ORDER)}")
    mode = "smoke" if a.smoke else "quick" if a.quick else "full" if a.full else "default"

    report = ["# agentcli performance" + (" (--smoke: the figures mean nothing)" if a.smoke else ""), ""]
    report += machine() + [""]
    raw: dict[str, dict] = {}
    raw_before: dict[str, dict] = {}
    failed: list[str] = []
    t_all = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="agentcli-bench-run-"))
    try:
        byte_code = compile_tree(ROOT)
        before_env = None
        if a.before:
            tree = before_tree(a.before, tmp)
            byte_code += f"; {a.before} {compile_tree(tree).split(' (')[0]}"
            before_env = {**os.environ, "PYTHONPATH": os.pathsep.join(
                [str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])}
        report.insert(len(report) - 1, f"agentcli byte-code: {byte_code}")
        for name in [n for n in ORDER if n in only]:
            sys.stderr.write(f"run.py: {name} ...\n")
            sys.stderr.flush()
            if name in ("startup", "overhead"):
                argv_ = [sys.executable, str(HERE / f"bench_{name}.py"), "--json"]
                if a.smoke:
                    argv_.append("--smoke")
                elif a.quick:
                    argv_.append("--quick")
                if name == "startup" and a.no_llm:
                    argv_.append("--no-llm")
                if name == "startup" and a.llm_venv:
                    argv_ += ["--llm-venv", a.llm_venv]
                if before_env is not None:  # the same script on the old package, just before
                    sys.stderr.write(f"run.py: {name} of {a.before} ...\n")
                    b_code, b_out, b_secs = run_script(argv_, a.timeout, env=before_env)
                    try:
                        raw_before[name] = json.loads(b_out.strip().splitlines()[-1]).get("raw") or {}
                    except (ValueError, IndexError, AttributeError):
                        failed.append(f"bench_{name}.py on {a.before}")
                        report += [f"## bench_{name}.py on {a.before} failed (exit {b_code}, {b_secs:.0f} s)", "",
                                   b_out.strip()[-2000:], ""]
                code, out, secs = run_script(argv_, a.timeout)
                try:
                    data = json.loads(out.strip().splitlines()[-1]) if code == 0 else None
                except (ValueError, IndexError):
                    data = None
                if data is None:
                    failed.append(f"bench_{name}.py")
                    report += [f"## bench_{name}.py failed (exit {code}, {secs:.0f} s)", "", out.strip(), ""]
                    continue
                raw[name] = data.get("raw") or {}
                for sec in data["sections"]:
                    report += [f"## {sec['title']}", ""] + table(sec["rows"]) + [""]
                    report += [f"- {n}" for n in sec.get("notes", [])] + [f"- ({secs:.0f} s)", ""]
                continue
            spec = FOREIGN[name]
            script = HERE / spec["script"]
            if not script.exists():
                failed.append(spec["script"])
                report += [f"## {spec['title']}", "", f"not run: {script.relative_to(ROOT)} does not exist", ""]
                continue
            args, how = foreign_args(name, mode, tmp, a.before)
            code, out, secs = run_script([sys.executable, str(script), *args], a.timeout)
            if code != 0:
                failed.append(spec["script"])
            report += [f"## {spec['title']}", "", f"run with {how} ({secs:.0f} s)"
                       + ("" if code == 0 else f"; FAILED with exit {code}"), "", "```"]
            report += [ln.rstrip() for ln in out.strip("\n").splitlines()] + ["```", ""]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if "startup" in only or "overhead" in only:
        rows = floor_rows(raw)
        if a.before:
            rows = with_before(rows, floor_rows(raw_before), a.before)
        report += ["## Issue 22 item 9: back to the floor", ""] + floor_table(rows, a.before) + [""]
        if a.before:
            report += [f"- before: git ref {a.before}'s agentcli measured by this checkout's scripts just "
                       "before it, in the same run (PYTHONPATH); compare the columns, not runs", ""]
    if failed:
        report.append(f"FAILED: {', '.join(failed)}")
    report.append(f"whole run: {time.perf_counter() - t_all:.0f} s")
    text = "\n".join(report) + "\n"
    sys.stdout.write(text)
    if a.out:
        a.out.write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
