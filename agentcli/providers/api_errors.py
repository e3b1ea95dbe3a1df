"""One mapping from an SDK exception to the one-line ``ModelAPIError`` a person reads.

Both provider SDKs (``anthropic`` and ``openai``) are generated from the same template and share
the exception names (``AuthenticationError``, ``RateLimitError``, ``APIStatusError``, ...), so
one function maps either; the provider passes its SDK module and a :class:`Where` that says
how to name the server and which settings to check. The rate-limit gate's answer to a 429/529
(:class:`~agentcli.providers.ratelimit.LimitAnswer`) is mapped here too. Importing this module
imports no SDK.

Every line carries the server's own message when it sent one (cleaned of control characters
and line separators, one line, cut to :data:`MAX_SERVER_MESSAGE` characters, secrets removed),
because a 500 whose body names the wrong field is worth more than "try again shortly".
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import ModelAPIError
from ..redact import one_line as safe_line
from .ratelimit import LimitAnswer, RateLimited

MAX_SERVER_MESSAGE = 200  # characters of the server's own message kept in an error line

CONTEXT_HINTS = ("context_length_exceeded", "context length", "context window", "context size",
                 "maximum context", "exceed_context", "too many tokens", "prompt is too long")


@dataclass(frozen=True)
class Where:
    """How the error lines name the server and what they advise to check."""

    label: str  # "the Anthropic API" / "the model server at localhost:8080"
    key_env: str  # "ANTHROPIC_API_KEY"
    url_env: str  # "ANTHROPIC_BASE_URL"
    not_found_hint: str  # what a 404 asks to check
    timeout_hint: str = "check the network or raise --request-timeout"
    connection_hint: str = ""  # defaults to "check the network and <url_env>"
    overloaded: tuple[int, ...] = (529,)  # statuses reported as "overloaded"


def one_line(text: Any, limit: int = MAX_SERVER_MESSAGE) -> str:
    """A server's words as one printable, redacted line (``redact.one_line``)."""
    return safe_line(text, limit)


def _message_in(body: Any) -> str | None:
    """The human message inside an API error body, whatever the server's dialect."""
    if isinstance(body, (bytes, bytearray)):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except (ValueError, RecursionError):
            return body or None
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            for k in ("message", "detail", "msg"):
                if isinstance(err.get(k), str) and err[k].strip():
                    return err[k]
        elif isinstance(err, str) and err.strip():
            return err
        for k in ("message", "detail"):
            if isinstance(body.get(k), str) and body[k].strip():
                return body[k]
    return None


def server_message(e: Exception) -> str:
    """The server's own words for ``e`` (one clean line), or "" when it sent none."""
    msg = _message_in(getattr(e, "body", None))
    if msg is None:
        resp = getattr(e, "response", None)
        try:
            text = resp.text if resp is not None else None
        except RuntimeError:  # httpx2.ResponseNotRead / StreamClosed: a body never read
            text = None
        msg = _message_in(text) if text is not None else None
    return one_line(msg) if msg else ""


def short(e: Exception) -> str:
    """The server's message, else the SDK's, else the exception's type."""
    return server_message(e) or one_line(getattr(e, "message", "") or type(e).__name__)


def error_code(e: Exception) -> str:
    """Every code/type word the error carries, lower-cased, space separated."""
    body = getattr(e, "body", None)
    parts = [str(getattr(e, "code", "") or ""), str(getattr(e, "type", "") or "")]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            parts += [str(err.get("code") or ""), str(err.get("type") or "")]
    return " ".join(parts).lower()


def is_context_overflow(sdk: Any, e: Exception) -> bool:
    """A 400 (or a 413/500 from local servers) saying the prompt does not fit the context."""
    if not isinstance(e, sdk.APIStatusError) or e.status_code not in (400, 413, 422, 500):
        return False
    text = f"{error_code(e)} {short(e)}".lower()
    return any(h in text for h in CONTEXT_HINTS)


def _said(e: Exception) -> str:
    m = server_message(e)
    return f": {m}" if m else ""


MAX_RETRY_AFTER = 60.0  # seconds: a longer retry-after is waited this long at most


def retry_after(e: Exception) -> float | None:
    """The server's ``retry-after-ms`` / ``retry-after`` (seconds) header, bounded; None if absent."""
    resp = getattr(e, "response", None)
    headers = getattr(resp, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name)) * scale
        except (TypeError, ValueError):
            continue
        if value == value and value >= 0:
            return min(value, MAX_RETRY_AFTER)
    return None


# Transport failures in words a person can act on, not the exception class (ReadTimeout,
# RemoteProtocolError, ...). Matched on the class name of the exception or any of its causes.
_TRANSPORT = (
    (("ReadTimeout", "TimeoutException", "APITimeoutError", "TimeoutError", "PoolTimeout"),
     "no data arrived within --request-timeout; raise --request-timeout (or "
     "AGENTCLI_REQUEST_TIMEOUT) for a slow model"),
    (("DecodingError",),
     "the response's body does not match its content-encoding (a proxy in between may be "
     "changing it); try again"),
    (("RemoteProtocolError", "IncompleteRead", "ProtocolError", "LocalProtocolError"),
     "the server closed the connection in the middle of the response; try again"),
    (("ReadError", "WriteError", "ConnectionResetError", "BrokenPipeError", "NetworkError"),
     "the connection was lost in the middle of the response; check the network and try again"),
    (("JSONDecodeError", "UnicodeDecodeError", "RecursionError", "ValueError", "TypeError",
      "AttributeError", "IndexError", "RuntimeError"),
     "the response was not valid (malformed data in the stream); try again"),
)


