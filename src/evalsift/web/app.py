"""The annotation app: FastAPI, server-rendered Jinja2 pages (autoescaped), our own small JS and CSS.

Pages: ``/a/{token}`` (an annotator's page, from the link ``annotate add-annotator`` prints) and
``/admin/{project}`` (the live decision, per-annotator progress and agreement; ``project`` is the id or
the name); every page links its icon (``/static/favicon.svg``, also served as ``/favicon.ico``), so no
page asks for a missing resource. The admin page asks for the project's admin token once and keeps it in an HttpOnly cookie,
so the token never sits in a URL: the link ``annotate new`` prints carries it after ``#`` (a fragment
never leaves the browser; the page signs in with it and removes it from the address bar). Old links
with ``?token=`` still sign in, then redirect to the address without it. The cookie holds an HMAC of the
stored token hash under a key the store keeps (:meth:`~evalsift.store.Store.admin_cookie`), never the
token; ``annotate rotate-admin`` / ``revoke-admin`` end it at once, also in a server already running.

JSON API (documented in ``docs/annotation.md``), used by the pages and by any other client:

- ``GET /api/v1/next`` -- ``Authorization: Bearer <annotator token>``: the next assignment, leased
  to you (the one you hold, if any), or ``{"done": true, "final": ..., "reason": ...}``;
- ``POST /api/v1/judgments`` -- same header; body ``{"assignment_id", "verdict": "1"|"2"|"0"}`` (an
  arena battle also ``"bothbad"``) or ``{"assignment_id", "score": x}`` or ``{"assignment_id", "skip": true}``,
  with optional ``comment`` and ``idempotency_key``; answers 200 ``{"id", "stored", "progress"}`` only once
  the judgment is committed (after a vote in an arena that reveals them, ``reveal``: the battle's models, or
  ``{"withheld": why}`` when the person may be shown those outputs again: :func:`~evalsift.web.arena.reveal_vote`);
- ``POST /api/v1/undo`` -- same header: withdraws your latest judgment and gives its item back;
- ``GET /api/v1/projects/{project}/status`` -- ``Authorization: Bearer <admin token>``.

Status codes: 401 (no or unknown token), 403 (not yours), 404, 409 (a conflict with what is stored:
an idempotency key reused with another answer or after its judgment was undone, a second answer to an
assignment), 404 (no such assignment: ids are ASCII digits from 1), 408 (the request's headers or body
came too slowly), 413 (a body over :data:`MAX_BODY` bytes), 422 (a malformed body or answer, or one that
gives two answers -- a verdict and ``skip: true``, a verdict and a score; the ``field`` names what, the
message names values as JSON writes them -- ``null``, ``true``; a score is a JSON number), 503 with ``Retry-After`` (the store was locked by another writer
too long, or its file was deleted or replaced under the server -- then the server logs it and writes
nothing until restarted; nothing was written, send again), 507 (the disk is full; nothing was written).

Security: one annotator's token cannot read or answer another's assignment (403); admin pages and
the status API need the project's admin token; every input, output and comment is rendered escaped
(Jinja2 autoescape; the page's JS only ever sets ``textContent``); every response carries a
Content-Security-Policy (no inline script, no framing), ``X-Content-Type-Options: nosniff`` and
``Referrer-Policy: no-referrer``.
"""

import json
import re
import socket
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from ..errors import (ConflictError, DataError, EvalsiftError, StoreBusyError, StoreFullError, StoreMovedError,
                      missing_dependency)
from ..io._common import plain_json as _plain
from ..store import Store
from ..store.store import INT64
from .arena import reveals
from .work import Workspace, json_text

HERE = Path(__file__).resolve().parent
MAX_BODY = 64 * 1024
"""The largest request body the API takes (bytes); a larger one is answered 413."""
DRAIN_BODY = 1024 * 1024
"""A refused body up to this size is read and dropped before the 413, so the client reads the answer
instead of a reset connection (the kernel resets a connection closed with unread data in it)."""
HEADER_DEADLINE = 10.0
"""Seconds a client has to send a request's headers, from the connection (or the previous answer) on;
a slower one is answered 408 and closed, so trickling clients cannot hold connections open."""
BODY_DEADLINE = 20.0
"""Seconds a client has to send a request's body once its headers arrived (408 past it)."""
WEB_BUSY_TIMEOUT = 5.0
"""How long a request waits for another writer's lock before answering 503 (seconds)."""
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


