"""The local annotation app: projects people judge in the browser, on top of the store.

- :mod:`evalsift.web.work`: who judges what next (live pairwise projects driven by a Session, fixed
  pairwise and score projects, overlap, leases), and the status of a project;
- :mod:`evalsift.web.app`: the FastAPI app (pages and the JSON API) and :func:`serve`.

The web parts need the ``web`` extra: ``pip install 'evalsift[web]'``.
"""

from .work import Workspace

__all__ = ["Workspace", "create_app", "serve"]


def create_app(db):
    """The FastAPI application for the store at ``db`` (see :mod:`evalsift.web.app`)."""
    from .app import create_app as _create

    return _create(db)


def serve(db, host: str = "127.0.0.1", port: int = 8000, **kw):
    """Run the annotation server (see :mod:`evalsift.web.app`)."""
    from .app import serve as _serve

    return _serve(db, host, port, **kw)
