"""Evals: real support tasks re-run after every change, scored automatically.

``cases`` (the task format, the built-in suite ``cases.jsonl``, loading), ``scoring`` (one run
against its case), ``runner`` (running a suite through ``App.run``, summaries).
"""

from .cases import (
                    BUILTIN,
                    CASE_KEYS,
                    CHECKS,
                    DEFAULT_MUST_NOT,
                    EXPECT_KEYS,
                    MAX_CASES,
                    Case,
                    builtin_cases,
                    case_from_dict,
                    load_cases,
                    parse_cases,
                    select,
)
from .runner import (
                    FATAL_API_KINDS,
                    RunResult,
                    run_case,
                    run_suite,
                    summarise,
                    task_record,
                    tokens,
)
from .scoring import (
                    Check,
                    Score,
                    draft_texts,
                    fact_found,
                    find_dates,
                    norm,
                    refund_promises,
                    score,
)

__all__ = ["BUILTIN", "CASE_KEYS", "CHECKS", "DEFAULT_MUST_NOT", "EXPECT_KEYS", "MAX_CASES", "Case",
           "Check", "FATAL_API_KINDS", "RunResult", "Score", "builtin_cases", "case_from_dict",
           "draft_texts", "fact_found", "find_dates", "load_cases", "norm", "parse_cases",
           "refund_promises", "run_case", "run_suite", "score", "select", "summarise", "task_record",
           "tokens"]