class _BadRequest(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.extra = status, extra


def create_app(db: str | Path, *, busy_timeout: float = WEB_BUSY_TIMEOUT) -> Any:
    """The FastAPI application serving the store at ``db``."""
    try:
        from fastapi import FastAPI, Request
        from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse
        from fastapi.staticfiles import StaticFiles
        from jinja2 import Environment, FileSystemLoader, select_autoescape
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise missing_dependency(e.name or "fastapi", "web", "The annotation app") from None

    store = Store(db, busy_timeout=busy_timeout)
    work = Workspace(store)
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=select_autoescape(["html"]))
    app = FastAPI(title="evalsift annotation", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.state.store, app.state.work = store, work

    @app.middleware("http")
    async def guard(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            if length.isdigit() and int(length) <= DRAIN_BODY:
                import anyio

                with anyio.move_on_after(BODY_DEADLINE):
                    async for _ in request.stream():  # read and drop: see DRAIN_BODY
                        pass
            response = JSONResponse({"error": f"the body is larger than {MAX_BODY} bytes", "field": "body"},
                                    status_code=413)
        else:
            response = await call_next(request)
        for k, v in SECURITY_HEADERS.items():
            response.headers.setdefault(k, v)
        return response

    def page(name: str, code: int = 200, **ctx: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**ctx), status_code=code,
                            headers={"Cache-Control": "no-store"})

    def error(status: int, message: str, **extra: Any) -> JSONResponse:
        headers = {"Retry-After": "1"} if status == 503 else None
        return JSONResponse({"error": message, **extra}, status_code=status, headers=headers)

    def failure(e: Exception) -> JSONResponse:
        """The answer for an error a store or workspace call raised."""
        if isinstance(e, _BadRequest):
            return error(e.status, str(e), **e.extra)
        if isinstance(e, PermissionError):
            return error(403, str(e))
        extra = {k: v for k, v in e.to_dict().items() if k in ("field", "item_id", "system")} \
            if isinstance(e, EvalsiftError) else {}
        if isinstance(e, StoreMovedError):  # the operator must act: say it where they look, not only to the client
            print(f"evalsift serve: error: {e}", file=sys.stderr, flush=True)
            return error(503, str(e), **extra)
        if isinstance(e, StoreFullError):
            print(f"evalsift serve: error: {e}", file=sys.stderr, flush=True)
            return error(507, str(e), **extra)
        if isinstance(e, StoreBusyError):
            return error(503, str(e), **extra)
        if isinstance(e, ConflictError):
            return error(409, str(e), **extra)
        return error(422, str(e), **extra)

    def bearer(request: Request) -> str | None:
        auth = request.headers.get("authorization", "")
        return auth[7:].strip() if auth.lower().startswith("bearer ") else None

    def annotator(request: Request) -> dict[str, Any]:
        who = store.annotator_by_token(bearer(request))
        if who is None:
            raise _BadRequest(401, "missing, unknown or revoked annotator token (Authorization: Bearer TOKEN)")
        return who

    def find_project(ref: str):
        try:
            return store.project(ref)
        except DataError:
            return None

    def cookie_name(project_id: int) -> str:
        return f"evalsift_admin_{project_id}"

    def signed_in(request: Request, response, project_id: int, token: str):
        # the cookie holds an HMAC of the stored token hash under the store's key, never the token: it ends when
        # the token is rotated or revoked (annotate rotate-admin / revoke-admin), in every server on the file
        response.set_cookie(cookie_name(project_id), store.admin_cookie(project_id) or "", httponly=True,
                            samesite="strict", path="/")
        return response

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return page("index.html")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon():  # every page links /static/favicon.svg; this answers a browser that asks by the old name
        return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml",
                            headers={"Cache-Control": "max-age=86400"})

    @app.get("/a/{token}", response_class=HTMLResponse)
    def annotator_page(token: str) -> HTMLResponse:
        who = store.annotator_by_token(token)
        if who is None:
            return page("forbidden.html", 403, what="This link is not valid (it may have been revoked: ask for a new one).")
        project = store.project(who["project_id"])
        return page("annotate.html", token=token, annotator=who["name"], project=project.name, kind=project.kind,
                    arena=bool(project.settings.get("arena")), reveal=reveals(project),
                    scale=project.settings.get("scale"), question=project.settings.get("question"),
                    graded=bool(project.settings.get("graded")), guidelines=project.settings.get("guidelines"),
                    adjudicator=who.get("role") == "adjudicator")

    @app.get("/admin/{ref:path}", response_class=HTMLResponse)
    def admin_page(ref: str, request: Request):
        project = find_project(ref)
        if project is None:
            return page("forbidden.html", 404, what="There is no such project.")
        query_token = request.query_params.get("token")
        if query_token is not None:  # an old link: sign in, then drop the token from the address
            if not store.is_admin(project.id, query_token):
                return page("admin_login.html", 403, project=project.name, path=_admin_path(ref),
                            message="That admin token is not this project's.")
            return signed_in(request, RedirectResponse(_admin_path(ref), status_code=303), project.id, query_token)
        if not store.is_admin_cookie(project.id, request.cookies.get(cookie_name(project.id))):
            return page("admin_login.html", 200, project=project.name, path=_admin_path(ref), message=None)
        return page("admin.html", status=_plain(work.status(project.id)))

    @app.post("/admin/{ref:path}/login")
    async def admin_login(ref: str, request: Request):
        project = find_project(ref)
        if project is None:
            return page("forbidden.html", 404, what="There is no such project.")
        try:
            body = (await _read_body(request)).decode("utf-8", "replace")
        except _BadRequest as e:
            return failure(e)
        token = (parse_qs(body).get("token") or [""])[0].strip()
        if not store.is_admin(project.id, token):
            return page("admin_login.html", 403, project=project.name, path=_admin_path(ref),
                        message="That admin token is not this project's.")
        return signed_in(request, RedirectResponse(_admin_path(ref), status_code=303), project.id, token)

    @app.get("/api/v1/next")
    async def next_item(request: Request) -> JSONResponse:
        try:
            out = await _in_thread(lambda: work.next_for(annotator(request)))
        except Exception as e:  # noqa: BLE001 - every error becomes one JSON answer
            if not isinstance(e, (_BadRequest, PermissionError, EvalsiftError)):
                raise
            return failure(e)
        return JSONResponse(_plain(out), headers={"Cache-Control": "no-store"})

    @app.post("/api/v1/judgments")
    async def post_judgment(request: Request) -> JSONResponse:
        try:
            who = await _in_thread(annotator, request)
            body = await _read_json(request)
            aid = _assignment_id(body)
            if await _in_thread(store.assignment, aid) is None:
                raise _BadRequest(404, f"no assignment {aid}", field="assignment_id")
            jid = await _in_thread(lambda: work.submit(
                who, aid, answer=body.get("verdict"), score=body.get("score"),
                skip=body.get("skip", False), comment=body.get("comment"), idempotency_key=body.get("idempotency_key")))
            out: dict[str, Any] = {"id": jid, "stored": True}
            if body.get("skip") is not True:  # only once the vote is stored: the battle's models, if the arena shows them
                reveal = await _in_thread(lambda: work.reveal(who, aid, body.get("verdict")))
                if reveal is not None:
                    out["reveal"] = reveal
            out["progress"] = await _in_thread(lambda: work.progress(who["project_id"], who["id"]))
        except Exception as e:  # noqa: BLE001
            if not isinstance(e, (_BadRequest, PermissionError, EvalsiftError, ValueError, TypeError)):
                raise
            return failure(e)
        return JSONResponse(_plain(out), headers={"Cache-Control": "no-store"})

    @app.post("/api/v1/undo")
    async def undo(request: Request) -> JSONResponse:
        try:
            out = await _in_thread(lambda: work.undo(annotator(request)))
        except Exception as e:  # noqa: BLE001
            if not isinstance(e, (_BadRequest, PermissionError, EvalsiftError)):
                raise
            return failure(e)
        return JSONResponse(_plain(out), headers={"Cache-Control": "no-store"})

    @app.get("/api/v1/projects/{ref:path}/status")
    def project_status(ref: str, request: Request) -> JSONResponse:
        project = find_project(ref)
        if project is None:
            return error(404, f"no project {ref!r}")
        if not store.is_admin(project.id, bearer(request)):
            return error(403, "the status needs the project's admin token (Authorization: Bearer TOKEN)")
        try:
            status = work.status(project.id)
        except StoreBusyError as e:
            return failure(e)
        return JSONResponse(_plain(status), headers={"Cache-Control": "no-store"})

    return app


