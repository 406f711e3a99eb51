"""The annotation app: FastAPI, server-rendered Jinja2 pages (autoescaped), our own small JS and CSS.

Pages: ``/a/{token}`` (an annotator's page, from the link ``annotate add-annotator`` prints) and
``/admin/{project}?token=ADMIN`` (the live decision, progress and agreement). JSON API (documented
in ``docs/annotation.md``), used by the pages and by any other client:

- ``GET /api/v1/next`` -- ``Authorization: Bearer <annotator token>``: the next assignment, leased
  to you, or ``{"done": true, "reason": ...}``;
- ``POST /api/v1/judgments`` -- same header; body ``{"assignment_id", "verdict": "1"|"2"|"0"}`` or
  ``{"assignment_id", "score": x}`` or ``{"assignment_id", "skip": true}``, with optional
  ``comment`` and ``idempotency_key``; answers 200 ``{"id": ...}`` only once the judgment is committed;
- ``GET /api/v1/projects/{id}/status`` -- ``Authorization: Bearer <admin token>``.

Security: one annotator's token cannot read or answer another's assignment (403); admin pages and
the status API need the project's admin token; every input, output and comment is rendered
escaped (Jinja2 autoescape; the page's JS only ever sets ``textContent``).
"""


from pathlib import Path
from typing import Any

from ..errors import EvalsiftError, missing_dependency
from ..store import Store
from ..io._common import plain_json as _plain
from .work import Workspace

HERE = Path(__file__).resolve().parent


def create_app(db: str | Path) -> Any:
    """The FastAPI application serving the store at ``db``."""
    try:
        from fastapi import FastAPI, Request
        from fastapi.responses import HTMLResponse, JSONResponse
        from fastapi.staticfiles import StaticFiles
        from jinja2 import Environment, FileSystemLoader, select_autoescape
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise missing_dependency(e.name or "fastapi", "web", "The annotation app") from None

    store = Store(db)
    work = Workspace(store)
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=select_autoescape(["html"]))
    app = FastAPI(title="evalsift annotation", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.state.store, app.state.work = store, work

    def page(name: str, code: int = 200, **ctx: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**ctx), status_code=code,
                            headers={"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                                                                "object-src 'none'",
                                     "Cache-Control": "no-store"})

    def error(status: int, message: str, **extra: Any) -> JSONResponse:
        return JSONResponse({"error": message, **extra}, status_code=status)

    def bearer(request: Request) -> str | None:
        auth = request.headers.get("authorization", "")
        return auth[7:].strip() if auth.lower().startswith("bearer ") else None

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return page("index.html")

    @app.get("/a/{token}", response_class=HTMLResponse)
    def annotator_page(token: str) -> HTMLResponse:
        who = store.annotator_by_token(token)
        if who is None:
            return page("forbidden.html", 403, what="This link is not valid (ask for a new one).")
        project = store.project(who["project_id"])
        return page("annotate.html", token=token, annotator=who["name"], project=project.name, kind=project.kind,
                    scale=project.settings.get("scale"), question=project.settings.get("question"))

    @app.get("/admin/{project_id}", response_class=HTMLResponse)
    def admin_page(project_id: int, token: str = "") -> HTMLResponse:
        if not _project_exists(store, project_id) or not store.is_admin(project_id, token):
            return page("forbidden.html", 403, what="The admin page needs the project's admin token.")
        return page("admin.html", token=token, status=_plain(work.status(project_id)))

    @app.get("/api/v1/next")
    def next_item(request: Request) -> JSONResponse:
        who = store.annotator_by_token(bearer(request))
        if who is None:
            return error(401, "missing or unknown annotator token (Authorization: Bearer TOKEN)")
        return JSONResponse(_plain(work.next_for(who)), headers={"Cache-Control": "no-store"})

    @app.post("/api/v1/judgments")
    async def post_judgment(request: Request) -> JSONResponse:
        who = store.annotator_by_token(bearer(request))
        if who is None:
            return error(401, "missing or unknown annotator token (Authorization: Bearer TOKEN)")
        try:
            body = await request.json()
        except ValueError:
            return error(422, "the body must be JSON: {assignment_id, verdict | score | skip, idempotency_key}")
        if not isinstance(body, dict) or "assignment_id" not in body:
            return error(422, "the body needs assignment_id", field="assignment_id")
        try:
            jid = await _in_thread(work.submit, who, int(body["assignment_id"]), answer=body.get("verdict"),
                                   score=body.get("score"), skip=bool(body.get("skip", False)),
                                   comment=str(body.get("comment") or ""), idempotency_key=body.get("idempotency_key"))
        except PermissionError as e:
            return error(403, str(e))
        except (EvalsiftError, ValueError, TypeError) as e:
            extra = e.to_dict() if isinstance(e, EvalsiftError) else {}
            return error(422, str(e), **{k: v for k, v in extra.items() if k in ("field", "item_id", "system")})
        return JSONResponse({"id": jid, "stored": True})

    @app.get("/api/v1/projects/{project_id}/status")
    def project_status(project_id: int, request: Request) -> JSONResponse:
        if not _project_exists(store, project_id):
            return error(404, f"no project {project_id}")
        if not store.is_admin(project_id, bearer(request)):
            return error(403, "the status needs the project's admin token (Authorization: Bearer TOKEN)")
        return JSONResponse(_plain(work.status(project_id)), headers={"Cache-Control": "no-store"})

    return app


async def _in_thread(fn, *args, **kwargs):
    """Run a blocking store call off the event loop (SQLite commits wait for the disk)."""
    import anyio

    return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))


def _project_exists(store: Store, project_id: int) -> bool:
    try:
        store.project(project_id)
    except EvalsiftError:
        return False
    return True


def serve(db: str | Path, host: str = "127.0.0.1", port: int = 8000, *, log_level: str = "warning") -> None:
    """Run the app with uvicorn until interrupted."""
    try:
        import uvicorn
    except ImportError:  # pragma: no cover
        raise missing_dependency("uvicorn", "web", "The annotation server") from None
    uvicorn.run(create_app(db), host=host, port=port, log_level=log_level)
