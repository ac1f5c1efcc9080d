"""The span index: documents, their sentences/paragraphs/chunks as offsets, BM25 postings and embeddings.

``build_index`` splits every document with the one splitter (``components.core.text.splitting``), tokenises chunks
for BM25 and embeds them (splitting in a thread ahead of the encoder). ``corpus_key`` hashes the corpus content,
the splitter and analyzer settings and the embedding model: the name of the index on disk
(``components.core.retrieval.index_files``), so an unchanged corpus is loaded, not rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import queue
import threading
from collections.abc import Callable
from typing import Protocol
from dataclasses import asdict, dataclass, field

import numpy as np

from components.core.text.analysis import Analyzer
from components.core.retrieval.bm25 import InvertedIndex
from components.core.documents.source import SourceDocument
from components.core.documents.layout import heading_breaks, situating_note
from components.core.backends.int8 import INT8_SCHEME
from components.core.text.splitting import SPLITTER_VERSION, TABLE, chunk_units, split_blocks, split_units

Embedder = Callable[[list[str]], np.ndarray]
FORMAT_VERSION = 2  # of a built index (its files and its corpus key): another version is rebuilt, never read


class EmbeddingCacheLike(Protocol):
    """What ``build_index`` asks of an embedding cache (``index_files.EmbeddingCache``)."""

    def embed(self, texts: list[str], embedder: Embedder) -> tuple[np.ndarray, int]: ...

    def save(self) -> None: ...


@dataclass(frozen=True)
class IndexSettings:
    """Everything that changes what is indexed; part of the cache key."""

    max_chunk_chars: int = 800
    chunk_overlap: float = 0.15
    analyzer: dict = field(default_factory=lambda: Analyzer().to_dict())
    embedding_model: str = ""
    passage_prefix: str = ""
    embed_title: bool = True
    embedding_precision: str = "fp32"  # int8: the embedder's Linear layers quantised (other vectors)
    context_notes: str = "headings"  # "headings": a note from title + heading path before each chunk; "none";
    context_model: str = ""          # "generator": also the generator's note (docs/documents.md); its model

    def identity(self) -> dict:
        """The settings that name an index; fp32 (the default) is left out, so indexes built before the
        precision setting existed keep their key."""
        ident = asdict(self)
        ident["splitter"] = SPLITTER_VERSION  # other units, another index
        if ident["embedding_precision"] == "fp32":
            del ident["embedding_precision"]
        elif ident["embedding_precision"] == "int8":  # vectors of another int8 scheme never answer this one's queries
            ident["int8_scheme"] = INT8_SCHEME
        if ident["context_notes"] == "none":  # indexes built before notes existed embedded the title alone
            del ident["context_notes"]
        if not ident["context_model"]:
            del ident["context_model"]
        return ident

    def key(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class CorpusIndex:
    """A loaded index. Per-chunk arrays are aligned: chunk ``i`` is ``text[chunk_start[i]:chunk_end[i]]`` of
    document ``chunk_doc[i]``. ``units`` / ``blocks`` map a document position to ``(n, 2)`` offset arrays."""

    documents: list[SourceDocument]
    chunk_doc: np.ndarray
    chunk_start: np.ndarray
    chunk_end: np.ndarray
    chunk_kind: list[str]
    units: list[np.ndarray]
    blocks: list[np.ndarray]
    bm25: InvertedIndex
    embeddings: np.ndarray  # (n_chunks, dim) float32, L2-normalised
    settings: IndexSettings
    key: str = ""
    doc_pos: dict[str, int] = field(default_factory=dict)

    def __post_init__(self):
        self.doc_pos = {d.doc_id: i for i, d in enumerate(self.documents)}

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_doc)

    def chunk_text(self, i: int) -> str:
        return self.documents[self.chunk_doc[i]].text[self.chunk_start[i] : self.chunk_end[i]]

    def chunk_id(self, i: int) -> str:
        return f"{self.documents[self.chunk_doc[i]].doc_id}:{self.chunk_start[i]}-{self.chunk_end[i]}"


def corpus_key(documents: list[SourceDocument], settings: IndexSettings) -> str:

    h = hashlib.sha256(f"v{FORMAT_VERSION}|{settings.key()}".encode())
    for d in documents:
        h.update(d.fingerprint().encode())
    return h.hexdigest()[:24]


def split_document(doc: SourceDocument, settings: IndexSettings) -> tuple[list, list, list]:
    """``(blocks, units, chunks)`` of one document's body, all as ``Span``s of its original text."""
    blocks = split_blocks(doc.text, doc.body_start)
    units = [u for b in blocks for u in split_units(doc.text, b)]
    chunks = chunk_units(units, settings.max_chunk_chars, settings.chunk_overlap, heading_breaks(doc.layout))
    return blocks, units, chunks


def _table_header(doc: SourceDocument, blocks, chunk) -> str:
    """The header row of the table a chunk lies in (so a row chunk is embedded with its column names)."""
    for b in blocks:
        if b.start <= chunk.start < b.end:
            header = doc.text[b.start : b.end].split("\n", 1)[0].strip()
            return "" if chunk.start == b.start else header
    return ""


