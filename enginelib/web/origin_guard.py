"""What a web page the user happens to visit may not do to a store served on this machine.

`serve` on loopback needs no token, so the browser is the only fence, and it has two gaps:
- **Cross-site writes.** A browser sends a POST with a "simple" body (multipart, a form,
  text/plain) to any origin without asking first; it only hides the answer. Any page could
  upload a document, purge jobs or retry the DLQ. Such a request carries the page's
  ``Origin``, so an unsafe method whose Origin is not the server's own is refused.
- **DNS rebinding.** A page whose name is made to resolve to 127.0.0.1 *is* its own origin
  to the browser, and may read every answer. Only the ``Host`` header still names the site
  the request was meant for, so on loopback a Host that is not this machine is refused.

Clients that are not browsers (curl, Python) send no Origin and are unaffected. Every
response also carries headers that keep the pages out of other sites' frames and scripts.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote_to_bytes

from ..errors import InvalidInputError

LOOPBACK_NAMES = frozenset({"localhost"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy",
     b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     b"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
     b"frame-ancestors 'none'"),
    # A page opened with ?token= must not hand the token to a site it links to.
    (b"referrer-policy", b"no-referrer"),
    # An API answer loaded by another site's <script> or <img> is blocked, not just hidden.
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
)

_HOST_NAME = re.compile(r"^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
                        r"(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$")


def host_name(authority: str) -> str | None:
    """The host of ``host[:port]`` (``[v6]:port`` too), lower case; None if it is malformed."""
    authority = authority.strip().lower()
    if authority.startswith("["):
        host, bracket, port = authority[1:].partition("]")
        if not bracket or (port and not (port[:1] == ":" and port[1:].isdigit())):
            return None
        return host or None
    host, colon, port = authority.partition(":")
    if colon and not port.isdigit():
        return None  # a bare IPv6 address (Host always brackets one) or a junk port
    return host.rstrip(".") or None


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def binds_loopback(address: str) -> bool:
    """Whether a bind address (``--host``: a name, an IPv4 or a bare or bracketed IPv6
    address) is this machine only."""
    return is_loopback(address.strip("[]").lower())


def check_allowed_host(name: str) -> str:
    """A name for ``allow_hosts`` (``--allow-host``): a DNS name or an IP address, no port."""
    cleaned = name.strip().lower().strip("[]").rstrip(".")
    try:
        ipaddress.ip_address(cleaned)
        return cleaned
    except ValueError:
        pass
    if not _HOST_NAME.match(cleaned) or cleaned.replace(".", "").isdigit():
        raise InvalidInputError(
            f"allowed host {name!r} is not a host name or an IP address: give the name clients "
            "use to reach the server (e.g. search.example.com), without scheme, port or '*'")
    return cleaned


class OriginGuard:
    """ASGI middleware: refuse a foreign Host (when ``check_host``) and a cross-origin write;
    then a URL whose %XX escapes are not UTF-8 (400: the server would read U+FFFD for them).

    ``allow_hosts``: names besides this machine's that clients may use (a reverse proxy's
    public name); a request with one as its Host, or a write from a page on one, is accepted.
    """

    def __init__(self, app: Any, *, check_host: bool, allow_hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.check_host = check_host
        self.allow_hosts = frozenset(check_allowed_host(name) for name in allow_hosts)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await _send_refusal(send, refusal)
            return
        garbled = _not_utf8(scope)
        if garbled is not None:
            await _send_refusal(send, garbled, 400, "InvalidInputError")
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *(h for h in SECURITY_HEADERS if h[0] not in present)]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def refusal(self, scope: dict[str, Any]) -> str | None:
        headers = {name.decode("latin-1").lower(): value.decode("latin-1")
                   for name, value in scope.get("headers", [])}
        authority = headers.get("host", "")
        host = host_name(authority)
        if self.check_host and not (host and (is_loopback(host) or host in self.allow_hosts)):
            return (f"this server answers to this machine's names only (127.0.0.1, localhost, "
                    f"[::1]), not Host {authority!r}: a page elsewhere may have made its own "
                    "name point here. Behind a proxy, start serve with --allow-host NAME")
        if scope["method"] in SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is None:
            # No Origin: not a browser, or one so old it sends none on a same-site form.
            # Fetch metadata, where present, still says when a page elsewhere sent it.
            site = headers.get("sec-fetch-site")
            if site in ("cross-site", "same-site"):
                return f"a {scope['method']} from another site ({site}) is refused"
            return None
        if _same_origin(origin, authority, self.allow_hosts):
            return None
        return (f"a {scope['method']} from a page on {origin!r} is refused: only this server's "
                "own pages (or clients that are not browsers) may change the store. Behind a "
                "proxy, start serve with --allow-host NAME")


def _not_utf8(scope: dict[str, Any]) -> str | None:
    """Why the URL cannot be read as text, or None. Its %XX bytes are UTF-8 or the server
    replaced each bad one with U+FFFD unseen: ?q=brakes%FF searched "brakes\ufffd", and
    DELETE /api/documents/x%FF deleted a document whose id holds U+FFFD."""
    raw_path = scope.get("raw_path") or scope.get("path", "").encode()
    for raw, what in ((raw_path, "path"), (scope.get("query_string", b""), "query string")):
        try:
            unquote_to_bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            return (f"the URL's {what} is not UTF-8 text (byte {exc.start} of it once its "
                    "%XX escapes are decoded): percent-encode a name's UTF-8 bytes, as "
                    "urllib.parse.quote and encodeURIComponent do")
    return None


def _same_origin(origin: str, authority: str, allow_hosts: frozenset[str]) -> bool:
    if origin == "null" or "://" not in origin:
        return False  # a sandboxed frame, a file:// page, a data: URL
    netloc = origin.split("://", 1)[1].rstrip("/").lower()
    if netloc == authority.strip().lower():
        return True
    host = host_name(netloc)
    return host is not None and host in allow_hosts


async def _send_refusal(send: Any, message: str, status: int = 403,
                        kind: str = "Forbidden") -> None:
    body = json.dumps({"error": message, "type": kind}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})