def _admin_path(ref: str) -> str:
    """The admin page's address for a project name or id, quoted whole (a name may hold '/', '?', '#')."""
    return "/admin/" + quote(str(ref), safe="")


async def _read_body(request) -> bytes:
    """The request body, refusing more than :data:`MAX_BODY` bytes (413) even without a Content-Length,
    and a body still arriving after :data:`BODY_DEADLINE` seconds (408)."""
    import anyio

    chunks, size = [], 0
    try:
        with anyio.fail_after(BODY_DEADLINE):
            async for chunk in request.stream():
                size += len(chunk)
                if size > DRAIN_BODY:
                    break  # too much even to drain: answer now (the client may see the connection reset)
                if size <= MAX_BODY:
                    chunks.append(chunk)
    except TimeoutError:
        raise _BadRequest(408, f"the body did not arrive within {BODY_DEADLINE:g} s", field="body") from None
    if size > MAX_BODY:
        raise _BadRequest(413, f"the body is larger than {MAX_BODY} bytes", field="body")
    return b"".join(chunks)


_ASCII_INT = re.compile(r"-?[0-9]+")


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


async def _read_json(request) -> dict[str, Any]:
    """The body as a JSON object; 422 naming the problem (not JSON, NaN/Infinity, nested too deeply)."""
    body = await _read_body(request)
    try:
        data = json.loads(body, parse_constant=_no_constant)
    except RecursionError:
        raise _BadRequest(422, "the body is nested too deeply", field="body") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise _BadRequest(422, f"the body must be JSON: {{assignment_id, verdict | score | skip, idempotency_key}} "
                               f"({e})", field="body") from None
    if not isinstance(data, dict):
        raise _BadRequest(422, "the body must be a JSON object: {assignment_id, verdict | score | skip, "
                               "idempotency_key}", field="body")
    return data


