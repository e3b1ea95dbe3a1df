"""The typer options of the settings in ``config.SETTINGS``, derived from that table.

``@model_options`` adds the options of the ``config.MODEL`` group (``chat``, ``ask``, ``batch``,
``eval``, ``doctor`` and the bare command) to a command's signature (as ``llm``'s
``tool_options`` does) and hands the command one ``ModelOptions`` object as its ``opts``
argument; ``opts.settings()`` resolves them (flags > environment > ``agentcli.toml``) in the one
place that does (``config.resolve``). ``option(name, group)`` is the same option for a command
that takes one setting alone (``orders show --db``). Light at import time: typer and the
standard library only.
"""


import dataclasses
import functools
import inspect
from typing import Annotated, Any, Callable, Optional

import typer

from ..config import MODEL, SETTING, SETTINGS, SWITCH, Setting, resolve, resolve_each

_P = inspect.Parameter


def _param(s: Setting) -> str:
    # ``json_``: the command's parameter never shadows the module of that name
    return s.name + "_" if s.name == "json" else s.name


def _annotation(s: Setting, help: str | None = None) -> Any:
    text = help or s.help_text()
    if s.kind is SWITCH:  # a flag that turns the setting away from its default
        return Annotated[bool, typer.Option(*s.flags, help=text)]
    # ranges and choices are checked by config.resolve: one message for flag, environment and
    # config file alike
    return Annotated[Optional[s.kind.py], typer.Option(*s.flags, help=text, show_default=False,
                                                       metavar=s.metavar)]


def option(name: str, group: str) -> Any:
    """The typer option of setting ``name``, for a command of ``group`` (``config.DRAFTS``...);
    the table says which groups take it."""
    s = SETTING[name]
    if group not in s.commands or not s.flags:
        raise ValueError(f"the setting {name} is not an option of the {group} commands "
                         "(config.SETTINGS says where each flag is)")
    return _annotation(s)


def _from_flag(s: Setting, value: Any) -> Any:
    """The setting's value from what typer passed (a switch: whether its flag was given)."""
    if s.kind is SWITCH:
        return (not s.default) if value else s.default
    return value


_MODEL = tuple(s for s in SETTINGS if MODEL in s.commands and s.flags)


def _given(self: Any) -> list[str]:
    """The flags given on the command line, as typed (``--json``, ``--max-turns``)."""
    return [s.flag for s in _MODEL
            if (getattr(self, s.name) != s.default if s.kind is SWITCH
                else getattr(self, s.name) is not None)]


def _settings(self: Any, **override: Any) -> Any:
    """The resolved ``config.Settings`` (``override`` replaces a flag's value)."""
    return resolve(**{**{s.name: getattr(self, s.name) for s in _MODEL}, **override})


def _settings_each(self: Any) -> Any:
    """(settings, problems): every setting resolved on its own, a bad one listed and replaced by
    its default (``config.resolve_each``: ``doctor`` runs every check whatever is wrong)."""
    return resolve_each(**{s.name: getattr(self, s.name) for s in _MODEL})


# The flags of one command line, by setting name: None when not given; a switch holds its value.
ModelOptions = dataclasses.make_dataclass(
    "ModelOptions", [(s.name, Any, dataclasses.field(default=s.default if s.kind is SWITCH else None,
                                                     repr=not s.secret)) for s in _MODEL],
    frozen=True, namespace={"__module__": __name__, "given": _given, "settings": _settings,
                            "settings_each": _settings_each})


class PlainUsage(typer.core.TyperCommand):
    """A command whose usage line shows a required argument as ``ID``, not typer's ``{ID}``
    (``@app.command(..., cls=PlainUsage)``)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [p[1:-1] if p.startswith("{") and p.endswith("}") else p
                for p in super().collect_usage_pieces(ctx)]


def model_options(fn: Callable[..., Any] | None = None, *,
                  help: dict[str, str] | None = None) -> Any:
    """Give a typer command the shared model options; it receives them as ``opts: ModelOptions``.
    ``help``: a setting's help as this command means it (``eval``: drafts go to a temporary
    folder unless --drafts-dir names one)."""
    if fn is None:
        return functools.partial(model_options, help=help)
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.name != "opts"]
    extra = [_P(_param(s), _P.KEYWORD_ONLY, default=False if s.kind is SWITCH else None,
                annotation=_annotation(s, (help or {}).get(s.name))) for s in _MODEL]

    @functools.wraps(fn)
    def command(*args: Any, **kwargs: Any) -> Any:
        opts = ModelOptions(**{s.name: _from_flag(s, kwargs.pop(_param(s))) for s in _MODEL})
        return fn(*args, opts=opts, **kwargs)

    command.__signature__ = sig.replace(parameters=own + extra)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in own + extra}
    del command.__wrapped__  # typer must read the new signature, not the wrapped function's
    return command


TicketOpt = Annotated[Optional[str], typer.Option(
    "--ticket", help="the helpdesk ticket id recorded on every draft; a ticket that exists is "
                     "resumed (its questions, lookups and live draft) [default: the session id]",
    show_default=False, metavar="ID")]
