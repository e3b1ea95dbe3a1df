"""``agentcli doctor``: the checks a run makes before spending (agentcli.cli.preflight), each printed
with its result and fix; exit 0 only when all pass. Every check runs every time: a bad setting
(an empty key, a typo in agentcli.toml) is a failed check of its own and the others still run
with the setting's default. It names the config file in use and where the drafts folder comes
from, and tries the drafts folder the way every save uses it (its lock, a file written and
replaced). ``--api`` also asks the model API for its models list (GET /v1/models: no tokens, no
cost); it is opt-in because it reaches the network."""


import sys
from typing import Annotated, Any

import typer
from rich.text import Text

from ..config import config_file_candidates, config_file_in_use, drafts_dir_source
from ..errors import AgentcliError
from ..helpdesk import HELPDESKS
from ..helpdesk.rules import Refused, check_base_url
from ..redact import clean_for_terminal, one_line
from . import preflight as pf
from .common import dump_json, out_console, provider_chosen, run
from .layout import print_lines, wrapped
from .options import ModelOptions, model_options


def register(app: typer.Typer) -> None:
    @app.command("doctor", short_help="Check what a run needs, and how to fix each.")
    @model_options
    def doctor(
        api: Annotated[bool, typer.Option(
            "--api", help="also check that the model API answers (GET /v1/models: lists models, "
                          "uses no tokens; reaches the network)")] = False,
        *, opts: ModelOptions,
    ) -> None:
        """Check what a run needs (config file, drafts folder and its lock, sessions folder,
        database, provider key, a configured helpdesk's URL and token) and say how to fix each; every check runs every time. Exit 0
        only when all pass (3 otherwise).

        Examples:

        \b
          agentcli doctor
          agentcli doctor --api --json
          agentcli doctor --drafts-dir /srv/support/drafts
        """
        raise typer.Exit(run(lambda: _doctor(opts, api)))


def _config_check(problems: list[Any]) -> Any:
    bad = [p for p in problems if p.name == "config file"]
    if bad:
        return pf.Check("config file", False, bad[0].message, None)
    try:
        path = config_file_in_use()
    except AgentcliError as e:
        return pf.Check("config file", False, e.message, None)
    if path is not None:
        return pf.Check("config file", True, f"{path}")
    looked = ", ".join(str(p.parent) for p in config_file_candidates()[-2:])
    return pf.Check("config file", True, "none (looked in the working directory and its parents, "
                                         f"then {looked}): flags, environment and defaults")


def _helpdesk_checks(settings: Any) -> list[Any]:
    """Each helpdesk with a URL or a token set (``drafts push``): the URL as the guard takes it,
    and a token there (never shown). Nothing is sent."""
    out = []
    for name, hd in HELPDESKS.items():
        url, token = getattr(settings, f"{name}_url"), getattr(settings, f"{name}_token")
        if not url and not token:
            continue
        try:
            base = check_base_url(hd, url)
        except Refused as e:
            out.append(pf.Check(hd.title, False, e.message, None))
            continue
        if not (token or "").strip():
            out.append(pf.Check(hd.title, False, f"{base}: no token",
                                f"set {hd.env_token} (or {name}_token in agentcli.toml)"))
        else:
            out.append(pf.Check(hd.title, True, f"{base}, token set (drafts push --to {name})"))
    return out


def _tried(name: str, checks: Any, *, pair: bool = False) -> list[Any]:
    """``checks()``, or one failed check NAME when the system refused a path it names (one
    longer than the file system allows, under a long AGENTCLI_HOME): the other checks still run."""
    try:
        return checks()
    except OSError as e:
        c = pf.Check(name, False, f"cannot use {one_line(str(e.filename or '?'), 200)} ({e.strerror or e})",
                     "shorten AGENTCLI_HOME or the setting that names it")
        return [(c, None)] if pair else [c]


async def _doctor(opts: ModelOptions, api: bool) -> int:
    settings, problems = opts.settings_each()
    checks = [_config_check(problems)]
    checks += [pf.Check(f"setting {p.name}", False, p.message, None) for p in problems
               if p.name not in ("config file", "provider")]
    try:
        source = drafts_dir_source(opts.drafts_dir)
    except AgentcliError:
        source = None
    if any(p.name == "drafts_dir" for p in problems):  # its default stands in
        source = "the default, in place of the bad setting"
    checks += _tried("drafts folder", lambda: pf.drafts_checks(settings, source))
    checks.append(pf.sessions_check())
    checks += _helpdesk_checks(settings)
    (db, store), = _tried("database", lambda: [pf.database_check(settings)], pair=True)
    checks.append(db)
    key = pf.key_check(settings, chosen=provider_chosen(opts))
    address = pf.endpoint_check(settings)
    checks += [key, address]
    prov_check, provider = pf.provider_check(settings)
    if key.ok and address.ok:
        checks.append(prov_check)
    else:  # the provider refuses the same settings: said once, by the check that found it
        checks.append(pf.Check("provider", False, f"{settings.provider}: not built until the "
                               f"{'provider key' if not key.ok else 'provider address'} is fixed", None))
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
    c = out_console()
    width = c.width if c.is_terminal else None
    lines: list[Text] = []
    for ch in checks:
        t = Text()
        t.append("✓ " if ch.ok else "✗ ", style="green" if ch.ok else "bold red")
        t.append(f"{ch.name}: ", style="bold")
        t.append(clean_for_terminal(ch.detail))
        if ch.fix and not ch.ok:
            t.append(" — fix: " + clean_for_terminal(ch.fix), style="yellow")
        lines += wrapped(c, t, width, 4)
    lines.append(Text("all checks passed" if ok else "some checks failed: fix them, then run "
                      "agentcli doctor again", style="bold green" if ok else "bold red"))
    if width is not None:
        print_lines(c, lines)
    else:
        for ln in lines:
            c.print(ln, soft_wrap=True, highlight=False)
    sys.stdout.flush()
