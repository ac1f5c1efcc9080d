"""The span index on disk: ``save_index`` / ``load_index`` under ``<cache_dir>/<key>/`` and the embedding cache.

Embeddings are cached by the hash of the embedded text (per model), so when one file changes only its own chunks
are embedded again, and an interrupted build resumes from the embeddings it had saved (the cache is saved after
every embedding group). Every file is written to a temporary name, fsynced and renamed into place; the manifest
(written last) holds the format version and the SHA-256 of the arrays, so a truncated, corrupt or foreign cache
is detected (``CorruptIndexError``) and rebuilt instead of crashing every run.

```python
from components.core.retrieval.index_files import load_index, save_index

save_index(index, Path(".spanqa/cache") / key)
again = load_index(Path(".spanqa/cache") / key)   # None when absent; CorruptIndexError when damaged
```
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from components.core.retrieval.bm25 import InvertedIndex
from components.core.documents.source import SourceDocument, file_sha256  # noqa: F401  (file_sha256 re-exported)
from components.core.retrieval.index import FORMAT_VERSION, CorpusIndex, Embedder, IndexSettings



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
        return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()  # never a crash on a lone surrogate

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




def _atomic_save_npz(path: Path, **arrays) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    _atomic_write(path, write)


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
