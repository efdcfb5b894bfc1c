"""The inspector's HTTP server: standard library only, read-only, local by default.

Safety, in layers:
- It answers GET and HEAD only; the store is never written.
- It binds to a loopback address unless it has an access token (the command line
  refuses otherwise). With a token, every request must carry it: ``?token=`` once (the
  server then sets a cookie and redirects to the same page without it), the cookie, or
  ``Authorization: Bearer``.
- Without a token it answers only requests whose Host is a loopback name, so a web page
  elsewhere cannot reach it through DNS rebinding.
- Every piece of stored data is escaped (Jinja2 with autoescaping, see ``render``), and
  a Content-Security-Policy forbids scripts and any asset from another origin.
- A blob is always sent as an attachment, with the content type its bytes show (JSON,
  text, PNG, ...), ``nosniff`` and a sandboxing policy: never rendered as a page here.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
import socket
from collections.abc import Callable
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from agentckpt.errors import AgentckptError, CorruptDataError, InvalidValueError, NotFoundError
from agentckpt.inspector import pages, render
from agentckpt.inspector.blobs import sniff
from agentckpt.ops.views import ORPHAN_AFTER_SECONDS
from agentckpt.store.store import Store, as_run_id

log = logging.getLogger("agentckpt.inspector")

COOKIE = "agentckpt_token"
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin",
}
STATIC = {"style.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"}
_RUN = r"(?P<run>[0-9a-fA-F-]{32,36})"
_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``: addresses no other machine reaches."""
    name = host.strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class InspectorServer(ThreadingHTTPServer):
    """A threaded HTTP server bound to one store."""

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        store: Store,
        *,
        token: str | None,
        label: str,
        orphan_after: float = ORPHAN_AFTER_SECONDS,
        command_url: str | None = None,
    ) -> None:
        self.view = pages.View(
            store=store, label=label, orphan_after=orphan_after, command_url=command_url
        )
        self.token = token
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)

    @property
    def url(self) -> str:
        """The address to open in a browser."""
        host, port = self.server_address[0], self.server_address[1]
        text = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{text}]" if ":" in text else text
        if shown in ("0.0.0.0", "[::]"):
            shown = "127.0.0.1"
        return f"http://{shown}:{port}/"


def make_server(
    store: Store,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    label: str | None = None,
    orphan_after: float = ORPHAN_AFTER_SECONDS,
    command_url: str | None = None,
) -> InspectorServer:
    """A server for ``store`` (not yet serving: call ``serve_forever()``).

    ``orphan_after`` is the heartbeat silence (seconds) that flags an active conversation
    as an orphan; ``command_url`` the ``--url`` the pages put in commands they suggest
    (default: the SQLite file's URL; never a PostgreSQL URL, which may hold a password).
    Raises ValueError for a non-loopback ``host`` without a ``token``, and
    ConfigurationError naming the ``inspector`` extra when Jinja2 is not installed.
    """
    if not is_loopback(host) and not token:
        raise ValueError(f"refusing to serve on {host} without an access token")
    render.require()
    return InspectorServer(
        (host, port),
        store,
        token=token,
        label=label or store.backend.dialect,
        orphan_after=orphan_after,
        command_url=command_url,
    )


