"""Reading a corpus from disk into ``SourceDocument``s, counting (never silently dropping) what is skipped.

Accepted inputs:
- a folder of ``.txt`` / ``.md`` files (recursively; Markdown may start with YAML front matter between
  ``---`` lines, which becomes metadata and is not indexed; offsets still count from the file's first
  character, so ``text[char_start:char_end]`` slices the file exactly);
- a BEIR folder (``corpus.jsonl`` with ``_id``, ``title``, ``text``);
- a SQuAD 1.1/2.0 JSON file (each paragraph's context becomes one document ``<title>#<n>``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from components.core.errors import SpanQAError

TEXT_SUFFIXES = {".txt", ".md", ".markdown"}


@dataclass
class SourceDocument:
    """One original document: ``text`` exactly as read; ``body_start`` skips front matter."""

    doc_id: str
    text: str
    meta: dict = field(default_factory=dict)
    body_start: int = 0

    def fingerprint(self) -> str:
        payload = json.dumps([self.doc_id, self.text, self.meta, self.body_start], sort_keys=True, default=str)
        return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class LoadReport:
    documents: list[SourceDocument]
    skipped: list[tuple[str, str]]  # (file or record, reason)
    source: str


def _front_matter(text: str) -> tuple[dict, int]:
    """``(metadata, body_start)`` of a Markdown text with optional YAML front matter."""
    if not text.startswith("---"):
        return {}, 0
    first_nl = text.find("\n")
    end = text.find("\n---", first_nl)
    if first_nl == -1 or end == -1 or text[3:first_nl].strip():
        return {}, 0
    meta = yaml.safe_load(text[first_nl + 1 : end]) or {}
    if not isinstance(meta, dict):
        raise ValueError("front matter is not a mapping")
    close = text.find("\n", end + 4)
    return meta, len(text) if close == -1 else close + 1


def _read_text_file(path: Path, rel: str) -> tuple[SourceDocument | None, str | None]:
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        return None, "binary file"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start}); convert it with `iconv -t UTF-8`"
    meta: dict = {}
    body = 0
    if path.suffix.lower() in (".md", ".markdown"):
        try:
            meta, body = _front_matter(text)
        except (yaml.YAMLError, ValueError) as exc:
            return None, f"invalid YAML front matter ({str(exc).splitlines()[0]})"
    if not text[body:].strip():
        return None, "empty document"
    meta = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in meta.items()}
    meta.setdefault("title", path.stem.replace("-", " ").replace("_", " "))
    meta["source"] = rel
    return SourceDocument(rel, text, meta, body), None


def load_folder(root: Path) -> LoadReport:
    docs, skipped = [], []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue  # hidden files and folders (.git, editor swap files) are not content
        if path.suffix.lower() not in TEXT_SUFFIXES:
            skipped.append((rel, f"unsupported file type '{path.suffix or path.name}' (accepted: .txt, .md)"))
            continue
        doc, why = _read_text_file(path, rel)
        if doc is None:
            skipped.append((rel, why))
        else:
            docs.append(doc)
    return LoadReport(docs, skipped, str(root))


def load_beir(corpus: Path) -> LoadReport:
    docs, skipped = [], []
    with corpus.open(encoding="utf-8", errors="strict") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                doc_id, text = str(rec["_id"]), rec.get("text") or ""
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                skipped.append((f"{corpus.name}:{n}", f"bad record ({type(exc).__name__})"))
                continue
            if not text.strip():
                skipped.append((f"{corpus.name}:{n} (_id {doc_id})", "empty document"))
                continue
            meta = {k: v for k, v in (rec.get("metadata") or {}).items() if isinstance(v, (str, int, float, bool))}
            meta.update(title=rec.get("title") or "", source=f"{corpus.name}:{n}")
            docs.append(SourceDocument(doc_id, text, meta))
    return LoadReport(docs, skipped, str(corpus))


def iter_squad(path: Path):
    """Yield ``(doc_id, title, context, paragraph)`` for each paragraph of a SQuAD JSON file."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise SpanQAError(f"{path}: not a SQuAD file (expected a JSON object with a 'data' list of articles).")
    for article in data["data"]:
        title = article.get("title", "")
        for i, para in enumerate(article.get("paragraphs", [])):
            yield f"{title}#{i}", title, para.get("context", ""), para


def load_squad(path: Path) -> LoadReport:
    docs, skipped = [], []
    for doc_id, title, context, _ in iter_squad(path):
        if context.strip():
            docs.append(SourceDocument(doc_id, context, {"title": title.replace("_", " "), "source": path.name}))
        else:
            skipped.append((doc_id, "empty context"))
    return LoadReport(docs, skipped, str(path))


def load_corpus(location: str | Path, component: str = "document_store") -> LoadReport:
    """Load whatever ``location`` holds; raise a one-paragraph ``SpanQAError`` when it cannot be used."""
    path = Path(location).expanduser()
    if not path.exists():
        raise SpanQAError(
            f"Data location '{location}' (component '{component}', parameter data_dir) does not exist. "
            f"Pass an existing folder of .txt/.md files, a BEIR folder or a SQuAD JSON file with --data, "
            f"or fix data_dir in the pipeline YAML (relative paths are resolved from the current directory)."
        )
    try:
        if path.is_file() and path.suffix == ".json":
            report = load_squad(path)
        elif path.is_dir() and (path / "corpus.jsonl").is_file():
            report = load_beir(path / "corpus.jsonl")
        elif path.is_dir():
            report = load_folder(path)
        else:
            raise SpanQAError(
                f"Data location '{location}' (component '{component}') is a file spanqa cannot read as a corpus: "
                f"give a folder of .txt/.md files, a BEIR folder (with corpus.jsonl) or a SQuAD .json file."
            )
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpanQAError(f"Could not read '{location}' (component '{component}'): {exc}. Fix or re-export the file.") from None
    if not report.documents:
        why = f" ({len(report.skipped)} files skipped: " + "; ".join(f"{p}: {r}" for p, r in report.skipped[:5]) + ")" if report.skipped else ""
        raise SpanQAError(
            f"Data location '{location}' (component '{component}') holds no usable documents{why}. "
            f"Add .txt or .md files (UTF-8, non-empty), or point --data at a BEIR folder or a SQuAD JSON file."
        )
    return report
