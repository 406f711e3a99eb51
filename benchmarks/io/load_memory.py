"""Peak memory of loading a big pool: subset2evaluate JSONL and a long Parquet table, old readers vs new.

Issue 12 (scale), readers that stream. Target: loading a 1M-item x 12-system subset2evaluate JSONL
peaks at <= 4 GB RSS.

The script writes (into a temporary folder, or ``--dir``) a synthetic subset2evaluate JSONL of
``--items`` items x ``--systems`` systems and the same data as a long table in Parquet (one row
per item and system: item_id, system, output, input, reference, domain, human, chrF). Texts are
``--min-words``..``--max-words`` words drawn from a seeded vocabulary of 5,000 pseudo-words (mean
about 5.5 letters), so each output, source and reference is a distinct string of about 250
characters; ``human`` is missing for a tenth of the items and ``chrF`` for a few cells. Then each
reader loads each file in a fresh Python process, alone, and the parent reports:

- ``time``: seconds of the load call (the child's imports are not counted);
- ``peak``: the child's peak RSS (``VmHWM`` of ``/proc/self/status``, as ``ru_maxrss`` would be but
  without the parent's RSS that Linux carries into ``ru_maxrss`` across the child's exec);
- ``held``: the child's RSS after the load, with the pool alive (what stays);
- ``base``: the child's RSS before the load (Python, numpy, evalsift, pyarrow imported);
- ``peak B/item``: peak RSS divided by the number of items; ``peak-base B/item`` without the base;
- ``old/new``: the old reader's peak over the new one's, measured in the same run.

``new`` is ``evalsift.io.read_s2e_jsonl`` / ``read_table`` as installed; ``old`` is a copy, kept
below, of the readers before issue 12 (the whole file read and decoded, then split by
``io.StringIO``; every parsed record kept, ``tgt`` and ``scores`` included, and frozen again by the
Pool; Parquet read whole, through ``read_bytes`` and ``Table.to_pylist()``: one dict per row).

The old readers need several times the file's size (the JSONL file alone is ~3.5 GB at 1M x 12),
so a child whose RSS passes ``--cap-gb`` (default 10) is stopped and reported as "> cap". To still
print a measured old/new ratio, both readers also run on the first ``--compare-items`` items
(default 100,000) of the same data.

``floor`` is what the pool cannot do without: the sum of ``sys.getsizeof`` of the distinct strings
it holds (outputs, sources, references, item ids, systems and domain names), and next to it the
numbers (score matrices, 8 bytes per cell) and tuple slots (8 bytes per reference to a string).

    python benchmarks/io/load_memory.py [--items 1000000] [--systems 12] [--dir DIR] [--compare-items 100000]
                                     [--cap-gb 10] [--formats jsonl,parquet] [--out bench-out/load_memory.json]

Generating the 1M x 12 files takes a few minutes and ~4 GB of disk (JSONL) plus the Parquet file;
with ``--dir`` they are kept and reused by later runs with the same options.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import io
import json
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _runner
from _runner import write_json  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
if importlib.util.find_spec("evalsift") is None:
    sys.path.insert(0, str(REPO / "src"))

GB = 1e9
DOMAINS = ("news", "social", "speech", "literary")


# ------------------------------------------------------------------------------------- the data
def _vocabulary(rng: np.random.Generator, size: int = 5000) -> list[str]:
    letters = np.array(list("etaoinshrdlcumwfgypbvkjxqz"))
    p = np.array([12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4, 2.2, 2.0, 2.0, 1.9,
                  1.5, 1.0, 0.8, 0.2, 0.2, 0.1, 0.1])
    lengths = np.clip(rng.poisson(5.5, size), 1, 14)
    return ["".join(rng.choice(letters, k, p=p / p.sum())) for k in lengths]


class _Texts:
    """Seeded texts of min..max words from the vocabulary."""

    def __init__(self, rng: np.random.Generator, lo: int, hi: int) -> None:
        self.rng, self.lo, self.hi = rng, lo, hi
        self.vocab = _vocabulary(rng)

    def make(self, count: int) -> list[str]:
        lengths = self.rng.integers(self.lo, self.hi + 1, count)
        words = self.rng.integers(0, len(self.vocab), int(lengths.sum())).tolist()
        v, out, at = self.vocab, [], 0
        for k in lengths.tolist():
            out.append(" ".join([v[w] for w in words[at:at + k]]))
            at += k
        return out


def generate(folder: Path, items: int, systems: int, lo: int, hi: int, seed: int) -> dict[str, Any]:
    """Write ``items.jsonl`` (subset2evaluate) and ``table.parquet`` (long table) into ``folder``; return
    the manifest (sizes, floor). Reuses the files when the manifest matches."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    want = {"items": items, "systems": systems, "min_words": lo, "max_words": hi, "seed": seed, "version": 1}
    manifest = folder / "manifest.json"
    if manifest.is_file():
        old = json.loads(manifest.read_text())
        if {k: old.get(k) for k in want} == want and (folder / "items.jsonl").is_file() \
                and (folder / "table.parquet").is_file():
            return old
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    texts = _Texts(rng, lo, hi)
    names = [f"sys{j:02d}" for j in range(systems)]
    schema = pa.schema([("item_id", pa.string()), ("system", pa.string()), ("output", pa.string()),
                        ("input", pa.string()), ("reference", pa.string()), ("domain", pa.string()),
                        ("human", pa.float64()), ("chrF", pa.float64())])
    floor_text = sum(map(sys.getsizeof, names)) + sum(map(sys.getsizeof, DOMAINS))
    slots = 0
    t0 = time.perf_counter()
    chunk = 20_000
    with open(folder / "items.jsonl", "w", encoding="utf-8") as f, \
            pq.ParquetWriter(folder / "table.parquet", schema) as writer:
        for start in range(0, items, chunk):
            n = min(chunk, items - start)
            src, ref, outs = texts.make(n), texts.make(n), texts.make(n * systems)
            quality = rng.normal(0, 1, systems)
            human = np.round(np.clip(50 + 15 * (quality[None, :] + rng.normal(0, 1, (n, systems))), 0, 100), 1)
            human[rng.random(n) < 0.1] = np.nan                       # a tenth of the items not judged
            chrf = np.round(np.clip(45 + 8 * quality[None, :] + rng.normal(0, 10, (n, systems)), 0, 100), 2)
            chrf[rng.random((n, systems)) < 0.02] = np.nan            # a few cells without the metric
            dom = rng.integers(0, len(DOMAINS), n).tolist()
            cols: dict[str, list[Any]] = {c: [] for c in schema.names}
            lines = []
            for k in range(n):
                i = start + k
                row_out = outs[k * systems:(k + 1) * systems]
                h, c = human[k].tolist(), chrf[k].tolist()
                scores = {s: {**({} if math.isnan(h[j]) else {"human": h[j]}),
                              **({"chrF": c[j]} if not math.isnan(c[j]) else {"chrF": None})}
                          for j, s in enumerate(names)}
                rec = {"i": i, "src": src[k], "ref": ref[k], "domain": DOMAINS[dom[k]],
                       "tgt": dict(zip(names, row_out)), "scores": scores}
                lines.append(json.dumps(rec, ensure_ascii=False))
                iid = str(i)
                floor_text += sys.getsizeof(iid) + sys.getsizeof(src[k]) + sys.getsizeof(ref[k])
                floor_text += sum(map(sys.getsizeof, row_out))
                for j, s in enumerate(names):
                    cols["item_id"].append(iid)
                    cols["system"].append(s)
                    cols["output"].append(row_out[j])
                    cols["input"].append(src[k])
                    cols["reference"].append(ref[k])
                    cols["domain"].append(DOMAINS[dom[k]])
                    cols["human"].append(None if math.isnan(h[j]) else h[j])
                    cols["chrF"].append(None if math.isnan(c[j]) else c[j])
            f.write("\n".join(lines) + "\n")
            writer.write_table(pa.Table.from_pydict(cols, schema=schema))
            print(f"\r  generating: {start + n:,} / {items:,} items", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    # tuple slots the pool must hold: ids, inputs, one reference column, domain, _record (s2e), outputs
    slots = items * (systems + 5)
    out = {**want, "seconds": round(time.perf_counter() - t0, 1),
           "jsonl_bytes": (folder / "items.jsonl").stat().st_size,
           "parquet_bytes": (folder / "table.parquet").stat().st_size,
           "floor_strings": floor_text, "score_bytes": items * systems * 8 * 2, "slot_bytes": slots * 8}
    manifest.write_text(json.dumps(out, indent=1))
    return out


def prefix(src: Path, dst: Path, items: int, systems: int) -> None:
    """The first ``items`` items of ``src``'s files into ``dst`` (same data, smaller)."""
    import pyarrow.parquet as pq

    dst.mkdir(parents=True, exist_ok=True)
    with open(src / "items.jsonl", "rb") as f, open(dst / "items.jsonl", "wb") as g:
        for _, line in zip(range(items), f):
            g.write(line)
    pf = pq.ParquetFile(src / "table.parquet")
    with pq.ParquetWriter(dst / "table.parquet", pf.schema_arrow) as w:
        left = items * systems
        for batch in pf.iter_batches(batch_size=1 << 16):
            if left <= 0:
                break
            batch = batch.slice(0, min(left, batch.num_rows))
            w.write_batch(batch)
            left -= batch.num_rows


# ------------------------------------------------------------------------ the readers before issue 12
def _old_iter_jsonl(path: Path):
    """iter_jsonl before issue 12: the whole file read, decoded, then split by io.StringIO."""
    from evalsift.errors import DataError
    from evalsift.io._common import read_text

    text = read_text(path)
    for lineno, line in enumerate(io.StringIO(text, newline=None), 1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}: line {lineno} is not valid JSON ({e.msg})") from None


def old_read_s2e_jsonl(path: Path):
    """read_s2e_jsonl before issue 12 (validation and errors as there; all records kept whole)."""
    from evalsift.errors import DataError
    from evalsift.io._common import nan_matrix, to_float
    from evalsift.io.s2e import _check_record
    from evalsift.pool import Pool

    records, lines, ids, seen = [], [], [], {}
    for lineno, rec in _old_iter_jsonl(path):
        _check_record(rec, path, lineno)
        iid = str(rec["i"]) if rec.get("i") is not None else str(len(records))
        if iid in seen:
            raise DataError(f"{path}: line {lineno}: item id {iid!r} already used on line {seen[iid]}")
        seen[iid] = lineno
        records.append(rec), lines.append(lineno), ids.append(iid)
    systems = list(dict.fromkeys(s for r in records for s in [*r["tgt"], *(r.get("scores") or {})]))
    col = {s: j for j, s in enumerate(systems)}
    mats: dict[str, np.ndarray] = {}
    for i, rec in enumerate(records):
        for s, per_metric in (rec.get("scores") or {}).items():
            for m, v in (per_metric or {}).items():
                if m not in mats:
                    mats[m] = nan_matrix(len(records), len(systems))
                mats[m][i, col[s]] = to_float(v)
    refs = [r.get("ref") for r in records]
    references: dict[str, list[Any]] = {}
    if any(isinstance(r, str) for r in refs):
        references["ref"] = [r if isinstance(r, str) else None for r in refs]
    width = max((len(r) for r in refs if isinstance(r, list)), default=0)
    for k in range(width):
        references[f"ref_{k}"] = [r[k] if isinstance(r, list) and k < len(r) else None for r in refs]
    extra = list(dict.fromkeys(k for r in records for k in r if k not in ("i", "src", "ref", "tgt", "scores")))
    metadata: dict[str, list[Any]] = {f: [r.get(f) for r in records] for f in extra}
    metadata["_record"] = records
    return Pool(item_ids=ids, inputs=[r["src"] for r in records], systems=systems,
                outputs={s: [r["tgt"].get(s) for r in records] for s in systems}, scores=mats,
                human_metrics={"human"} & set(mats), references=references, metadata=metadata, name=str(path))


def old_read_table_parquet(path: Path):
    """read_table on Parquet before issue 12: read_bytes, pq.read_table, to_pylist (one dict per row),
    then the row-wise column typing, index and fill."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evalsift.io._common import nan_matrix, read_bytes, to_float
    from evalsift.pool import Pool

    records = pq.read_table(pa.BufferReader(read_bytes(path))).to_pylist()
    rows = records
    required, item_fields = ("item_id", "system", "output"), ("input", "reference", "domain", "doc", "cost")
    cols = list(dict.fromkeys(k for r in rows for k in r))
    where = [f"row {k + 1}" for k in range(len(rows))]

    def kind(v: Any) -> str:
        try:
            x = to_float(v)
        except (TypeError, ValueError):
            return "text"
        return "missing" if math.isnan(x) else "number"

    metrics, meta = [], []
    for c in [c for c in cols if c not in required and c not in item_fields]:
        bad = [(k, w) for k, (r, w) in enumerate(zip(rows, where)) if kind(r.get(c)) == "text"]
        (meta if bad else metrics).append(c)
    first, items, systems = {}, {}, {}
    for r, w in zip(rows, where):
        key = (str(r["item_id"]), str(r["system"]))
        first[key] = w
        items.setdefault(key[0], len(items))
        systems.setdefault(key[1], len(systems))
    n, names = len(items), list(systems)
    outputs: dict[str, list[Any]] = {s: [None] * n for s in names}
    scores = {m: nan_matrix(n, len(names)) for m in metrics}
    fields: dict[str, list[Any]] = {f: [None] * n for f in [*item_fields, *meta]}
    for r in rows:
        i, j = items[str(r["item_id"])], systems[str(r["system"])]
        outputs[names[j]][i] = None if r.get("output") is None else str(r["output"])
        for m in metrics:
            scores[m][i, j] = to_float(r.get(m))
        for f, col in fields.items():
            if col[i] is None and r.get(f) is not None:
                col[i] = r[f]
    cost, reference, inputs = fields.pop("cost"), fields.pop("reference"), fields.pop("input")
    metadata = {f: col for f, col in fields.items() if any(v is not None for v in col)}
    if any(c is not None for c in cost):
        metadata["cost"] = [to_float(c) for c in cost]
    human = {m for m in metrics if m == "human" or m.startswith("human_")}
    return Pool(item_ids=list(items), inputs=inputs, systems=names, outputs=outputs, scores=scores,
                human_metrics=human, references={"ref": reference} if any(v is not None for v in reference) else {},
                metadata=metadata, name=str(path))


# -------------------------------------------------------------------------------------- the child
def _status(pid: int | str = "self") -> dict[str, int]:
    """VmRSS and VmHWM of a process in bytes (Linux); {} elsewhere."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key, value = line.split(":")
                    out[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out


def child(fmt: str, reader: str, path: str) -> None:
    import evalsift.io  # noqa: F401  (imports before the baseline)
    if fmt == "parquet":
        import pyarrow.parquet  # noqa: F401
    gc.collect()
    base = _status().get("VmRSS", 0)
    t0 = time.perf_counter()
    if reader == "new":
        from evalsift.io import read_s2e_jsonl, read_table
        pool = read_s2e_jsonl(path) if fmt == "jsonl" else read_table(path)
    else:
        pool = old_read_s2e_jsonl(Path(path)) if fmt == "jsonl" else old_read_table_parquet(Path(path))
    seconds = time.perf_counter() - t0
    gc.collect()
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec, so it would count the parent's RSS at fork
    peak = _status().get("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "peak": peak, "held": _status().get("VmRSS", 0), "base": base,
                      "items": pool.n_items, "systems": pool.n_systems,
                      "outputs": sum(len(pool.outputs[s]) - pool.outputs[s].count(None) for s in pool.systems)}))


