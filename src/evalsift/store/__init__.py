"""The store: one SQLite file per workspace that keeps projects, items, annotators, assignments,
every judgment and the LLM response cache -- safely.

Safety rules (each one tested in ``tests/test_store.py``):

- **Durable acknowledgements.** The file runs in WAL mode with ``synchronous=FULL``: when
  :meth:`Store.record_judgment` returns, the judgment is committed and survives a crash or
  ``kill -9`` of the process. Nothing is acknowledged before its commit.
- **The file it opened, or nothing.** Every write first checks that the store's path still names the
  file it opened (device and inode) and checks again before its COMMIT: a file deleted or replaced
  under a running process (``rm``, ``mv backup.db work.db``) makes writes fail with StoreMovedError
  (the app's 503, logged) instead of going into an unlinked file that vanishes with the process. A
  full disk is StoreFullError (the app's 507, one ``error:`` line in the CLI), never masked by the
  ROLLBACK that follows a failed COMMIT.
- **One writer at a time, without "database is locked".** Every write is a ``BEGIN IMMEDIATE``
  transaction (it takes the write lock before reading, so two writers never deadlock), and a
  connection waits up to ``busy_timeout`` seconds for the lock.
- **Append-only judgments.** The ``judgments`` table refuses ``UPDATE`` and ``DELETE`` (SQLite
  triggers): a correction is a new judgment.
- **Idempotent submissions.** A judgment may carry an ``idempotency_key``, which names one submission
  of one annotator for one assignment: the same submission sent twice is stored once and both calls
  get the same id; the key sent again with a different answer, or after its judgment was undone, is
  refused (ConflictError, the app's 409: an undone submission is over, a new answer needs a new key),
  and the same key from another annotator or for another assignment is another submission.
- **One answer per assignment; undo is a mark, not a delete.** A second answer to an assignment is
  refused; :meth:`Store.retract_last` withdraws a person's latest judgment (a row in ``retractions``:
  the judgment stays stored, exports show when it was undone) and leases the item back to them.
- **Atomic leases, any number of servers.** :meth:`Store.lease_next` chooses and leases the next unit
  of work in one transaction over the ``units`` queue (each unit's finished judgments and open leases
  are counters kept in the same transactions that change them), so two ``evalsift serve`` processes on
  one file never hand out a unit beyond its overlap, and /next reads a few rows, not the project.
- **Read-only and damaged files.** A file this process may not write opens read-only (read, status and
  export work); a damaged file is named as damaged, with the ``sqlite3 .recover`` step, and nothing is
  written to it. A lock held past ``busy_timeout`` is StoreBusyError: nothing written, try again.
- **Secrets.** Tokens (annotators', the admin's) are stored as sha256 hashes only; every token can be
  revoked or rotated, and the admin page's cookie holds an HMAC of the stored hash under a key the store
  keeps (never the token); the store never sees an LLM API key.
- **Late answers are kept, never counted twice.** A verdict that arrives after its unit already has its
  ``overlap`` people (a lease lapsed, the unit went to someone else, then the first answer came) is
  stored and exported with ``counted: false``; the decision, the arena board and their replays leave it
  out (:class:`OverlapCount`).
- **Versioned schema.** Migrations in :mod:`evalsift.store.schema` are applied in order; a file from
  a newer evalsift is refused instead of being misread.

>>> import tempfile, os
>>> from evalsift.oracle import Judgment
>>> st = Store(os.path.join(tempfile.mkdtemp(), "evalsift.db"))
>>> pid, admin = st.create_project("demo", kind="pairwise", mode="fixed")
>>> j = Judgment(item_id="i1", a="A", b="B", verdict="a", annotator="ann", kind="human")
>>> st.record_judgment(pid, j, idempotency_key="k1") == st.record_judgment(pid, j, idempotency_key="k1")
True
>>> [x.verdict for x in st.judgments(pid)]
['a']
"""

from .schema import LATEST, MIGRATIONS, project_units
from .store import ADJUDICATOR_KIND, DEFAULT_DB, LLMResponseCache, OverlapCount, Project, Store, hash_token

__all__ = ["ADJUDICATOR_KIND", "DEFAULT_DB", "LATEST", "LLMResponseCache", "MIGRATIONS", "OverlapCount", "Project", "Store", "hash_token",
           "project_units"]
