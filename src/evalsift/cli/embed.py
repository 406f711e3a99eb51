"""``evalsift embed import | export | cache``: vectors computed elsewhere into the encoder cache, out of it, and a
pool's vectors computed into it -- here or with Ray Data on a Ray cluster (``--backend ray``)."""

from __future__ import annotations

import argparse
import sys

from ..errors import DataError, ParameterError
from ._common import EMBEDDINGS_FORMATS, add_quiet, device_line, device_spec, out_file, positive_int


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``embed import``, ``embed export`` and ``embed cache``."""
    p = sub.add_parser("embed", help="the encoder cache: import precomputed vectors, export, fill it (here or on Ray)")
    add_quiet(p)
    embed_sub = p.add_subparsers(dest="embed_cmd", required=True, metavar="{import,export,cache}")

    imp = embed_sub.add_parser("import", help="store a file's vectors in the cache under an encoder, so later runs "
                                              "with that --encoder find them instead of computing them")
    imp.add_argument("file", metavar="FILE", help=EMBEDDINGS_FORMATS)
    imp.add_argument("--encoder", required=True,
                     help="the encoder that made the vectors (minilm, st:<model or path>): they are stored under its "
                          "cache key; minilm's vectors are 384-d and L2-normalised")
    imp.add_argument("--data", metavar="SPEC", help="the dataset, for files keyed by item_id + system")
    imp.add_argument("--include-refs", action="store_true", help="keep human references as systems (mt-metrics-eval)")
    add_quiet(imp)
    imp.set_defaults(handler=cmd_embed_import)

    exp = embed_sub.add_parser("export", help="embed every distinct output of a dataset (through the cache) and write "
                                              "text_hash + vector")
    exp.add_argument("--data", required=True, metavar="SPEC", help="dataset: a path, 'demo', or a name under "
                                                                   "$EVALSIFT_DATA")
    exp.add_argument("--include-refs", action="store_true", help="keep human references as systems (mt-metrics-eval)")
    exp.add_argument("--encoder", default="minilm",
                     help="text encoder: minilm (offline all-MiniLM-L6-v2), tfidf (no torch), or st:<model or path>")
    _add_backend(exp)
    exp.add_argument("--out", required=True, metavar="FILE", help="FILE.npz or FILE.parquet (written whole or not at "
                                                                  "all)")
    add_quiet(exp)
    exp.set_defaults(handler=cmd_embed_export)

    fill = embed_sub.add_parser("cache", help="embed a dataset's distinct outputs not cached yet and store them in the "
                                              "encoder cache every command reads (writes nothing else); --backend ray "
                                              "spreads the work over a Ray cluster")
    fill.add_argument("--data", required=True, metavar="SPEC", help="dataset: a path, 'demo', or a name under "
                                                                    "$EVALSIFT_DATA")
    fill.add_argument("--include-refs", action="store_true", help="keep human references as systems (mt-metrics-eval)")
    fill.add_argument("--encoder", default="minilm",
                      help="text encoder: minilm (offline all-MiniLM-L6-v2), minilm-onnx, minilm-int8, or st:<model or path> "
                           "(tfidf is never cached: its vectors depend on the whole corpus)")
    _add_backend(fill)
    add_quiet(fill)
    fill.set_defaults(handler=cmd_embed_cache)


def _add_backend(p: argparse.ArgumentParser) -> None:
    """``--backend local|ray``, ``--ray-address``, ``--workers`` and ``--device`` (per worker)."""
    g = p.add_argument_group("where the encoder runs (docs/scale.md)")
    g.add_argument("--backend", default="local", choices=["local", "ray"],
                   help="local: this process; ray: Ray Data batch inference, one encoder per worker (pip install "
                        "'evalsift[ray]'), on the cluster at --ray-address or $RAY_ADDRESS, else on a local runtime "
                        "started and stopped by this command")
    g.add_argument("--ray-address", metavar="ADDR",
                   help="with --backend ray: an existing Ray cluster, e.g. ray://head:10001 or auto")
    g.add_argument("--workers", type=positive_int, metavar="N",
                   help="with --backend ray: encoder workers (default: one per GPU of the cluster when it has GPUs "
                        "and --device allows them, else one per CPU; a local runtime gets N CPUs)")
    # dest worker_device: the main dispatch does not apply it to this process (with Ray, the model runs elsewhere)
    g.add_argument("--device", dest="worker_device", type=device_spec, default="auto", metavar="auto|cpu|cuda|cuda:N",
                   help="where the encoder runs: auto (a GPU when there is one, else the CPU), cpu, cuda or cuda:N; "
                        "with --backend ray, on each worker (a GPU worker uses the one GPU Ray gives it)")


def cmd_embed_import(args: argparse.Namespace) -> int:
    """``evalsift embed import FILE --encoder NAME``."""
    from ..embed import EmbeddingCache, PrecomputedEncoder, get_encoder
    from ..io import load

    target = get_encoder(args.encoder)
    if not getattr(target, "cacheable", True):
        raise ParameterError(f"encoder '{args.encoder}' is never cached (its vectors depend on the whole corpus); "
                             "import vectors under a model encoder such as minilm or st:<model>", field="encoder")
    pool = load(args.data, include_refs=args.include_refs) if args.data else None
    source = PrecomputedEncoder.from_file(args.file, pool=pool)
    if target.dim is not None and target.dim != source.dim:
        raise DataError(f"{args.file} holds {source.dim}-d vectors but encoder '{args.encoder}' makes {target.dim}-d "
                        "ones; import them under the encoder that made them", field="vectors")
    cache = EmbeddingCache()
    written = cache.import_vectors(target.cache_key, source.hex_hashes(), source.vector_rows,
                                   progress=not args.quiet)
    if not cache.available:
        raise DataError(f"the embedding cache {cache.path} cannot be written ({cache.disabled_reason}); set "
                        "EVALSIFT_CACHE to a writable folder")
    print(f"imported {written} new vectors ({len(source) - written} already cached) of {len(source)} texts from "
          f"{args.file} under encoder '{args.encoder}' ({target.cache_key}) into {cache.path}", file=sys.stderr)
    return 0


def _backend_opts(args: argparse.Namespace) -> None:
    """Check ``--ray-address`` / ``--workers`` go with ``--backend ray``, and that Ray and Ray Data import (before
    any data is read)."""
    if args.ray_address and args.backend != "ray":
        raise ParameterError("--ray-address needs --backend ray", field="ray_address")
    if args.workers is not None and args.backend != "ray":
        raise ParameterError("--workers needs --backend ray (the local backend is this one process)", field="workers")
    if args.backend == "ray":
        from ..embed.ray_embed import import_ray_data

        import_ray_data()


def _pool_texts(args: argparse.Namespace) -> list[str]:
    """The distinct output texts of ``--data``, in first-seen order."""
    from ..io import load

    pool = load(args.data, include_refs=args.include_refs)
    texts = list(dict.fromkeys(o for s in pool.systems for o in pool.outputs[s] if isinstance(o, str)))
    if not texts:
        raise DataError(f"{args.data}: the data has no output texts to embed", field="output")
    return texts


def _local_device(args: argparse.Namespace):
    """``--device`` as the process default while a local run embeds (what ``--device`` does on other commands)."""
    from . import _device_of

    return _device_of(argparse.Namespace(device=args.worker_device if args.backend == "local" else None))


def _fill(args: argparse.Namespace, texts: list[str]) -> dict:
    """Fill the cache with ``texts``' vectors as the command line asks."""
    from ..embed.ray_embed import fill_cache

    return fill_cache(texts, args.encoder, backend=args.backend, ray_address=args.ray_address,
                      device=args.worker_device, workers=args.workers, progress=not args.quiet)


