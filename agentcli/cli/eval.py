"""``agentcli eval``: the built-in support tasks (or your own) against the configured model."""


import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table
from rich.text import Text

from .. import evals
from ..app import App
from ..evals.runner import pass_k_of
from ..redact import clean_for_terminal
from .common import (
    dump_json,
    error_line,
    offline_notice,
    out_console,
    run,
    tsv,
)
from .options import ModelOptions, model_options
from .preflight import preflight


def register(app: typer.Typer) -> None:
    app.command("eval", short_help="Score the model on the support tasks.")(model_options(
        eval_cmd, help={"drafts_dir": "where the tasks' drafts are written [default: a temporary "
                                      "folder, deleted after the run: eval drafts never reach "
                                      "the review queue]"}))


def eval_cmd(
    cases: Annotated[Optional[Path], typer.Option(
        "--cases", help="a JSON Lines file of your own tasks (same format as the built-in suite)",
        show_default=False, metavar="FILE")] = None,
    repeat: Annotated[int, typer.Option("--repeat", min=1, max=100, metavar="K",
                                        help="run each task K times (flaky-model statistics)")] = 1,
    task: Annotated[Optional[list[str]], typer.Option(
        "--task", help="run only this task id (repeatable; shell-style wildcards)", show_default=False,
        metavar="ID")] = None,
    list_: Annotated[bool, typer.Option("--list", help="list the tasks and exit")] = False,
    *, opts: ModelOptions,
) -> None:
    """Run the built-in support tasks (or --cases FILE) against the configured model and score them.

    Built-in tasks run on the demo database unless --db is given; drafts go to a temporary
    directory unless --drafts-dir is given. Exit 1 when any task fails.

    Examples:

    \b
      agentcli eval --list
      agentcli eval --model qwen2.5:7b --repeat 3
    """

    def body():
        suite = evals.load_cases(cases) if cases is not None else evals.builtin_cases()
        suite = evals.select(suite, task)
        if list_:
            return _list_cases(suite, opts.json)
        return _eval(suite, source=str(cases) if cases is not None else "built-in", opts=opts,
                     builtin=cases is None, repeat=repeat)

    raise typer.Exit(run(body))


def _list_cases(suite: list, json_out: bool) -> int:
    if json_out:
        dump_json([c.record() for c in suite])
        return 0
    for c in suite:
        sys.stdout.write(tsv(c.id, "needs a model" if c.needs_model else "offline ok",
                              c.customer or "-", c.description or c.question) + "\n")
    return 0


async def _eval(suite: list, *, source: str, opts: ModelOptions, builtin: bool,
                repeat: int) -> int:
    settings = opts.settings()
    # --customer / AGENTCLI_CUSTOMER only fill in cases that name no customer; each conversation
    # gets its case's customer explicitly, never the settings' one.
    default_customer = settings.customer
    settings = settings.with_(customer=None)
    if builtin and opts.db is None:
        settings = settings.with_(db=None)  # the built-in tasks are about the demo database
    tmp = None
    if opts.drafts_dir is None and opts.drafts_url is None:
        # Eval drafts must not land in the team's review queue (a queue from the environment
        # or agentcli.toml included): only where --drafts-dir or --drafts-url says.
        tmp = tempfile.TemporaryDirectory(prefix="agentcli-eval-drafts-")
        settings = settings.with_(drafts_dir=Path(tmp.name), drafts_url=None)
    application = None
    interrupted: BaseException | None = None
    try:  # the temporary drafts folder goes whatever fails, the checks before the run included
        preflight(settings, opts)
        offline_notice(settings, opts)
        application = App.open(settings)

        def show_progress(n: int, total: int, rr: Any) -> None:
            word = "skip" if rr.score.skipped else "pass" if rr.passed else "FAIL"
            sys.stderr.write(f"\r[{n}/{total}] {rr.case.id}: {word}\x1b[K")
            sys.stderr.flush()

        interactive = not opts.json and not opts.quiet and sys.stderr.isatty()
        progress = show_progress if interactive else None
        per_case: list = []
        fatal = None
        try:
            _, fatal = await evals.run_suite(application, suite, repeat=repeat,
                                             default_customer=default_customer, progress=progress,
                                             log_meta={"drafts_temporary": tmp is not None},
                                             out=per_case)
        except (asyncio.CancelledError, KeyboardInterrupt) as e:
            interrupted = e  # Ctrl-C or SIGTERM: what was scored is still reported below
        if progress is not None:
            sys.stderr.write("\r\x1b[K")
        provider_name, model_name = application.provider.name, application.provider.model
        db_desc = application.db_description
    finally:
        try:
            if application is not None:
                await application.aclose()
        finally:
            if tmp is not None:
                tmp.cleanup()
    summary = evals.summarise(per_case, repeat)
    api_failed = [r for runs in per_case for r in runs if r.api_error]
    code = 4 if (fatal or api_failed) else (1 if summary["failed"] else 0)
    summary["exit_code"] = code
    if opts.json:
        dump_json({"provider": provider_name, "model": model_name, "mode": settings.mode,
                   "db": db_desc, "cases": source,
               "repeat": repeat, "tasks": [evals.task_record(runs, repeat) for runs in per_case if runs],
               "summary": summary})
    else:
        _eval_table(per_case, summary, provider_name, model_name + f" · {settings.mode} mode", repeat, source)
    if interrupted is not None:
        done = sum(len(runs) for runs in per_case)
        error_line(f"eval interrupted after {done} run(s); the results above cover those")
        raise interrupted
    if fatal:
        error_line(f"eval stopped: {fatal}")
    elif api_failed:
        error_line(f"{len(api_failed)} run(s) failed because the model API failed: "
                   f"{api_failed[0].api_error}")
    return code


