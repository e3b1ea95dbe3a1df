"""Running cases through ``App.run`` and summing up the scores."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

from ..ticket import failed_lookups
from ..vocab import GROUNDING, LOOKUP_FAILED, records
from .cases import Case
from .scoring import Check, Score, draft_texts, score


@dataclasses.dataclass
class RunResult:
    case: Case
    score: Score
    result: dict[str, Any] | None
    time_s: float
    api_error: str | None = None   # the model API failed (exit 4 material)
    api_error_kind: str | None = None
    # The run as it would have ended without its repair turn (None: it had none), scored.
    score_before: Score | None = None

    @property
    def passed(self) -> bool:
        return self.score.passed

    @property
    def passed_without_repair(self) -> bool:
        return (self.score_before or self.score).passed

    def record(self) -> dict[str, Any]:
        r = self.result or {}
        usage = r.get("usage") or {}
        return {
            "passed": self.score.passed, "skipped": self.score.skipped,
            "reasons": self.score.reasons, "checks": [c.record() for c in self.score.checks],
            "status": r.get("status"), "stop_reason": r.get("stop_reason"),
            "turns": r.get("turns", 0), "tokens": tokens(usage), "usage": usage,
            "time_s": round(self.time_s, 3), "session_id": r.get("session_id"),
            "answer": r.get("answer"), "drafts": draft_texts(r) if r else [],
            "tool_calls": [{"name": c.get("name"), "input": c.get("input"), "is_error": c.get("is_error")}
                           for c in r.get("tool_calls") or [] if isinstance(c, dict)],
            "error": r.get("error"),
            "repair": _repair_record(r.get("repair"), self.score_before),
        }


def _repair_record(rep: Any, before: Score | None) -> dict[str, Any] | None:
    if not isinstance(rep, dict):
        return None
    return {"findings": [f.get("kind") for f in rep.get("findings") or [] if isinstance(f, dict)],
            "replaced_by": rep.get("replaced_by"), "resolved": rep.get("resolved"),
            "passed_without": before.passed if before is not None else None,
            "reasons_without": before.reasons if before is not None else []}


def before_repair(result: dict[str, Any]) -> dict[str, Any] | None:
    """The result object as the run stood when its findings went back to the model: what it
    would have been with ``--no-repair`` (the same model calls up to there). None without a
    repair turn."""
    rep = result.get("repair")
    if not isinstance(rep, dict) or not isinstance(rep.get("calls"), int):
        return None
    calls = (result.get("tool_calls") or [])[:max(0, rep["calls"])]
    failed = failed_lookups(records(calls))
    return {**result, "answer": rep.get("answer") if isinstance(rep.get("answer"), str) else "",
            "tool_calls": calls, "status": "incomplete",
            "stop_reason": LOOKUP_FAILED if failed else GROUNDING,
            "checks": list(rep.get("findings") or []), "turns": rep.get("turn"), "repair": None}


def tokens(usage: dict[str, Any]) -> int:
    return int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)


EVAL_LOG_META = {"origin": "eval"}


async def run_case(app: Any, case: Case, *, default_customer: str | None = None,
                   log_meta: dict[str, Any] | None = None) -> RunResult:
    """Run one case in a fresh conversation through ``App.run`` and score its result object."""
    provider = app.provider.name
    if case.needs_model and provider == "offline":
        return RunResult(case, score(case, {}, provider=provider), None, 0.0)
    customer = case.customer if case.customer_set else default_customer
    conv = app.conversation(customer=customer)
    # Marked as an eval session (kept out of `log list` / `log show last` unless --all).
    app.log_for(conv, meta={**EVAL_LOG_META, **(log_meta or {})})
    t0 = time.perf_counter()
    try:
        run = await app.run(conv, case.question, [])
    finally:
        app.log_for(conv).close()  # one log per case: do not keep its descriptor open
    elapsed = time.perf_counter() - t0
    result = run.result()
    sc = score(case, result, provider=provider)
    before = before_repair(result)
    sb = score(case, before, provider=provider) if before is not None else None
    err = run.error
    if err is not None and err.exit_code == 4:
        return RunResult(case, sc, result, elapsed, api_error=err.message, api_error_kind=err.kind,
                         score_before=sb)
    return RunResult(case, sc, result, elapsed, score_before=sb)


FATAL_API_KINDS = ("authentication", "permission", "not_found")


async def run_suite(app: Any, cases: list[Case], *, repeat: int = 1,
                    default_customer: str | None = None,
                    progress: Any = None, log_meta: dict[str, Any] | None = None,
                    out: list[list[RunResult]] | None = None) -> tuple[list[list[RunResult]], str | None]:
    """Run every case ``repeat`` times, in order. Returns (runs per case, fatal API error).

    A crash inside one run is recorded as that run's failure (the suite goes on); an API error
    that no retry can fix (bad key, unknown model) stops the suite. Runs are added to ``out`` as
    they finish, so a caller that is interrupted still has every run already scored.
    """
    out = [] if out is None else out
    total = len(cases) * repeat
    n = 0
    for case in cases:
        runs: list[RunResult] = []
        out.append(runs)
        for _ in range(repeat):
            n += 1
            try:
                rr = await run_case(app, case, default_customer=default_customer, log_meta=log_meta)
            except Exception as e:  # a bug must not end the suite or show a traceback
                msg = f"the run crashed ({type(e).__name__}: {str(e)[:200]})"
                rr = RunResult(case, Score(case.id, False, checks=[Check("run", False, msg)]), None, 0.0)
            runs.append(rr)
            if progress is not None:
                progress(n, total, rr)
            if rr.api_error and rr.api_error_kind in FATAL_API_KINDS:
                return out, rr.api_error
            if rr.score.skipped:
                break  # a skipped case is skipped once, not K times
    return out, None


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """tau-bench's pass^k: the chance that k tries drawn from these n all succeed,
    C(c, k) / C(n, k) for c successes; None when fewer than k tries were made."""
    if k < 1 or n < k:
        return None
    return math.comb(c, k) / math.comb(n, k)


def pass_k_of(runs: list[RunResult], repeat: int, *,
              without_repair: bool = False) -> dict[str, float | None]:
    """``{"1": pass^1, ..., "K": pass^K}`` of one task (its scored runs); ``without_repair``:
    each run as it stood before its repair turn."""
    scored = [r for r in runs if not r.score.skipped]
    ok = sum(r.passed_without_repair if without_repair else r.passed for r in scored)
    return {str(k): (None if (v := pass_hat_k(len(scored), ok, k)) is None else round(v, 4))
            for k in range(1, repeat + 1)}


def summarise(per_case: list[list[RunResult]], repeat: int | None = None) -> dict[str, Any]:
    tasks = passed = failed = skipped = runs = runs_passed = tok = 0
    t = 0.0
    for runs_ in per_case:
        if not runs_:
            continue
        tasks += 1
        if all(r.score.skipped for r in runs_):
            skipped += 1
            continue
        scored = [r for r in runs_ if not r.score.skipped]
        runs += len(scored)
        ok = sum(r.passed for r in scored)
        runs_passed += ok
        tok += sum(tokens((r.result or {}).get("usage") or {}) for r in scored)
        t += sum(r.time_s for r in scored)
        if ok == len(scored):
            passed += 1
        else:
            failed += 1
    repeat = repeat or max((len(r) for r in per_case), default=1)
    # overall pass^k: the mean over the scored tasks that had at least k tries
    scored_cases = [r for r in per_case if r and not all(x.score.skipped for x in r)]

    def mean_pass_k(without_repair: bool) -> dict[str, float | None]:
        per_task = [pass_k_of(r, repeat, without_repair=without_repair) for r in scored_cases]
        out: dict[str, float | None] = {}
        for k in range(1, repeat + 1):
            vals = [p[str(k)] for p in per_task if p[str(k)] is not None]
            out[str(k)] = round(sum(vals) / len(vals), 4) if vals else None
        return out

    all_runs = [x for r in scored_cases for x in r if not x.score.skipped]
    repaired = [x for x in all_runs if x.score_before is not None]
    return {"tasks": tasks, "passed": passed, "failed": failed, "skipped": skipped, "runs": runs,
            "runs_passed": runs_passed, "pass_rate": round(runs_passed / runs, 4) if runs else None,
            "pass_k": mean_pass_k(False), "tokens": tok, "time_s": round(t, 3),
            "time_per_run_s": round(t / runs, 3) if runs else None,
            # Beyond the spec (issue 23): the repair turn. ``pass_k_without_repair`` scores each
            # repaired run as it stood before its findings went back (the same model calls).
            "repaired_runs": len(repaired),
            "repair_resolved": sum(bool(((x.result or {}).get("repair") or {}).get("resolved"))
                                   for x in repaired),
            "repair_passed": sum(x.passed for x in repaired),
            "pass_k_without_repair": mean_pass_k(True)}


def task_record(runs: list[RunResult], repeat: int | None = None) -> dict[str, Any]:
    c = runs[0].case
    skipped = all(r.score.skipped for r in runs)
    scored = [r for r in runs if not r.score.skipped]
    ok = sum(r.passed for r in scored)
    return {"id": c.id, "description": c.description, "tags": c.tags, "customer": c.customer,
            "question": c.question, "needs_model": c.needs_model, "skipped": skipped,
            "skip_reason": runs[0].score.skip_reason if skipped else None,
            "passed": ok, "failed": len(scored) - ok,
            "pass_rate": round(ok / len(scored), 4) if scored else None,
            "pass_k": pass_k_of(runs, repeat or len(runs)) if scored else {},
            "runs": [r.record() for r in runs] if not skipped else []}
