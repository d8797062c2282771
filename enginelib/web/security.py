"""What keeps `serve` safe by default: the token check and the rules for uploaded names."""

from __future__ import annotations

import hmac
import unicodedata
from urllib.parse import quote, unquote_plus

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from ..errors import InvalidInputError, UnsafeBindError
from .origin_guard import binds_loopback

ENV_TOKEN = "ENGINELIB_TOKEN"
TOKEN_COOKIE = "enginelib_token"
TOKEN_HEADER = "x-enginelib-token"
# A plain file name: letters and digits of any script, a few marks, no folder part, no
# leading dot, no control or invisible characters (isalnum is false for those). ASCII only
# refused an ordinary "Übersicht.md" or "résumé.pdf" as "not a plain file name".
_NAME_MARKS = frozenset("._ ()+-")
MAX_NAME_CHARS = 200
MAX_NAME_BYTES = 255  # what a Linux or macOS file system takes for one name, in UTF-8


MIN_EXPOSED_TOKEN = 16  # characters; a guessable secret guards nothing on a network


def check_token(token: str) -> str:
    """``token`` if an HTTP client can send it in a header: ASCII letters, digits,
    punctuation and inner spaces.

    A header is Latin-1 to the server: a token with "é" sent as UTF-8 by curl (or refused
    by Python's clients) never matched, so 'Authorization: Bearer TOKEN' answered 401 for
    ever while ?token= worked; a space at either end is dropped by the header's parsing."""
    bad = next((ch for ch in token if not " " <= ch <= "~"), None)
    if bad is None and token != token.strip():
        bad = " "
    if bad is not None:
        raise InvalidInputError(
            f"the token holds {bad!r} (U+{ord(bad):04X}){' at an end' if bad == ' ' else ''}: "
            "a token travels in HTTP headers, which carry visible ASCII only: use letters, "
            "digits and punctuation, e.g. "
            "`python -c \"import secrets; print(secrets.token_urlsafe(24))\"`")
    return token


def require_token_for(host: str, token: str | None) -> None:
    if binds_loopback(host):
        return
    if not token:
        raise UnsafeBindError(
            f"binding {host} exposes the store beyond this machine: pass --token SECRET "
            f"(or set ${ENV_TOKEN}); every request must then carry it"
        )
    weak = (f"is {len(token.strip())} character(s) long" if len(token.strip()) < MIN_EXPOSED_TOKEN
            else f"has only {len(set(token))} distinct character(s)" if len(set(token)) < 8
            else None)
    if weak:
        raise UnsafeBindError(
            f"binding {host} exposes the store beyond this machine, and the token {weak}: "
            f"anyone who can reach the port could guess it. Use at least {MIN_EXPOSED_TOKEN} "
            f"random characters, e.g. `python -c \"import secrets; "
            f"print(secrets.token_urlsafe(24))\"`"
        )


def safe_upload_name(name: str) -> str:
    """The name an upload is stored under (NFC: a Mac sends "Ü" as U and a combining mark),
    or InvalidInputError if it names a path or holds characters a file name should not."""
    name = unicodedata.normalize("NFC", name)
    plain = (0 < len(name) <= MAX_NAME_CHARS and len(name.encode()) <= MAX_NAME_BYTES
             and name[0].isalnum() and ".." not in name
             and all(ch.isalnum() or ch in _NAME_MARKS for ch in name))
    if not plain:
        raise InvalidInputError(
            f"upload name {name!r} is not a plain file name: use letters, digits, '.', '-', "
            f"'_', '+', '()' and spaces, start with a letter or digit, at most "
            f"{MAX_NAME_CHARS} characters, no folders and no '..'"
        )
    return name


def presented_token(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    return (request.headers.get(TOKEN_HEADER) or request.query_params.get("token")
            or request.cookies.get(TOKEN_COOKIE))


class TokenMiddleware(BaseHTTPMiddleware):
    """Every request carries the token (header, bearer, ?token= or the cookie it sets)."""

    def __init__(self, app: object, token: str) -> None:
        super().__init__(app)  # type: ignore[arg-type]
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        given = presented_token(request)
        if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
            return JSONResponse(
                {"error": "missing or wrong token: send 'Authorization: Bearer TOKEN' "
                          "(or open the page once with ?token=TOKEN)", "type": "Unauthorized"},
                status_code=401,
            )
        if request.query_params.get("token") and request.method in ("GET", "HEAD") and (
                not request.url.path.startswith(("/api/", "/static/"))):
            # A page is opened again without the token: left in the address bar, it was kept
            # in the history and bookmarks, shown in a screen share, and sent again by Back.
            response: Response = RedirectResponse(_without_token(request), status_code=303)
        else:
            response = await call_next(request)
        if request.query_params.get("token"):
            # Pages opened with ?token= keep working for the JavaScript's API calls.
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
        return response


# What stays as it is in the URL sent again: its %XX escapes and delimiters. Anything else
# (a byte above 0x7F, a backslash, which a browser reads as '/') is escaped.
_URL_SAFE = "/%:@!$&'()*+,;=~-._"


def _without_token(request: Request) -> str:
    """The request's path and query string as sent, less its ``token`` parameters."""
    raw_path = request.scope.get("raw_path") or request.url.path.encode()
    # one leading '/': "//example.com/" is another site to the browser
    path = "/" + quote(raw_path, safe=_URL_SAFE).lstrip("/")
    kept = [quote(part, safe=_URL_SAFE) for part in request.scope.get("query_string", b"").split(b"&")
            if part and unquote_plus(part.partition(b"=")[0].decode("latin-1")) != "token"]
    return path + ("?" + "&".join(kept) if kept else "")
