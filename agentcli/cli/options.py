"""The model options that ``chat``, ``ask``, ``batch``, ``eval`` and the bare command share,
declared once.

``@model_options`` adds them to a command's signature (as ``llm``'s ``tool_options`` does) and
hands the command one ``ModelOptions`` object as its ``opts`` argument; ``opts.settings()``
resolves them (flags > environment > ``agentcli.toml``) in the one place that does
(``config.resolve``). Light at import time: typer and the standard library only.
"""


import functools
import inspect
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

_P = inspect.Parameter


@dataclass(frozen=True)
class ModelOptions:
    provider: Optional[str] = None
    model: Optional[str] = None
    db: Optional[str] = None
    drafts_dir: Optional[Path] = None
    customer: Optional[str] = None
    max_turns: Optional[int] = None
    tool_timeout: Optional[float] = None
    request_timeout: Optional[float] = None
    retries: Optional[int] = None
    mode: Optional[str] = None
    max_tokens: Optional[int] = None
    json: bool = False
    quiet: bool = False
    no_stream: bool = False

    def given(self) -> list[str]:
        """The flags given on the command line, as typed (``--json``, ``--max-turns``)."""
        return [_FLAGS[k] for k, v in asdict(self).items()
                if (v is True if isinstance(v, bool) else v is not None)]

    def settings(self, **override: Any) -> Any:
        """The resolved ``config.Settings`` (``override`` replaces a flag's value)."""
        from ..config import resolve

        kw = {**asdict(self), **override}
        stream = not kw.pop("no_stream")
        return resolve(stream=stream, **kw)


def _opt(flag: str, help: str, kind: Any = Optional[str], metavar: str = "TEXT") -> Any:
    return Annotated[kind, typer.Option(flag, help=help, show_default=False, metavar=metavar)]


# (parameter name, field, annotation, default): the parameter of ``json`` is ``json_`` so that the
# command body never shadows the module; ranges are checked by ``config.resolve`` (one message
# for flag, environment and config file alike).
_SPECS: list[tuple[str, str, Any, Any]] = [
    ("provider", "provider", _opt("--provider", "anthropic, openai or offline [env AGENTCLI_PROVIDER]", metavar="NAME"), None),
    ("model", "model", _opt("--model", "model name [env AGENTCLI_MODEL; anthropic default "
                                       "claude-sonnet-5-5; required for openai]", metavar="NAME"), None),
    ("db", "db", _opt("--db", "orders database: SQLite path, sqlite:///path or postgresql://... "
                              "[env AGENTCLI_DB]", metavar="DB"), None),
    ("drafts_dir", "drafts_dir", _opt("--drafts-dir", "where drafts are written [env "
                                                      "AGENTCLI_DRAFTS_DIR; default ./drafts]",
                                      Optional[Path], "DIR"), None),
    ("customer", "customer", _opt("--customer", "customer email this ticket is about; other "
                                                "customers' orders read as not found [env AGENTCLI_CUSTOMER]", metavar="EMAIL"), None),
    ("max_turns", "max_turns", _opt("--max-turns", "model calls allowed per question [default 10]", Optional[int], "N"), None),
    ("tool_timeout", "tool_timeout", _opt("--tool-timeout", "seconds one tool call may take [default 30]", Optional[float], "SECONDS"), None),
    ("request_timeout", "request_timeout", _opt("--request-timeout", "seconds a model request may wait "
                                                "for data [env AGENTCLI_REQUEST_TIMEOUT; default 120]", Optional[float], "SECONDS"), None),
    ("retries", "retries", _opt("--retries", "retries of a failed model request [env "
                                             "AGENTCLI_RETRIES; default 3]", Optional[int], "N"), None),
    ("max_tokens", "max_tokens", _opt("--max-tokens", "output tokens the model may write per "
                                                   "response [env AGENTCLI_MAX_TOKENS; default 2048]",
                                       Optional[int], "N"), None),
    ("mode", "mode", _opt("--mode", "agent (the model decides every step) or workflow (agentcli "
                                    "looks up the question's order codes first, then the model "
                                    "drafts and answers) [env AGENTCLI_MODE; default agent]",
                          Optional[str], "MODE"), None),
    ("json_", "json", Annotated[bool, typer.Option("--json", help="machine-readable output")], False),
    ("quiet", "quiet", Annotated[bool, typer.Option("-q", "--quiet", help="no tool trace, answer only")], False),
    ("no_stream", "no_stream", Annotated[bool, typer.Option(
        "--no-stream", help="wait for whole responses instead of streaming")], False),
]
# The same declarations for commands that take one of them alone (``orders show --db``).
_BY_FIELD = {field: ann for _, field, ann, _ in _SPECS}
Db, Customer, DraftsDir, Json = (_BY_FIELD[k] for k in ("db", "customer", "drafts_dir", "json"))

_FLAGS = {"provider": "--provider", "model": "--model", "db": "--db", "drafts_dir": "--drafts-dir",
          "customer": "--customer", "max_turns": "--max-turns", "tool_timeout": "--tool-timeout",
          "request_timeout": "--request-timeout", "retries": "--retries", "max_tokens": "--max-tokens",
          "mode": "--mode", "json": "--json",
          "quiet": "--quiet", "no_stream": "--no-stream"}


class PlainUsage(typer.core.TyperCommand):
    """A command whose usage line shows a required argument as ``ID``, not typer's ``{ID}``
    (``@app.command(..., cls=PlainUsage)``)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [p[1:-1] if p.startswith("{") and p.endswith("}") else p
                for p in super().collect_usage_pieces(ctx)]


def model_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give a typer command the shared model options; it receives them as ``opts: ModelOptions``."""
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.name != "opts"]
    extra = [_P(name, _P.KEYWORD_ONLY, default=default, annotation=ann) for name, _, ann, default in _SPECS]

    @functools.wraps(fn)
    def command(*args: Any, **kwargs: Any) -> Any:
        opts = ModelOptions(**{field: kwargs.pop(name) for name, field, _, _ in _SPECS})
        return fn(*args, opts=opts, **kwargs)

    command.__signature__ = sig.replace(parameters=own + extra)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in own + extra}
    del command.__wrapped__  # typer must read the new signature, not the wrapped function's
    return command