def run_child(fmt: str, reader: str, path: Path, cap: float) -> dict[str, Any]:
    """Load ``path`` in a fresh process; stop it (SIGKILL, by its pid) if its RSS passes ``cap`` bytes."""
    cmd = [sys.executable, __file__, "--child", fmt, reader, str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    seen, capped = 0, False
    while proc.poll() is None:
        rss = _status(proc.pid).get("VmRSS", 0)
        seen = max(seen, rss)
        if rss > cap:
            os.kill(proc.pid, signal.SIGKILL)
            capped = True
            break
        time.sleep(0.05)
    out, err = proc.communicate()
    if capped:
        return {"capped": True, "peak": seen}
    if proc.returncode != 0:
        return {"failed": err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}", "peak": seen}
    return json.loads(out.strip().splitlines()[-1])


# -------------------------------------------------------------------------------------- the report
def _row(fmt: str, reader: str, items: int, res: dict[str, Any], new_peak: float | None, cap: float) -> list[str]:
    if res.get("capped"):
        ratio = f">= {cap / new_peak:.1f}" if new_peak else ""
        return [fmt, reader, f"{items:,}", "-", f"> {cap / GB:.1f} (stopped)", "-", "-", f"> {cap / items:,.0f}", "-",
                ratio]
    if "failed" in res:
        return [fmt, reader, f"{items:,}", "-", "failed: " + res["failed"][:60], "-", "-", "-", "-", "-"]
    ratio = f"{res['peak'] / new_peak:.2f}" if new_peak and reader == "old" else ""
    return [fmt, reader, f"{items:,}", f"{res['seconds']:.1f}", f"{res['peak'] / GB:.2f}", f"{res['held'] / GB:.2f}",
            f"{res['base'] / GB:.2f}", f"{res['peak'] / items:,.0f}", f"{(res['peak'] - res['base']) / items:,.0f}", ratio]


def _table(rows: list[list[str]], head: list[str]) -> str:
    width = [max(len(r[k]) for r in [head, *rows]) for k in range(len(head))]
    def line(r: list[str]) -> str:
        return "  ".join(c.rjust(w) if k >= 2 else c.ljust(w) for k, (c, w) in enumerate(zip(r, width)))
    return "\n".join([line(head), "  ".join("-" * w for w in width), *map(line, rows)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=1_000_000)
    ap.add_argument("--systems", type=int, default=12)
    ap.add_argument("--min-words", type=int, default=20)
    ap.add_argument("--max-words", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dir", type=Path, default=None, help="where to write (and reuse) the files; default a temp folder")
    ap.add_argument("--compare-items", type=int, default=100_000,
                    help="also run old and new on this many items (0: no), for a measured old/new ratio")
    ap.add_argument("--cap-gb", type=float, default=10.0, help="stop a child whose RSS passes this (GB)")
    ap.add_argument("--formats", default="jsonl,parquet")
    ap.add_argument("--readers", default="new,old")
    ap.add_argument("--out", type=Path, default=REPO / "bench-out" / "load_memory.json")
    ap.add_argument("--child", nargs=3, metavar=("FMT", "READER", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    formats, readers = args.formats.split(","), args.readers.split(",")
    cap = args.cap_gb * GB
    tmp = None
    if args.dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="evalsift-load-memory-")
        root = Path(tmp.name)
    else:
        root = args.dir
    try:
        full = root / f"s2e-{args.items}x{args.systems}-w{args.min_words}-{args.max_words}-seed{args.seed}"
        print(f"data: {full}", file=sys.stderr)
        man = generate(full, args.items, args.systems, args.min_words, args.max_words, args.seed)
        sizes = [(args.items, full)]
        if 0 < args.compare_items < args.items:
            small = root / f"{full.name}-first{args.compare_items}"
            if not (small / "table.parquet").is_file():
                prefix(full, small, args.compare_items, args.systems)
            sizes.insert(0, (args.compare_items, small))
        rows, results = [], []
        for items, folder in sizes:
            for fmt in formats:
                path = folder / ("items.jsonl" if fmt == "jsonl" else "table.parquet")
                new_peak = None
                for reader in readers:
                    print(f"  {fmt} {reader} {items:,} items ...", file=sys.stderr, flush=True)
                    res = run_child(fmt, reader, path, cap)
                    if reader == "new" and "seconds" in res:
                        new_peak = res["peak"]
                    rows.append(_row(fmt, reader, items, res, new_peak, cap))
                    results.append({"format": fmt, "reader": reader, "items": items, "systems": args.systems, **res})
        n = args.items
        floor = man["floor_strings"]
        print(f"\n{n:,} items x {args.systems} systems, {args.min_words}-{args.max_words} words per text; "
              f"JSONL {man['jsonl_bytes'] / GB:.2f} GB, Parquet {man['parquet_bytes'] / GB:.2f} GB "
              f"(python {platform.python_version()})\n")
        print(_table(rows, ["format", "reader", "items", "time s", "peak GB", "held GB", "base GB", "peak B/item",
                            "peak-base B/item", "old/new"]))
        print(f"\nfloor: strings {floor / GB:.2f} GB ({floor / n:,.0f} B/item; outputs, sources, references, ids); "
              f"+ score matrices {man['score_bytes'] / GB:.2f} GB + tuple slots {man['slot_bytes'] / GB:.2f} GB "
              f"= {(floor + man['score_bytes'] + man['slot_bytes']) / GB:.2f} GB "
              f"({(floor + man['score_bytes'] + man['slot_bytes']) / n:,.0f} B/item)")
        target = next((r for r in results if r["format"] == "jsonl" and r["reader"] == "new" and r["items"] == n
                       and "seconds" in r), None)
        if target is not None and n >= 1_000_000 and args.systems >= 12:
            ok = target["peak"] <= 4 * GB
            print(f"target (1M x 12 JSONL, peak <= 4 GB): {target['peak'] / GB:.2f} GB -> {'met' if ok else 'NOT met'}")
        print(file=sys.stderr)
        write_json(args.out, {"manifest": man, "results": results}, indent=1, file=sys.stderr)
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
