"""``agentcli doctor``: the checks a run makes before spending (agentcli.cli.preflight), each printed
with its result and fix; exit 0 only when all pass. ``--api`` also asks the model API for its
models list (GET /v1/models: no tokens, no cost); it is opt-in because it reaches the network."""


import sys
from typing import Annotated, Any

import typer
from rich.text import Text

from ..redact import clean_for_terminal
from . import preflight as pf
from .common import dump_json, out_console, run
from .options import ModelOptions, model_options


def register(app: typer.Typer) -> None:
    @app.command("doctor")
    @model_options
    def doctor(
        api: Annotated[bool, typer.Option(
            "--api", help="also check that the model API answers (GET /v1/models: lists models, "
                          "uses no tokens; reaches the network)")] = False,
        *, opts: ModelOptions,
    ) -> None:
        """Check what a run needs (drafts folder, sessions folder, database, provider key) and say
        how to fix each; exit 0 only when all pass (3 otherwise)."""
        raise typer.Exit(run(lambda: _doctor(opts, api)))


async def _doctor(opts: ModelOptions, api: bool) -> int:
    settings = opts.settings()
    checks = pf.local_checks(settings, chosen=pf.provider_chosen(opts))
    db, store = pf.database_check(settings)
    checks.insert(2, db)
    prov_check, provider = pf.provider_check(settings)
    key_failed = any(c.name in ("provider key", "provider address") and not c.ok for c in checks)
    if prov_check.ok or not key_failed:  # a bad key or address would be said twice
        checks.append(prov_check)
    try:
        if api:
            if provider is not None:
                checks.append(await pf.api_check(settings, provider))
            else:
                checks.append(pf.Check("model API", False, "not tried: the provider is not usable",
                                       "fix the provider first"))
    finally:
        if provider is not None:
            await provider.aclose()
        if store is not None:
            await store.aclose()
    ok = all(c.ok for c in checks)
    if opts.json:
        dump_json({"ok": ok, "provider": settings.provider, "checks": [c.to_dict() for c in checks]})
    else:
        _print(checks, ok)
    return 0 if ok else 3


def _print(checks: list[Any], ok: bool) -> None:
    c = out_console()  # NO_COLOR: no colour and no bold either
    for ch in checks:
        t = Text()
        t.append("✓ " if ch.ok else "✗ ", style="green" if ch.ok else "bold red")
        t.append(f"{ch.name}: ", style="bold")
        t.append(clean_for_terminal(ch.detail))
        if ch.fix and not ch.ok:
            t.append(" — fix: " + clean_for_terminal(ch.fix), style="yellow")
        c.print(t)
    c.print(Text("all checks passed" if ok else "some checks failed: fix them, then run agentcli doctor again",
                 style="bold green" if ok else "bold red"))
    sys.stdout.flush()
