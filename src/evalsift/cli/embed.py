"""``evalsift embed import | export``: vectors computed elsewhere into the encoder cache, and out of it."""

from __future__ import annotations

import argparse
import sys

from ..errors import DataError, ParameterError
from ._common import EMBEDDINGS_FORMATS, add_device, add_quiet, device_line, out_file


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``embed import`` and ``embed export``."""
    p = sub.add_parser("embed", help="precomputed embeddings: import into the encoder cache, export")
    add_quiet(p)
    embed_sub = p.add_subparsers(dest="embed_cmd", required=True, metavar="{import,export}")

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
    add_device(exp)
    exp.add_argument("--out", required=True, metavar="FILE", help="FILE.npz or FILE.parquet")
    add_quiet(exp)
    exp.set_defaults(handler=cmd_embed_export)


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


def cmd_embed_export(args: argparse.Namespace) -> int:
    """``evalsift embed export --data SPEC --encoder NAME --out FILE``."""
    from ..embed import embed_texts, save_embeddings
    from ..io import load

    out = out_file(args.out)
    if out.suffix.lower() not in (".npz", ".parquet", ".pq"):
        raise DataError(f"--out {args.out}: write embeddings as .npz or .parquet", field="out")
    pool = load(args.data, include_refs=args.include_refs)
    texts = list(dict.fromkeys(o for s in pool.systems for o in pool.outputs[s] if isinstance(o, str)))
    if not texts:
        raise DataError(f"{args.data}: the data has no output texts to embed", field="output")
    vectors = embed_texts(texts, args.encoder, progress=not args.quiet)
    save_embeddings(out, texts, vectors)
    print(f"wrote {len(texts)} vectors ({vectors.shape[1]}-d, encoder '{args.encoder}') to {out}", file=sys.stderr)
    if device_line():
        print(device_line(), file=sys.stderr)
    return 0
