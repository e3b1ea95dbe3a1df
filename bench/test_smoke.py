"""Every benchmark in bench/ still runs: ``bench/run.py --smoke`` runs each script with its own
``--smoke`` (tiny sizes, a few repetitions) in a subprocess and prints the whole report.

Not part of the test suite (``testpaths`` is ``tests``): ``.ci/run`` runs this file as a step of
its own after the suite (``python -m pytest -q bench/test_smoke.py``), so a benchmark broken by a
change still fails CI while the suite stays a minute of behaviour, not a minute of benchmarks.

Not a timing test: the figures of a smoke run mean nothing and nothing here reads them. What
must hold is that each script exits 0 and prints its table, and that the closing table of issue
22 item 9 has a measured value (pass or FAIL, never "not measured") in each of its four rows.
A script that no longer imports (bench_ratelimit.py did, unseen, for a whole release) fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SECTIONS = {  # heading of each script's section -> a line of the table it prints
    "## Cold start, --smoke": "agentcli ask (offline)",
    "## Per-call overhead": "overhead per model call",
    "## Batch throughput against the ideal": "concurrency  batch s",
    "## Batch at the API's limits": "| limit | concurrency | lost |",
    "## Order lookup p50/p99": "| tool layer, SQLite",
    "## A live batch from a cold start": "| concurrency | started at | lost |",
    "## Night batch, --via live against --via batches": "| via | exit | ok | wall s |",
    "## Grounding checks on the labelled set": "| floor + oracle model (upper bound) |",
    "## The drafts queue at scale": "reviewers: collisions",
    "## Instructions executed, counted by callgrind": "| our instructions per model call |",
}
FLOOR = ["our cost per model call (p50)", "our cost per tool cycle (p50)",
         "`ask` offline, wall (median)", "`--help` / `python -c pass` (medians)"]


@pytest.mark.slow
@pytest.mark.timeout(400)  # seven scripts, each starting its own processes: seconds, not minutes
def test_every_benchmark_runs_in_smoke_mode(tmp_path):
    env = _bench_env(tmp_path)
    if os.environ.get("AGENTCLI_TEST_PG_DSN"):  # .ci/run's server: the lookup benchmark reuses it
        env["AGENTCLI_TEST_PG_DSN"] = os.environ["AGENTCLI_TEST_PG_DSN"]
    # else bench_lookup.py starts one with initdb or says it has none
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--no-llm"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=380,
                       stdin=subprocess.DEVNULL)
    report = p.stdout
    assert p.returncode == 0, report[-3000:] + p.stderr[-3000:]
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    assert "FAILED" not in report and " failed (exit" not in report, report[-3000:]
    sections = report.split("\n## ")
    for heading, line in SECTIONS.items():
        (sec,) = [s for s in sections if ("## " + s).startswith(heading)]
        assert line in sec, sec
        # a command of bench_startup.py that failed is a row "n/a | exit N: ..." (not a crash)
        assert not re.search(r"\| exit -?\d+: ", sec), sec
    floor = report.split("## Issue 22 item 9: back to the floor", 1)[1]
    rows = [ln for ln in floor.splitlines() if ln.startswith("| ") and "pass/fail" not in ln]
    assert [r.split("|")[1].strip() for r in rows] == FLOOR
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        assert cells[1] != "not measured" and cells[4] in ("pass", "FAIL"), r


def _bench_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCLI_"))}
    env["TMPDIR"] = str(tmp_path)
    return env


@pytest.mark.slow
@pytest.mark.timeout(600)  # four eval runs of three tasks against the fake server (seconds idle)
def test_the_local_model_benchmark_runs_in_smoke_mode(tmp_path):
    """bench/bench_localmodel.py --smoke: every configuration against the fake server, whose
    scenario drafts a false status and corrects it after the findings: with the repair turn
    every run passes, without it none, and the paired figure agrees with the separate run."""
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_localmodel.py"), "--smoke",
                        "--out", str(tmp_path / "out")], cwd=ROOT, env=_bench_env(tmp_path),
                       capture_output=True, text=True, timeout=590, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = {tuple(c.strip() for c in ln.strip("|").split("|")[:2]): [c.strip() for c in ln.strip("|").split("|")]
            for ln in p.stdout.splitlines() if ln.startswith("| agent") or ln.startswith("| workflow")}
    assert set(rows) == {("agent", "on"), ("agent", "off"), ("workflow", "on"), ("workflow", "off")}
    for mode in ("agent", "workflow"):
        on, off = rows[(mode, "on")], rows[(mode, "off")]
        assert on[2:4] == ["1.00", "1.00"] and on[5] == "6" and on[8:10] == ["0.00", "0.00"], on
        assert off[2:4] == ["0.00", "0.00"] and off[5] == "0", off
    assert (tmp_path / "out" / "agent-repair.json").is_file()


def test_the_local_model_benchmark_without_a_server_says_so_and_skips(tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_localmodel.py")], cwd=ROOT,
                       env=_bench_env(tmp_path), capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0 and "no server given" in p.stdout and "skipped" in p.stdout
    assert not p.stderr


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_before_and_after_in_one_run(tmp_path):
    """``run.py --before REF``: the closing table gets a column measured on REF's package in the
    same run (here HEAD: the figures mean nothing, the column must be there and measured)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCLI_"))}
    env["TMPDIR"] = str(tmp_path)
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--no-llm",
                        "--only", "overhead", "--before", "HEAD"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "agentcli byte-code: compiled first" in p.stdout, p.stdout[:2000]
    floor = p.stdout.split("## Issue 22 item 9: back to the floor", 1)[1]
    head, _, *rows = [ln for ln in floor.splitlines() if ln.startswith("|")]
    assert "before (HEAD)" in head and "agentcli (this checkout)" in head, head
    for r in rows[:2]:  # the two overhead rows: measured on both packages
        cells = [c.strip() for c in r.strip("|").split("|")]
        assert re.match(r"-?[0-9.]+ ms \(CPU -?[0-9.]+ ms\)(, (pass|FAIL))?$", cells[1]), r
        assert cells[2].endswith(" ms") and cells[5] in ("pass", "FAIL"), r
