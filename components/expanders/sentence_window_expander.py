"""SentenceWindowExpander: turn retrieved chunks into readable windows of whole sentences, and widen them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from components.core.errors import SpanQAError
from components.core.params import check_choice, check_int, check_positive_int
from components.core.text.splitting import header_above
from components.core.text.windows import grow, merge
from components.stores.base import SpanIndexStore, check_store_type

LEVELS = ("window", "paragraph", "passage")


@component
class SentenceWindowExpander:
    """Expands each hit to ±``window`` sentences of its source document and merges overlapping windows of the
    same document, keeping exact character offsets (``content == text[char_start:char_end]``). A window that
    begins inside a table carries the table's header row in ``meta["table_header"]`` (the names of its columns).

    With ``mode="widen"`` it is the widening step of the verifier loop: each incoming Document names its
    target in ``meta["widen_to"]`` — ``"paragraph"`` (the enclosing paragraphs plus ``widen_paragraphs`` on
    each side) or ``"passage"`` (the whole source document) — and comes out at that ``level``.

    Usage:
    ```python
    expander = SentenceWindowExpander(document_store=store, window=3)
    windows = expander.run(documents=ranked_chunks)["documents"]
    widener = SentenceWindowExpander(document_store=store, mode="widen")
    wider = widener.run(documents=[Document(content=w.content, meta={**w.meta, "widen_to": "paragraph"})])
    ```
    """

    def __init__(self, document_store: SpanIndexStore, window: int = 3, mode: str = "window", widen_paragraphs: int = 1,
                 merge_gap: int = 0, max_windows: int | None = None):
        name = "SentenceWindowExpander"
        check_choice(name, "mode", mode, ("window", "widen"))
        for key, value in (("window", window), ("widen_paragraphs", widen_paragraphs), ("merge_gap", merge_gap)):
            check_int(name, key, value)
        check_positive_int(name, "max_windows", max_windows, optional=True)
        self.document_store, self.window, self.mode = document_store, window, mode
        self.widen_paragraphs, self.merge_gap, self.max_windows = widen_paragraphs, merge_gap, max_windows

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store, window=self.window, mode=self.mode,
                               widen_paragraphs=self.widen_paragraphs, merge_gap=self.merge_gap,
                               max_windows=self.max_windows)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SentenceWindowExpander:
        check_store_type("SentenceWindowExpander", data)
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        self.document_store.open()

    def _target(self, doc: Document) -> tuple[int, int, str]:
        source, units, blocks = self.document_store.source(doc.meta["doc_id"])
        s, e = int(doc.meta["char_start"]), int(doc.meta["char_end"])
        if self.mode == "window":
            return (*grow(units, s, e, self.window), "window")
        level = doc.meta.get("widen_to")
        if level == "paragraph":
            return (*grow(blocks, s, e, self.widen_paragraphs), "paragraph")
        if level == "passage":
            body = source.text[source.body_start:]
            lead = len(body) - len(body.lstrip())
            return source.body_start + lead, len(source.text.rstrip()), "passage"
        raise SpanQAError(f"SentenceWindowExpander (widen): meta['widen_to'] must be 'paragraph' or 'passage', got {level!r}.")

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        windows = self._expand(documents)
        if self.mode == "widen" and _spans(windows) == _spans(documents):
            # the paragraph adds nothing to what was read: never read the same text twice — go on to the
            # whole passage (or, already there, let the verifier end the loop on what it has read)
            level = (documents[0].meta or {}).get("widen_to") if documents else None
            if level == "paragraph":
                windows = self._expand([replace(d, meta={**d.meta, "widen_to": "passage"}) for d in documents])
                note = ["widen:paragraph (unchanged)", "widen:passage"]
            else:
                note = [f"widen:{level} (unchanged)"]
            for w in windows:
                route = list(w.meta.get("route") or [])
                if route and route[-1].startswith("widen:"):
                    route = route[:-1]
                w.meta["route"] = route + note
        return {"documents": windows}

    def _expand(self, documents: list[Document]) -> list[Document]:
        targets: dict[str, list[tuple[int, int, str, Document]]] = {}
        for doc in documents:
            s, e, level = self._target(doc)
            targets.setdefault(doc.meta["doc_id"], []).append((s, e, level, doc))
        windows = []
        for doc_id, items in targets.items():
            source, _, _ = self.document_store.source(doc_id)
            for s, e, members in merge([(t[0], t[1]) for t in items], gap=self.merge_gap):
                hits = [items[m][3] for m in members]
                best = max(hits, key=lambda d: (d.score if d.score is not None else float("-inf")))
                level = max((items[m][2] for m in members), key=LEVELS.index)
                route = list(best.meta.get("route", [])) + (["expand"] if self.mode == "window" else [])
                meta = {k: v for k, v in best.meta.items() if k not in ("widen_to", "chunk_id", "kind")}
                meta.update(doc_id=doc_id, char_start=s, char_end=e, level=level, route=route,
                            hits=sorted({h.meta.get("chunk_id", h.id) for h in hits}))
                header = header_above(source.text, s)  # a window that begins inside a table: its column names
                if header is not None:
                    meta["table_header"] = source.text[header[0]:header[1]]
                windows.append(Document(id=f"{doc_id}:{s}-{e}", content=source.text[s:e], meta=meta, score=best.score))
        windows.sort(key=lambda d: -(d.score if d.score is not None else float("-inf")))
        if self.max_windows:
            windows = windows[: self.max_windows]
        return windows


def _spans(documents: list[Document]) -> set[tuple]:
    return {(d.meta.get("doc_id"), d.meta.get("char_start"), d.meta.get("char_end")) for d in documents}