class Handler(BaseHTTPRequestHandler):
    """Routes GET requests to pages; refuses everything else."""

    server: InspectorServer
    server_version = "agentckpt-inspector"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Log requests through ``logging`` instead of printing each to stderr."""
        log.debug("%s %s", self.address_string(), format % args)

    # -- responses -------------------------------------------------------------------

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        *,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (SECURITY_HEADERS | (headers or {})).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _html(self, status: int, text: str) -> None:
        self._send(
            status,
            text.encode("utf-8"),
            "text/html; charset=utf-8",
            headers={"Cache-Control": "no-store"},
        )

    def _error(self, status: int, message: str) -> None:
        self._html(status, pages.error_page(self.server.view.label, status, message))

    # -- access ----------------------------------------------------------------------

    def _host_allowed(self) -> bool:
        if self.server.token:
            return True  # the token is the protection; any Host may carry it
        host = self.headers.get("Host", "")
        name = urlsplit(f"//{host}").hostname or ""
        return is_loopback(name)

    def _presented_token(self, query: dict[str, str]) -> str | None:
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            return auth[len("Bearer ") :]
        cookie = SimpleCookie(self.headers.get("Cookie", ""))
        if COOKIE in cookie:
            return cookie[COOKIE].value
        return query.get("token")

    def _authorized(self, route: str, query: dict[str, str]) -> bool:
        """Check access; on a failure (or a token to move into a cookie) respond here."""
        if not self._host_allowed():
            self._error(
                HTTPStatus.FORBIDDEN,
                "this inspector answers only requests to 127.0.0.1 or localhost; "
                "start it with --token to serve other names",
            )
            return False
        token = self.server.token
        if token is None:
            return True
        presented = self._presented_token(query)
        if presented is None or not hmac.compare_digest(presented.encode(), token.encode()):
            self._error(
                HTTPStatus.UNAUTHORIZED,
                "this inspector needs its access token: open the link that "
                "`agentckpt inspect` printed",
            )
            return False
        if "token" in query:
            # Move the token into a cookie so it leaves the address bar and history.
            rest = {k: v for k, v in query.items() if k != "token"}
            target = route + ("?" + urlencode(rest) if rest else "")
            self._send(
                HTTPStatus.SEE_OTHER,
                b"",
                "text/plain",
                headers={
                    "Location": target,
                    "Set-Cookie": f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/",
                },
            )
            return False
        return True

    # -- routing ---------------------------------------------------------------------

    def do_GET(self) -> None:
        """Serve a page, a static file or a blob."""
        parts = urlsplit(self.path)
        route = parts.path
        query = dict(parse_qsl(parts.query))
        if not self._authorized(route, query):
            return
        try:
            self._route(route, query)
        except NotFoundError as exc:
            self._error(HTTPStatus.NOT_FOUND, str(exc))
        except InvalidValueError as exc:
            self._error(HTTPStatus.BAD_REQUEST, exc.reason)
        except CorruptDataError as exc:
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"corrupt data: {exc}")
        except AgentckptError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, str(exc))

    def do_HEAD(self) -> None:
        """Like GET, without the body."""
        self.do_GET()

    def _refuse(self) -> None:
        self._send(
            HTTPStatus.METHOD_NOT_ALLOWED,
            b"the inspector is read-only\n",
            "text/plain; charset=utf-8",
            headers={"Allow": "GET, HEAD"},
        )

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

    def _route(self, route: str, query: dict[str, str]) -> None:
        view = self.server.view
        routes: list[tuple[str, Callable[[re.Match[str]], None]]] = [
            (r"/", lambda m: self._html(200, pages.index(view, query))),
            (rf"/runs/{_RUN}", lambda m: self._html(200, pages.run_page(view, m["run"], query))),
            (
                rf"/runs/{_RUN}/steps/(?P<step>-?\d+)",
                lambda m: self._html(200, pages.step_page(view, m["run"], int(m["step"]))),
            ),
            (
                rf"/runs/{_RUN}/diff",
                lambda m: self._html(200, pages.diff_page(view, m["run"], query)),
            ),
            (rf"/runs/{_RUN}/blobs/(?P<digest>[0-9a-f]+)", self._blob),
            (r"/static/(?P<name>[a-z.]+)", self._static),
        ]
        for pattern, handle in routes:
            match = re.fullmatch(pattern, route)
            if match:
                handle(match)
                return
        self._error(HTTPStatus.NOT_FOUND, f"no page at {route}")

    def _static(self, match: re.Match[str]) -> None:
        name = match["name"]
        if name not in STATIC:
            self._error(HTTPStatus.NOT_FOUND, f"no static file {name}")
            return
        data = files("agentckpt.inspector").joinpath("static", name).read_bytes()
        self._send(200, data, STATIC[name], headers={"Cache-Control": "max-age=300"})

    def _blob(self, match: re.Match[str]) -> None:
        digest = match["digest"]
        if not _DIGEST.match(digest):
            self._error(HTTPStatus.NOT_FOUND, "not a sha256 digest")
            return
        rid = as_run_id(match["run"])
        ref = {"$blob": f"sha256:{digest}", "uri": f"db:sha256:{digest}", "size": 0, "codec": ""}
        data = self.server.view.store.get_blob(rid, ref)
        content = sniff(data)
        # An attachment with nosniff and a sandbox: never rendered as a page of this origin.
        self._send(
            200,
            data,
            content.content_type,
            headers={
                "Content-Disposition": (
                    f'attachment; filename="{digest[:16]}.{content.extension}"'
                ),
                "Content-Security-Policy": "default-src 'none'; sandbox",
            },
        )
