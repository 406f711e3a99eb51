"""Load on the annotation app: N clients judging a large project at once, against this checkout and,
for comparison in the same run, another checkout (``--baseline-src``, e.g. an older commit's ``src``).

    python benchmarks/app/app_load.py                                   # 20,000 items, 50 clients, 1 judgment/s each
    python benchmarks/app/app_load.py --rate 0                          # the same clients without a pause: saturation
    git worktree add /tmp/evalsift-old 595dd6a
    python benchmarks/app/app_load.py --baseline-src /tmp/evalsift-old/src

Each client loops: GET /api/v1/next, then POST /api/v1/judgments with an idempotency key, then waits until
its next judgment is due (``--rate`` judgments per second per client, started at random phases: 50 clients at
1/s offer 50 judgments/s; a late client does not wait) (one kept-alive
HTTP/1.1 connection per client, asyncio streams: a minimal client written here so the load needs no extra
package and costs the machine little). The server is ``evalsift.web.serve`` in its own process on
127.0.0.1 with a fresh store (a fixed pairwise project, overlap 1, made by the same checkout). Prints,
per checkout: judgments/s over the run, the p50/p99/max latency of /next and of the POST, errors; and
the ratios (this / baseline). Afterwards it checks the store: every acknowledged judgment once, no item
judged twice.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[2]

SETUP = """
import sys
sys.path.insert(0, {src!r})
import numpy as np
from evalsift.pool import Pool
from evalsift.store import Store
from evalsift.web import Workspace
n = {n}
pool = Pool(item_ids=[f"i{{k}}" for k in range(n)], inputs=[f"Question {{k}}: what happened at the match?" for k in range(n)],
            systems=["A", "B"], outputs={{"A": [f"Team {{k % 97}} won {{k % 5}}-{{k % 3}} on Sunday." for k in range(n)],
                                         "B": [f"On Sunday team {{k % 97}} beat them {{k % 5}}-{{k % 3}}." for k in range(n)]}},
            name="load")
work = Workspace(Store({db!r}))
pid, admin = work.create_fixed("load", pool, mode="pairwise", a="A", b="B", overlap=1)
tokens = [work.store.add_annotator(pid, f"p{{k}}")[1] for k in range({clients})]
print(" ".join(tokens))
"""

SERVE = """
import sys
sys.path.insert(0, {src!r})
from evalsift.web import serve
serve({db!r}, "127.0.0.1", {port})
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Conn:
    """One kept-alive HTTP/1.1 connection: request() -> (status, JSON body)."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port, self.token = host, port, token
        self.reader = self.writer = None

    async def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        data = b"" if body is None else json.dumps(body).encode()
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAuthorization: Bearer {self.token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode()
        self.writer.write(head + data)
        await self.writer.drain()
        status = int((await self.reader.readline()).split()[1])
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        payload = await self.reader.readexactly(length) if length else b"{}"
        return status, json.loads(payload)


async def client(port: int, token: str, until: float, out: dict, rate: float, phase: float) -> None:
    c = Conn("127.0.0.1", port, token)
    due = time.perf_counter() + (phase / rate if rate > 0 else 0.0)
    while time.perf_counter() < until:
        if rate > 0:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            due += 1.0 / rate
        t0 = time.perf_counter()
        code, a = await c.request("GET", "/api/v1/next")
        out["next"].append(time.perf_counter() - t0)
        if code != 200:
            out["errors"].append(code)
            await asyncio.sleep(0.05)
            continue
        if a.get("done"):
            await asyncio.sleep(0.2)
            continue
        body = {"assignment_id": a["assignment_id"], "verdict": "1", "idempotency_key": f"k{a['assignment_id']}"}
        t0 = time.perf_counter()
        code, r = await c.request("POST", "/api/v1/judgments", body)
        out["post"].append(time.perf_counter() - t0)
        if code == 200:
            out["acked"].append(r["id"])
        else:
            out["errors"].append(code)
    c.writer.close()


async def load(port: int, tokens: list[str], seconds: float, rate: float) -> tuple[dict, float]:
    out: dict = {"next": [], "post": [], "acked": [], "errors": []}
    phases = np.random.default_rng(0).random(len(tokens))
    t0 = time.perf_counter()
    await asyncio.gather(*(client(port, t, t0 + seconds, out, rate, ph) for t, ph in zip(tokens, phases)))
    return out, time.perf_counter() - t0


def run(src: str, n: int, clients: int, seconds: float, rate: float) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="evalsift-load-"))
    db = tmp / "load.db"
    t0 = time.perf_counter()
    setup = subprocess.run([sys.executable, "-c", SETUP.format(src=src, db=str(db), n=n, clients=clients)],
                           capture_output=True, text=True, check=True)
    made = time.perf_counter() - t0
    tokens = setup.stdout.split()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVE.format(src=src, db=str(db), port=port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:  # the server stops whatever happens below
        for _ in range(300):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.1)
        out, wall = asyncio.run(load(port, tokens, seconds, rate))
    finally:
        server.terminate()
        server.wait(30)
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT id, item_id FROM judgments").fetchall()
    items = [r[1] for r in rows]
    ms = lambda xs, q: 1000 * float(np.quantile(xs, q)) if xs else float("nan")  # noqa: E731
    res = {"src": src, "items": n, "clients": clients, "rate_per_client": rate, "seconds": round(wall, 2), "project_made_s": round(made, 1),
           "judgments": len(out["acked"]), "judgments_per_s": round(len(out["acked"]) / wall, 1),
           "next_ms": {"p50": round(ms(out["next"], 0.5), 1), "p99": round(ms(out["next"], 0.99), 1),
                       "max": round(ms(out["next"], 1.0), 1)},
           "post_ms": {"p50": round(ms(out["post"], 0.5), 1), "p99": round(ms(out["post"], 0.99), 1),
                       "max": round(ms(out["post"], 1.0), 1)},
           "errors": {str(k): out["errors"].count(k) for k in sorted(set(out["errors"]))},
           "stored": len(rows), "acked_all_stored_once": sorted(out["acked"]) == sorted(r[0] for r in rows),
           "items_judged_twice": len(items) - len(set(items))}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=20000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rate", type=float, default=1.0, help="judgments per second per client (0: no pause)")
    ap.add_argument("--baseline-src", help="another checkout's src folder, run the same way for comparison")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    results = [run(str(HERE / "src"), args.items, args.clients, args.seconds, args.rate)]
    if args.baseline_src:
        results.append(run(os.path.abspath(args.baseline_src), args.items, args.clients, args.seconds, args.rate))
    for r in results:
        print(f"{r['src']}: {r['judgments_per_s']} judgments/s ({r['judgments']} in {r['seconds']} s); /next p50 "
              f"{r['next_ms']['p50']} ms p99 {r['next_ms']['p99']} ms max {r['next_ms']['max']} ms; POST p50 "
              f"{r['post_ms']['p50']} ms p99 {r['post_ms']['p99']} ms; errors {r['errors']}; every ack stored once: "
              f"{r['acked_all_stored_once']}; items judged twice: {r['items_judged_twice']}")
    if len(results) == 2:
        new, old = results
        print(f"ratio (this / baseline): judgments/s {new['judgments_per_s'] / max(old['judgments_per_s'], 1e-9):.1f}x; "
              f"/next p99 {new['next_ms']['p99'] / old['next_ms']['p99']:.3f}x")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