def _eval_table(per_case: list, summary: dict[str, Any], provider: str, model: str, repeat: int,
                source: str) -> None:



    t = Table(title=f"eval: {source} tasks · {provider}/{model}" + (f" · ×{repeat}" if repeat > 1 else ""),
              title_justify="left", header_style="bold")
    t.add_column("task", no_wrap=True)
    t.add_column("result", no_wrap=True)
    t.add_column("reasons", overflow="fold")
    if repeat > 1:
        t.add_column("pass^1…^" + str(repeat), no_wrap=True)
    for col in ("turns", "tokens", "time"):
        t.add_column(col, justify="right", no_wrap=True)
    for runs in per_case:
        if not runs:
            continue
        case = runs[0].case
        if all(r.score.skipped for r in runs):
            t.add_row(case.id, Text("skip", style="dim"), Text(runs[0].score.skip_reason or "", style="dim"),
                      *(["—"] if repeat > 1 else []), "—", "—", "—")
            continue
        ok = sum(r.passed for r in runs)
        if repeat == 1:
            res = Text("PASS", style="green") if ok else Text("FAIL", style="bold red")
        else:
            res = Text(f"{ok}/{len(runs)}", style="green" if ok == len(runs) else "bold red")
        reasons = Counter(reason for r in runs for reason in r.score.reasons)
        rtext = "; ".join(f"{clean_for_terminal(k)}" + (f" (×{n})" if repeat > 1 else "")
                          for k, n in reasons.items())
        n = len(runs)
        turns = sum(int((r.result or {}).get("turns") or 0) for r in runs) / n
        tok = sum(int(((r.result or {}).get("usage") or {}).get("input_tokens") or 0)
                  + int(((r.result or {}).get("usage") or {}).get("output_tokens") or 0) for r in runs) / n
        secs = sum(r.time_s for r in runs) / n
        fmt = (lambda v: f"{v:.1f}") if repeat > 1 else (lambda v: f"{v:.0f}")
        passk = [_pass_k_text(pass_k_of(runs, repeat))] if repeat > 1 else []
        t.add_row(case.id, res, Text(rtext), *passk, fmt(turns), fmt(tok), f"{secs:.2f} s")
    c = out_console()
    c.print(t)
    s = summary
    line = (f"{s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped of {s['tasks']} tasks")
    if repeat > 1 and s["runs"]:
        line += f" · {s['runs_passed']}/{s['runs']} runs passed ({100 * s['pass_rate']:.0f}%)"
        line += " · " + " ".join(f"pass^{k} {v:.2f}" for k, v in s["pass_k"].items() if v is not None)
    line += f" · {s['tokens']} tokens · {s['time_s']:.2f} s"
    c.print(Text(line, style="bold green" if not s["failed"] else "bold red"))
    if s.get("repaired_runs"):
        without = " ".join(f"pass^{k} {v:.2f}" for k, v in s["pass_k_without_repair"].items()
                           if v is not None)
        c.print(Text(f"repair turn in {s['repaired_runs']} run(s): {s['repair_resolved']} left no "
                     f"error-level finding, {s['repair_passed']} passed · without it: {without}",
                     style="dim"))
    if s["skipped"]:
        c.print(Text(f"{s['skipped']} task(s) need a language model and were skipped under the offline "
                     "provider; run with --provider anthropic (or openai) to score them", style="dim"))


def _pass_k_text(pk: dict) -> str:
    return " ".join("—" if v is None else f"{v:.2f}" for v in pk.values())