def transport_words(e: BaseException) -> str:
    """What went wrong in transport, for a person (no exception class names)."""
    seen = 0
    while e is not None and seen < 8:
        name = type(e).__name__
        for names, words in _TRANSPORT:
            if name in names:
                return words
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
        seen += 1
    return "the response ended early; try again"


def _causes(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    while e is not None and len(out) < 8:
        out.append(e)
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
    return out


def _detail(e: BaseException) -> str:
    """An exception's own words, one clean line (``[Errno 111] Connection refused`` ->
    ``connection refused``)."""
    text = one_line(str(e), 160)
    if text.startswith("[Errno") and "] " in text:
        text = text.split("] ", 1)[1]
    return text[:1].lower() + text[1:] if text else ""


def _reached_but(e: BaseException, where: Where) -> ModelAPIError | None:
    """The server was reached and answered, but what it sent could not be read: said as what
    the server did, not as "cannot reach" (a body that is not what its content-encoding says,
    a body shorter than its Content-Length, a reply that is not HTTP)."""
    at = where.label
    for c in _causes(e):
        name = type(c).__name__
        said = _detail(c)
        if name == "DecodingError":
            return ModelAPIError(f"{at} sent a body that does not match its content-encoding "
                                 f"({said}); a proxy in between may be changing it",
                                 kind="bad_response", retryable=True)
        if name in ("RemoteProtocolError", "IncompleteRead"):
            if "complete message body" in said or "incomplete" in said.lower():
                what = "closed the connection before the whole response arrived"
            elif "without sending a response" in said:
                what = "closed the connection without answering"
            else:
                what = "sent a reply that is not valid HTTP"
            return ModelAPIError(f"{at} {what} ({said})", kind="bad_response", retryable=True)
        if name == "ReadError":
            return ModelAPIError(f"{at} lost the connection while the response arrived"
                                 + (f" ({said})" if said else ""), kind="connection",
                                 retryable=True)
    return None


def _unreachable(e: BaseException, where: Where) -> ModelAPIError:
    """Could not reach the server at all: why, in the system's words (refused, no such host,
    TLS), and what to check."""
    hint = where.connection_hint or f"check the network and {where.url_env}"
    why = ""
    for c in _causes(e):
        name = type(c).__name__
        if name == "ProxyError":
            hint = "check the proxy (HTTPS_PROXY / HTTP_PROXY / ALL_PROXY)"
        if "SSL" in name or "Certificate" in name:
            why = f"the TLS handshake failed: {_detail(c)}"
            break
        if isinstance(c, OSError) or name in ("ConnectError", "ProxyError", "ConnectTimeout"):
            if isinstance(c, OSError) and isinstance(c.errno, int) and c.errno > 0:
                d = os.strerror(c.errno).lower()  # "connection refused", not asyncio's wording
            elif isinstance(c, OSError) and c.strerror:  # a resolver's gaierror
                d = one_line(c.strerror, 120).lower()
            else:
                d = _detail(c)
            if d and d != "all connection attempts failed":
                why = d
    return ModelAPIError(f"cannot reach {where.label}" + (f" ({why})" if why else "") + f"; {hint}",
                         kind="connection")


def redirect_target(e: Exception) -> str:
    """Where a 3xx answer points (scheme, host, port and path; never a query or credentials)."""
    headers = getattr(getattr(e, "response", None), "headers", None) or {}
    loc = str(headers.get("location", ""))[:500]
    try:
        u = urlsplit(loc)
        host = u.hostname or ""
        shown = f"{u.scheme}://{host}" + (f":{u.port}" if u.port else "") + u.path if host else u.path
    except ValueError:
        shown = ""
    return one_line(shown, 120)


def api_error(sdk: Any, e: Exception, where: Where) -> ModelAPIError:
    """The one-line error for an SDK exception raised before the response started (or for the
    rate-limit gate's :class:`~agentcli.providers.ratelimit.LimitAnswer`, as it is or inside
    the SDK's connection error). The SDK retries nothing (``max_retries=0``): overloads, 429s,
    5xx, timeouts and connection failures come back ``retryable`` (with the server's
    ``retry-after``; a server's ``x-should-retry: false`` is honoured) and the loop retries
    them (``providers.retry``)."""
    answer = limit_answer_in(e)
    if answer is not None:
        return rate_limited(answer, where)
    err = _api_error(sdk, e, where)
    if err.kind in ("rate_limited", "overloaded", "server_error", "timeout", "connection",
                    "bad_response"):
        headers = getattr(getattr(e, "response", None), "headers", None) or {}
        err.retryable = str(headers.get("x-should-retry", "")).lower() != "false"  # as the SDK
        err.retry_after = retry_after(e)
    return err


def limit_answer_in(e: BaseException) -> LimitAnswer | None:
    """The rate-limit gate's answer behind ``e`` (``e`` itself or one of its causes), or None."""
    seen = 0
    while e is not None and seen < 8:
        if isinstance(e, LimitAnswer):
            return e
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
        seen += 1
    return None


def rate_limited(answer: LimitAnswer, where: Where) -> RateLimited:
    """The line for a limit answer the gate took in hand: the server's status and words, or,
    when the gate stops (a quota, a limit letting nothing through), why."""
    said = _said(answer)
    if answer.paced is not None:  # no request sent: a wait the loop shows, then asks again
        return RateLimited(f"waiting for the rate limit of {where.label}: {answer.paced}", answer,
                           kind="rate_limited", retry_after=None)
    if answer.status == 429:
        kind, msg = "rate_limited", f"rate limited by {where.label} (429){said}"
    else:
        kind, msg = "overloaded", f"{where.label} is overloaded ({answer.status}){said}"
    if answer.stopped:
        kind = "rate_limit_stop"  # a quota or a limit that lets nothing through: not "a minute"
    asked = answer.retry_after
    return RateLimited(answer.stopped or msg, answer, kind=kind,
                       retry_after=None if asked is None else min(asked, MAX_RETRY_AFTER))


def _api_error(sdk: Any, e: Exception, where: Where) -> ModelAPIError:
    at = where.label
    if isinstance(e, sdk.AuthenticationError):
        return ModelAPIError(f"{at} rejected the API key (401): check {where.key_env}",
                             kind="authentication")
    if isinstance(e, sdk.PermissionDeniedError):
        return ModelAPIError(f"{at} refused access (403){_said(e)}; check the key's permissions",
                             kind="permission")
    if isinstance(e, sdk.NotFoundError):
        return ModelAPIError(f"{at} answered 404{_said(e)}; check {where.not_found_hint}",
                             kind="not_found")
    if isinstance(e, sdk.RateLimitError):
        # What to do depends on the command (batch: --concurrency): agentcli.cli.advice adds it.
        return ModelAPIError(f"rate limited by {at} (429){_said(e)}", kind="rate_limited")
    if isinstance(e, sdk.APIStatusError) and e.status_code in where.overloaded:
        return ModelAPIError(f"{at} is overloaded ({e.status_code}){_said(e)}",
                             kind="overloaded")  # advice ("try again shortly"): agentcli.cli.advice
    if isinstance(e, sdk.APIStatusError) and e.status_code >= 500:
        return ModelAPIError(f"{at} failed ({e.status_code}){_said(e)}", kind="server_error")
    if isinstance(e, sdk.APIStatusError) and 300 <= e.status_code < 400:
        to = redirect_target(e)
        return ModelAPIError(f"{at} answered with a redirect ({e.status_code}"
                             + (f" to {to}" if to else "") + "); agentcli does not follow "
                             f"redirects (the request carries the API key): set {where.url_env} "
                             "to the address the server names", kind="redirect")
    if isinstance(e, sdk.APIStatusError) and e.status_code in (400, 422):
        return ModelAPIError(f"{at} refused the request ({e.status_code}): {short(e)}",
                             kind="bad_request")
    if isinstance(e, sdk.APIStatusError):
        return ModelAPIError(f"{at} answered {e.status_code}: {short(e)}", kind="api_error")
    if isinstance(e, sdk.APITimeoutError):
        return ModelAPIError(f"{at} did not answer in time; {where.timeout_hint}", kind="timeout")
    if isinstance(e, sdk.APIConnectionError):
        cause = broken_cause(e)
        if cause is not None:
            return ModelAPIError(f"{at} sent a broken response: {cause}", kind="bad_response")
        return _reached_but(e, where) or _unreachable(e, where)
    if isinstance(e, sdk.APIResponseValidationError):
        return broken(where, "not a response of the API's shape")
    return ModelAPIError(f"{at} failed ({type(e).__name__})", kind="api_error")


def broken(where: Where, why: str) -> ModelAPIError:
    """A 200 response that is not what the API sends: a failed call (retried as a fresh one)."""
    return ModelAPIError(f"{where.label} sent a broken response: {one_line(why)}",
                         kind="bad_response", retryable=True)


def broken_cause(e: BaseException) -> str | None:
    """The message of a :class:`~agentcli.providers.bounds.ResponseBoundExceeded` behind ``e``."""
    seen = 0
    while e is not None and seen < 8:
        if getattr(e, "agentcli_bound", False):
            return str(e)
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
        seen += 1
    return None


def models_answered(page: Any) -> str:
    """The line for a models list that answered (``check_api``): the endpoint and the first
    model ids it named, each one clean line."""
    data = getattr(page, "data", None)
    ids = [getattr(m, "id", "") for m in data[:3]] if isinstance(data, list) else []
    shown = ", ".join(one_line(i, 60) for i in ids if isinstance(i, str) and i)
    return "GET /v1/models answered" + (f" ({shown})" if shown else "")