def _assignment_id(body: dict[str, Any]) -> int:
    """The body's assignment id as an int: a JSON integer or a string of digits within 64-bit range (422 otherwise)."""
    if "assignment_id" not in body:
        raise _BadRequest(422, "the body needs assignment_id", field="assignment_id")
    value = body["assignment_id"]
    if isinstance(value, str) and _ASCII_INT.fullmatch(value.strip()):  # only 0-9: '١٢' is no id
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadRequest(422, f"assignment_id must be an integer (from /api/v1/next), got {json_text(value)}",
                          field="assignment_id")
    if not 1 <= value <= INT64[1]:  # ids start at 1: 0 and negative ids name nothing
        raise _BadRequest(404, f"no assignment {value}", field="assignment_id")
    return value


async def _in_thread(fn, *args, **kwargs):
    """Run a blocking store call off the event loop (SQLite commits wait for the disk)."""
    import anyio

    return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))


def check_port_free(host: str, port: int) -> None:
    """DataError naming the port when something already listens on ``host:port``."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise DataError(f"--host {host}: not an address this machine can listen on ({e})", field="host") from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: only a listener counts as in use
        try:
            s.bind(addr)
            s.listen(1)
        except OSError as e:
            raise DataError(f"--port {port}: cannot listen on {host}:{port} ({e.strerror or e}); another program "
                            "(maybe another evalsift serve) uses it: choose another --port", field="port") from None


def _deadline_protocol():
    """uvicorn's h11 protocol with a deadline for each request's headers (:data:`HEADER_DEADLINE`): uvicorn
    times out idle keep-alive connections but not a client that connects and trickles its headers."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class DeadlineH11Protocol(H11Protocol):
        _header_timer = None

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(HEADER_DEADLINE, self._too_slow)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\n"
                                     b"connection: close\r\ncontent-length: 34\r\n\r\n"
                                     b"the request headers came too slowly")
                self.transport.close()

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            before = self.cycle
            super().handle_events()
            if self.cycle is not before:  # a whole request line and headers arrived
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request's headers get the same deadline

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

    return DeadlineH11Protocol


def server_config(app: Any, host: str, port: int, *, log_level: str = "warning") -> Any:
    """The ``uvicorn.Config`` every evalsift server runs with: h11 with header deadlines, the app's body
    deadline, idle keep-alive connections closed after 5 s."""
    import uvicorn

    return uvicorn.Config(app, host=host, port=port, log_level=log_level, http=_deadline_protocol(),
                          timeout_keep_alive=5)


def serve(db: str | Path, host: str = "127.0.0.1", port: int = 8000, *, log_level: str = "warning") -> None:
    """Run the app with uvicorn until interrupted. The server is registered in the store while it runs;
    when another ``evalsift serve`` already uses the same file, a note says so (both are safe: leases are
    atomic in the store)."""
    try:
        import uvicorn
    except ImportError:  # pragma: no cover
        raise missing_dependency("uvicorn", "web", "The annotation server") from None
    check_port_free(host, port)
    app = create_app(db)
    store: Store = app.state.store
    server_id, others = store.register_server(f"http://{host}:{port}")
    for o in others:
        print(f"note: another evalsift serve (pid {o['pid']} on {o['hostname']}, {o['address']}, since "
              f"{o['started_at']}) uses {db}; both hand out work safely (each lease is one atomic step in the store, "
              "so no item goes to more people than its overlap)", file=sys.stderr)
    try:
        uvicorn.Server(server_config(app, host, port, log_level=log_level)).run()
    finally:
        try:
            store.unregister_server(server_id)
        except EvalsiftError:  # pragma: no cover - the file went away or is locked; the row is pruned next start
            pass