def _fill_line(info: dict, encoder: str) -> str:
    """One line: what the fill did, where, how fast."""
    if not info["embedded"]:
        where = "nothing to embed"
    elif info["backend"] == "ray":
        where = f"on Ray, {info['workers']} worker{'s' if info['workers'] != 1 else ''} ({info['device']})"
    else:
        where = f"in this process ({info['device']})"
    speed = f", {info['texts_per_s']} texts/s" if info.get("texts_per_s") else ""
    return (f"cached {info['embedded']} new vectors ({info['cached_before']} already cached) of {info['texts']} "
            f"distinct texts under encoder '{encoder}' ({info['key']}) in {info['cache']}: {where}, "
            f"{info['seconds']} s{speed}")


def cmd_embed_export(args: argparse.Namespace) -> int:
    """``evalsift embed export --data SPEC --encoder NAME --out FILE [--backend ray]``."""
    from ..embed import embed_texts, get_encoder, save_embeddings

    out = out_file(args.out)
    if out.suffix.lower() not in (".npz", ".parquet", ".pq"):
        raise DataError(f"--out {args.out}: write embeddings as .npz or .parquet", field="out")
    _backend_opts(args)
    if args.backend == "ray" and not getattr(get_encoder(args.encoder), "cacheable", True):
        raise ParameterError(f"--backend ray with encoder '{args.encoder}': its vectors depend on the whole corpus, "
                             "so they are computed in one process; use --backend local", field="encoder")
    texts = _pool_texts(args)
    with _local_device(args):
        if args.backend == "ray":
            info = _fill(args, texts)
            print(_fill_line(info, args.encoder), file=sys.stderr)
        vectors = embed_texts(texts, args.encoder, progress=not args.quiet)  # with ray: every one from the cache
        save_embeddings(out, texts, vectors)  # atomic: a failed write leaves no half file
        line = device_line()
    print(f"wrote {len(texts)} vectors ({vectors.shape[1]}-d, encoder '{args.encoder}') to {out}", file=sys.stderr)
    if line:
        print(line, file=sys.stderr)
    return 0


def cmd_embed_cache(args: argparse.Namespace) -> int:
    """``evalsift embed cache --data SPEC [--encoder NAME] [--backend local|ray] [--ray-address ADDR]``."""
    _backend_opts(args)
    texts = _pool_texts(args)
    with _local_device(args):
        info = _fill(args, texts)
        line = device_line()
    print(_fill_line(info, args.encoder), file=sys.stderr)
    if line:
        print(line, file=sys.stderr)
    return 0
