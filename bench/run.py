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
ORDER = ("startup", "overhead", "batch", "ratelimit", "lookup")


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


def run_script(argv: list[str], timeout: float) -> tuple[int, str, float]:
    """(exit code, stdout, seconds); stderr (progress) goes straight to ours."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           text=True, timeout=timeout)
        return p.returncode, p.stdout, time.perf_counter() - t0
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return -1, out + f"\n(timed out after {timeout:g} s)", time.perf_counter() - t0


def foreign_args(name: str, mode: str, tmp: Path) -> tuple[list[str], str]:
    """(arguments, how they were chosen) for another issue's script, from its --help."""
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
    if mode == "full":
        return args, "its own defaults"
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, smaller batch/lookup runs")
    ap.add_argument("--full", action="store_true", help="batch and lookup at their own default sizes")
    ap.add_argument("--only", default=",".join(ORDER), help=f"comma-separated subset of {','.join(ORDER)}")
    ap.add_argument("--no-llm", action="store_true", help="skip the llm --help peer measurement")
    ap.add_argument("--llm-venv", help="keep llm in this venv between runs (default: a temp dir)")
    ap.add_argument("--out", type=Path, help="also write the report to this file")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per script (default 1800)")
    a = ap.parse_args(argv)
    only = [s.strip() for s in a.only.split(",") if s.strip()]
    unknown = [s for s in only if s not in ORDER]
    if unknown:
        ap.error(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(ORDER)}")
    mode = "quick" if a.quick else "full" if a.full else "default"

    report = ["# agentcli performance", ""] + machine() + [""]
    summary: list[dict] = []
    t_all = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="agentcli-bench-run-"))
    try:
        for name in [n for n in ORDER if n in only]:
            sys.stderr.write(f"run.py: {name} ...\n")
            sys.stderr.flush()
            if name in ("startup", "overhead"):
                argv_ = [sys.executable, str(HERE / f"bench_{name}.py"), "--json"]
                if a.quick:
                    argv_.append("--quick")
                if name == "startup" and a.no_llm:
                    argv_.append("--no-llm")
                if name == "startup" and a.llm_venv:
                    argv_ += ["--llm-venv", a.llm_venv]
                code, out, secs = run_script(argv_, a.timeout)
                try:
                    data = json.loads(out.strip().splitlines()[-1]) if code == 0 else None
                except (ValueError, IndexError):
                    data = None
                if data is None:
                    report += [f"## bench_{name}.py failed (exit {code}, {secs:.0f} s)", "", out.strip(), ""]
                    continue
                for sec in data["sections"]:
                    report += [f"## {sec['title']}", ""] + table(sec["rows"]) + [""]
                    report += [f"- {n}" for n in sec.get("notes", [])] + [f"- ({secs:.0f} s)", ""]
                    summary += [r for r in sec["rows"] if r["target"]]
                continue
            spec = FOREIGN[name]
            script = HERE / spec["script"]
            if not script.exists():
                report += [f"## {spec['title']}", "", f"not run: {script.relative_to(ROOT)} does not exist yet", ""]
                continue
            args, how = foreign_args(name, mode, tmp)
            code, out, secs = run_script([sys.executable, str(script), *args], a.timeout)
            report += [f"## {spec['title']}", "", f"run with {how} ({secs:.0f} s)"
                       + ("" if code == 0 else f"; FAILED with exit {code}"), "", "```"]
            report += [ln.rstrip() for ln in out.strip("\n").splitlines()] + ["```", ""]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if summary:
        report += ["## Targets of issue 9 at a glance", ""] + table(summary) + [""]
    report.append(f"whole run: {time.perf_counter() - t_all:.0f} s")
    text = "\n".join(report) + "\n"
    sys.stdout.write(text)
    if a.out:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
