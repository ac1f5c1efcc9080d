"""The document model every layer shares: an original document as read or converted (``SourceDocument``), what a
folder may hold (``LoadLimits``), what loading found and skipped (``LoadReport``), and a file's identity
(``file_sha256``). It imports nothing of spanqa's, so the converters (``core/documents``) and the loaders and index
(``core/retrieval``) both build on it without importing each other."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class LoadLimits:
    """What a folder corpus may hold; every limit hit is reported as a skipped file with its reason."""

    max_document_bytes: int = 50_000_000
    max_front_matter_bytes: int = 65_536
    follow_links_outside: bool = False  # symbolic links that leave the data folder are skipped unless True
    max_pages: int = 2_000  # a PDF with more pages is skipped (and listed)
    max_unpacked_bytes: int = 200_000_000  # a .docx whose archive inflates past this is skipped (zip bombs)
    min_visible_pt: float = 2.0  # text smaller than this (or hidden, white on white, off the page) is left out


@dataclass
class SourceDocument:
    """One original document: ``text`` exactly as read (or converted, for PDF/HTML/DOCX); ``body_start`` skips
    front matter; ``layout`` says where offsets lie in the original (``components.core.documents.layout``)."""

    doc_id: str
    text: str
    meta: dict = field(default_factory=dict)
    body_start: int = 0
    layout: dict = field(default_factory=dict)

    def fingerprint(self) -> str:
        payload = json.dumps([self.doc_id, self.text, self.meta, self.body_start, self.layout], sort_keys=True,
                             default=str)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class LoadReport:
    documents: list[SourceDocument]
    skipped: list[tuple[str, str]]  # (file or record, reason)
    source: str

    @property
    def hidden(self) -> dict[str, int]:
        """``{doc_id: characters left out}`` of the converted files that held text no reader sees (hidden,
        white on white, under the size threshold, off the page)."""
        return {d.doc_id: d.layout["hidden_chars"] for d in self.documents if d.layout.get("hidden_chars")}

    @property
    def found(self) -> int:
        """Every file or record found: ``found == len(documents) + len(skipped)``, nothing is dropped unseen."""
        return len(self.documents) + len(self.skipped)
