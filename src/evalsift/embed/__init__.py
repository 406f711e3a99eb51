"""Text encoders and a cache that embeds each distinct text once.

DiffUse and the diversity selectors need one vector per system output. Two modules:

- :mod:`evalsift.embed.encoders`: the :class:`Encoder` interface, the ``encoders`` registry
  (``minilm`` -- the default, offline --, ``st:<model>``, ``tfidf``) and :func:`get_encoder`;
- :mod:`evalsift.embed.cache`: :func:`embed_texts`, which embeds each distinct text once through
  an in-process memo and an on-disk SQLite cache (:class:`EmbeddingCache`, with bulk
  :meth:`~EmbeddingCache.import_vectors`);
- :mod:`evalsift.embed.precomputed`: :class:`PrecomputedEncoder`, vectors computed elsewhere served
  from an ``.npz`` / ``.parquet`` file keyed by text hash, text or item + system, and
  :func:`save_embeddings`, which writes such a file;
- :mod:`evalsift.embed.onnx`: :class:`OnnxMiniLMEncoder` (``minilm-onnx``), the default model's
  vectors computed by ONNX Runtime, faster on CPU, and :class:`OnnxInt8MiniLMEncoder` (``minilm-int8``),
  the model quantised to int8: faster still, close (not equal) vectors.

>>> enc = get_encoder("tfidf")
>>> embed_texts(["a cat", "a dog", "a cat"], enc, progress=False).shape[0]
3
"""

from ..vectors import unit_rows
from .cache import (CACHE_FILENAME, CacheWarning, EmbeddingCache, clear_memo, default_cache_dir, embed_texts,
                    text_hash)
from .encoders import (DEFAULT_ENCODER, MINILM_MODEL, Encoder, EncoderLike, MiniLMEncoder, SentenceTransformerEncoder,
                       TfidfEncoder, encoders, get_encoder)
from .onnx import OnnxInt8MiniLMEncoder, OnnxMiniLMEncoder
from .precomputed import PrecomputedEncoder, save_embeddings

__all__ = [
    "CACHE_FILENAME", "DEFAULT_ENCODER", "MINILM_MODEL", "CacheWarning", "EmbeddingCache", "Encoder", "EncoderLike",
    "MiniLMEncoder", "OnnxInt8MiniLMEncoder", "OnnxMiniLMEncoder", "PrecomputedEncoder", "SentenceTransformerEncoder", "TfidfEncoder",
    "clear_memo", "default_cache_dir", "embed_texts", "encoders", "get_encoder", "save_embeddings", "text_hash",
    "unit_rows",
]
