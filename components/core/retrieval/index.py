"""The span index: documents, their sentences/paragraphs/chunks as offsets, BM25 postings and embeddings.

``build_index`` splits every document with the one splitter (``components.core.text.splitting``), tokenises chunks
for BM25 and embeds them. It persists to ``<cache_dir>/<key>/`` where ``key`` hashes the corpus content,
the splitter and analyzer settings and the embedding model — so an unchanged corpus is loaded, not rebuilt.
Embeddings are also cached by the hash of the embedded text (per model), so when one file changes only its
own chunks are embedded again, and an interrupted build resumes from the embeddings it had saved (the cache
is saved after every embedding group). Every file is written to a temporary name, fsynced and renamed into
place; the manifest (written last) holds the format version and the SHA-256 of the arrays, so a truncated,
corrupt or foreign cache is detected (``CorruptIndexError``) and rebuilt instead of crashing every run.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import tempfile
import threading
import zipfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from components.core.text.analysis import Analyzer
from components.core.retrieval.bm25 import InvertedIndex
from components.core.retrieval.loaders import SourceDocument
from components.core.documents.layout import heading_breaks, situating_note
from components.core.text.splitting import TABLE, chunk_units, split_blocks, split_units

FORMAT_VERSION = 2
Embedder = Callable[[list[str]], np.ndarray]


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
        if ident["embedding_precision"] == "fp32":
            del ident["embedding_precision"]
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


class CorruptIndexError(Exception):
    """A cached index that exists but cannot be used; the message says why in a few words."""


# what reading a damaged .npz / .json can raise
_READ_ERRORS = (OSError, EOFError, ValueError, KeyError, TypeError, IndexError, zipfile.BadZipFile)


class EmbeddingCache:
    """Vectors by SHA-1 of (model, prefix, text), persisted in one ``.npz`` per model.

    A cache file that cannot be read is set aside (``problem`` says why) and started afresh: it only saves
    time, so losing it must never stop indexing."""

    def __init__(self, path: Path):
        self.path = path
        self.vectors: dict[str, np.ndarray] = {}
        self.problem = ""
        if path.exists():
            try:
                with np.load(path) as z:
                    self.vectors = dict(zip(z["keys"].tolist(), z["vectors"]))
            except _READ_ERRORS as exc:
                self.problem = f"embedding cache {path} unreadable ({type(exc).__name__}); starting it afresh"
                self.vectors = {}
        self.dirty = False

    @staticmethod
    def text_key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def embed(self, texts: list[str], embedder: Embedder) -> tuple[np.ndarray, int]:
        """Embeddings for ``texts``; only texts not seen before are sent to ``embedder``. Returns (matrix, n_new)."""
        keys = [self.text_key(t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self.vectors))
        if missing:
            first = {k: t for k, t in zip(keys, texts)}
            new = np.asarray(embedder([first[k] for k in missing]), dtype=np.float32)
            self.vectors.update(zip(missing, new))
            self.dirty = True
        if not keys:
            return np.zeros((0, 0), dtype=np.float32), 0
        return np.stack([self.vectors[k] for k in keys]).astype(np.float32), len(missing)

    def save(self) -> None:
        if not self.dirty:
            return
        keys = np.array(list(self.vectors))
        _atomic_save_npz(self.path, keys=keys, vectors=np.stack(list(self.vectors.values())))
        self.dirty = False


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Write through ``write(tmp)``, fsync it, rename it over ``path`` and fsync the folder: after a crash the
    file is either the old one or the whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def remove_stale_temporaries(directory: Path) -> int:
    """Delete the ``.*.tmp`` files a killed writer left under ``directory``; call it holding the cache lock."""
    removed = 0
    for tmp in Path(directory).rglob(".*.tmp") if Path(directory).exists() else []:
        try:
            tmp.unlink()
            removed += 1
        except OSError:
            pass
    return removed


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_save_npz(path: Path, **arrays) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    _atomic_write(path, write)


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
    embedding_cache: EmbeddingCache | None = None,
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


def save_index(index: CorpusIndex, directory: Path) -> None:
    """Persist ``index`` into ``directory`` (arrays in one .npz, documents and vocabulary in one .json)."""
    doc_offsets = np.cumsum([0] + [len(u) for u in index.units])
    blk_offsets = np.cumsum([0] + [len(b) for b in index.blocks])
    _atomic_save_npz(
        directory / "arrays.npz",
        chunk_doc=index.chunk_doc,
        chunk_start=index.chunk_start,
        chunk_end=index.chunk_end,
        units=np.concatenate(index.units) if index.units else np.zeros((0, 2), np.int64),
        unit_offsets=doc_offsets,
        blocks=np.concatenate(index.blocks) if index.blocks else np.zeros((0, 2), np.int64),
        block_offsets=blk_offsets,
        embeddings=index.embeddings,
        **{f"bm25_{k}": v for k, v in index.bm25.arrays().items()},
    )
    manifest = {
        "format": FORMAT_VERSION,
        "arrays_sha256": file_sha256(directory / "arrays.npz"),
        "key": index.key,
        "settings": asdict(index.settings),
        "chunk_kind": index.chunk_kind,
        "vocab": list(index.bm25.vocab),
        "documents": [asdict(d) for d in index.documents],
    }

    def write(tmp: Path) -> None:
        tmp.write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")

    _atomic_write(directory / "manifest.json", write)  # written last: its presence marks a complete index


def load_index(directory: Path) -> CorpusIndex | None:
    """The index saved in ``directory``; ``None`` when none was completed there (no manifest yet).

    Raises ``CorruptIndexError`` when one exists but cannot be trusted: unreadable manifest, another format
    version, arrays missing or not matching the manifest's checksum, or arrays that do not fit together."""
    manifest_path, arrays_path = directory / "manifest.json", directory / "arrays.npz"
    if not manifest_path.exists():
        return None
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptIndexError(f"manifest unreadable ({type(exc).__name__})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise CorruptIndexError(f"format version {found!r}, this spanqa writes {FORMAT_VERSION}")
    if not arrays_path.exists():
        raise CorruptIndexError("arrays.npz missing")
    if file_sha256(arrays_path) != manifest.get("arrays_sha256"):
        raise CorruptIndexError("arrays.npz does not match its checksum (truncated or changed)")
    try:
        return _index_from(manifest, arrays_path)
    except _READ_ERRORS as exc:
        raise CorruptIndexError(f"arrays unreadable ({type(exc).__name__}: {exc})") from None


def _index_from(manifest: dict, arrays_path: Path) -> CorpusIndex:
    with np.load(arrays_path) as z:
        a = {k: z[k] for k in z.files}
    settings = IndexSettings(**manifest["settings"])
    uo, bo = a["unit_offsets"], a["block_offsets"]
    bm25 = InvertedIndex(
        {t: i for i, t in enumerate(manifest["vocab"])},
        a["bm25_indptr"], a["bm25_doc_ids"], a["bm25_tfs"], a["bm25_doc_len"],
    )
    return CorpusIndex(
        [SourceDocument(**d) for d in manifest["documents"]],
        a["chunk_doc"], a["chunk_start"], a["chunk_end"], manifest["chunk_kind"],
        [a["units"][uo[i] : uo[i + 1]] for i in range(len(uo) - 1)],
        [a["blocks"][bo[i] : bo[i + 1]] for i in range(len(bo) - 1)],
        bm25, a["embeddings"], settings, manifest["key"],
    )