def index_text(doc: SourceDocument, blocks, chunk, settings: IndexSettings) -> str:
    """What is embedded and BM25-indexed for a chunk: its situating note (the title, and with
    ``context_notes: headings`` the heading path — contextual retrieval without a model) + the table header + the
    chunk itself. Only the chunk is ever a span."""
    parts = []
    meta = doc.meta if settings.embed_title else {}
    if settings.context_notes == "none":
        parts.append(str(meta.get("title") or ""))
    else:
        parts.append(situating_note(meta, doc.layout, chunk.start))
    if settings.context_notes == "generator":  # written before indexing (components.core.documents.notes)
        parts.append((doc.layout.get("notes") or {}).get(f"{chunk.start}-{chunk.end}", ""))
    if chunk.kind == TABLE:
        parts.append(_table_header(doc, blocks, chunk))
    parts.append(doc.text[chunk.start : chunk.end])
    return "\n".join(p for p in parts if p)


def _normalise(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1, norms)


class _Prepared:
    """Per document in order, ``(blocks, units, chunks, index texts, BM25 tokens)``, made by a worker thread.

    Splitting and tokenising are pure Python while embedding runs in torch with the GIL released, so the
    worker prepares the next documents while the current group is embedded, hiding most of that time. It may
    run ``ahead`` documents in front of the consumer; ``ready()`` says how many are waiting, so the consumer can
    take everything prepared so far as one group. ``close()`` stops the worker (a build that failed half-way
    must not leave it blocked on a full queue, holding what it prepared).
    """

    def __init__(self, documents: list[SourceDocument], settings: IndexSettings, ahead: int):
        self.documents = documents
        self._done: queue.Queue = queue.Queue(maxsize=ahead)
        self._stop = threading.Event()
        analyzer = Analyzer(**settings.analyzer)

        def work() -> None:
            try:
                for doc in documents:
                    blocks, units, chunks = split_document(doc, settings)
                    texts = [index_text(doc, blocks, c, settings) for c in chunks]
                    if not self._put((blocks, units, chunks, texts, [analyzer(t) for t in texts])):
                        return
            except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
                self._put(exc)

        threading.Thread(target=work, daemon=True, name="spanqa-index-prepare").start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._done.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def close(self) -> None:
        self._stop.set()

    def ready(self) -> int:
        return self._done.qsize()

    def __iter__(self):
        for _ in self.documents:
            item = self._done.get()
            if isinstance(item, BaseException):
                raise item
            yield item


def build_index(
    documents: list[SourceDocument],
    settings: IndexSettings,
    embedder: Embedder,
    embedding_cache: EmbeddingCacheLike | None = None,
    progress: Callable | None = None,
    embed_batch: int = 4096,
    first_group: int = 64,
) -> tuple[CorpusIndex, dict]:
    """Split, tokenise and embed ``documents``. Returns the index and stats (chunks, newly embedded).

    Texts are embedded in groups as soon as they are split, so the two overlap. A group is everything split
    and not yet embedded — at least ``first_group`` texts, at most ``embed_batch`` — taken when nothing more is
    ready: the encoder starts after the first few documents instead of waiting for a whole group, and since the
    splitter runs far ahead of the encoder the later groups are large, so the encoder's length sorting pads
    little (measured on CISI: these groups pad 1 % more tokens than one sorted pass, groups of 1,024 4.7 %,
    groups doubling from 64 9 %). The embedding cache is saved after each group that added vectors, so an
    interrupted build resumes there.
    """
    chunk_doc, chunk_start, chunk_end, kinds, texts, tokens, units_all, blocks_all = [], [], [], [], [], [], [], []
    vectors: list[np.ndarray] = []
    n_new = 0

    def embed(batch: list[str]) -> None:
        nonlocal n_new
        prefixed = [settings.passage_prefix + t for t in batch]
        if embedding_cache is not None:
            m, new = embedding_cache.embed(prefixed, embedder)
            embedding_cache.save()
        else:
            m, new = np.asarray(embedder(prefixed), dtype=np.float32), len(prefixed)
        vectors.append(m)
        n_new += new

    pending, first_group = 0, min(first_group, embed_batch)
    prepared = _Prepared(documents, settings, ahead=2 * embed_batch)
    it = progress(prepared, total=len(documents), desc="indexing", unit="doc") if progress else prepared
    try:
        for pos, (blocks, units, chunks, doc_texts, doc_tokens) in enumerate(it):
            blocks_all.append(np.array([(b.start, b.end) for b in blocks], dtype=np.int64).reshape(-1, 2))
            units_all.append(np.array([(u.start, u.end) for u in units], dtype=np.int64).reshape(-1, 2))
            for c in chunks:
                chunk_doc.append(pos)
                chunk_start.append(c.start)
                chunk_end.append(c.end)
                kinds.append(c.kind)
            texts.extend(doc_texts)
            tokens.extend(doc_tokens)
            waiting = len(texts) - pending
            if waiting >= embed_batch or (waiting >= first_group and not prepared.ready()):
                embed(texts[pending : pending + embed_batch])
                pending = min(len(texts), pending + embed_batch)
        while len(texts) > pending:
            embed(texts[pending : pending + embed_batch])
            pending = min(len(texts), pending + embed_batch)
    finally:
        prepared.close()
    bm25 = InvertedIndex.build(tokens)
    matrix = np.concatenate([v for v in vectors if v.size]) if any(v.size for v in vectors) else np.zeros((0, 0), np.float32)
    index = CorpusIndex(
        documents,
        np.array(chunk_doc, dtype=np.int32),
        np.array(chunk_start, dtype=np.int64),
        np.array(chunk_end, dtype=np.int64),
        kinds,
        units_all,
        blocks_all,
        bm25,
        _normalise(matrix).astype(np.float32) if len(matrix) else matrix,
        settings,
    )
    return index, {"documents": len(documents), "chunks": len(texts), "embedded": n_new}
