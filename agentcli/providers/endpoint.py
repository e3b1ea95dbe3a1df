"""What a provider's key, base URL and proxy settings must look like before any client is built.

Each function returns why a value cannot work, in words for a person, or None. The providers
raise them as ``ConfigError`` (exit 3) when they are built, and ``cli.preflight`` (``doctor``,
and what ``ask``, ``chat``, ``batch`` and ``eval`` check first) says them with the fix, so a
setup that cannot work never reaches the network, spends nothing and never reads as "internal
error (InvalidURL)" or as four tries of "broken response (UnicodeEncodeError)".

Standard library only; a key's characters are never shown, only the one that is wrong.
"""

from __future__ import annotations

import os
import unicodedata
from urllib.parse import urlsplit

from ..errors import ConfigError

# the proxy variables the SDKs' HTTP client reads from the environment (either case)
PROXY_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")


def key_problem(value: str) -> str | None:
    """Why an API key ``value`` cannot be sent in a header (spaces, control characters, or a
    character that is not ASCII: a typographic dash or quote from a copy-paste)."""
    if value != value.strip() or any(c.isspace() or not c.isprintable() for c in value):
        return "holds spaces or control characters"
    for i, c in enumerate(value, 1):
        if not c.isascii():
            name = unicodedata.name(c, "").lower()
            return (f"holds U+{ord(c):04X}" + (f" ({name})" if name else "") + f" at position {i}, "
                    "and API keys are plain ASCII (a copy-paste may have turned a hyphen into a "
                    "typographic dash)")
    return None


def url_problem(value: str, *, schemes: tuple[str, ...] = ("http", "https")) -> str | None:
    """Why ``value`` is not a URL an HTTP client can use: not parsable (``http://[::1``), a bad
    port, another scheme, no host, spaces, a host that is no domain name."""
    if any(c.isspace() or not c.isprintable() for c in value):
        return "holds spaces or control characters"
    try:
        u = urlsplit(value)
        u.port  # noqa: B018 - parsing it is the check (a port out of range, not a number)
    except ValueError as e:
        return f"is not a valid URL ({e})"
    if u.scheme.lower() not in schemes:
        return "must start with " + " or ".join(f"{s}://" for s in schemes)
    if not u.hostname:
        return "names no host"
    try:
        u.hostname.encode("idna")
    except UnicodeError:
        return "names a host that is not a valid domain name"
    return None


def proxy_problems(env: "os._Environ[str] | dict[str, str]" = os.environ) -> list[tuple[str, str]]:
    """(variable, why) for each proxy variable set to something the HTTP client cannot use."""
    out = []
    for name in PROXY_ENV:
        for var in (name, name.lower()):
            v = env.get(var)
            if not v:
                continue
            shown = v if "://" in v else f"http://{v}"  # what the client does with a bare host
            why = url_problem(shown, schemes=("http", "https", "socks5", "socks5h"))
            if why is not None:
                out.append((var, why))
    return out


def endpoint_problems(key_env: str, key: str | None, url_env: str,
                      example: str) -> list[tuple[str, str, str]]:
    """(what, why, fix) for each setting of a provider that cannot work: its key, its base URL
    (from ``url_env``), the proxy variables."""
    out = []
    if key:
        why = key_problem(key)
        if why is not None:
            out.append((key_env, why, f"set {key_env} again, typed or pasted as plain text"))
    url = os.environ.get(url_env)
    if url:
        why = url_problem(url)
        if why is not None:
            out.append((url_env, why, f"set {url_env} to the server's address (e.g. {example}), "
                                      "or unset it"))
    for var, why in proxy_problems():
        out.append((var, why, f"set {var} to the proxy's URL (e.g. http://proxy.example:3128), "
                              "or unset it"))
    return out


def check_endpoint(key_env: str, key: str | None, url_env: str, example: str) -> None:
    """Raise ``ConfigError`` for the first of :func:`endpoint_problems`."""
    for what, why, fix in endpoint_problems(key_env, key, url_env, example):
        raise ConfigError(f"{what} {why}; {fix}")
