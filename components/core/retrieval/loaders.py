"""Reading a corpus from disk into ``SourceDocument``s, counting (never silently dropping) what is skipped.

Accepted inputs:
- a folder of ``.txt`` / ``.md`` files (recursively; either may start with YAML front matter between
  ``---`` lines — after a byte-order mark too, keys in any case — which becomes metadata and is not indexed;
  offsets still count from the file's first
  character, so ``text[char_start:char_end]`` slices the file exactly) and of ``.pdf`` / ``.html`` / ``.docx``
  files, converted by ``components.core.documents`` (their converted text is the canonical text that offsets
  count in; ``layout`` keeps pages and headings);
- a BEIR folder (``corpus.jsonl`` with ``_id``, ``title``, ``text``);
- a SQuAD 1.1/2.0 JSON file (each paragraph's context becomes one document ``<title>#<n>``).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import yaml

from components.core import safe_yaml
from components.core.documents.source import LoadLimits, LoadReport, SourceDocument  # noqa: F401  (re-exported)
from components.core.errors import SpanQAError

TEXT_SUFFIXES = {".txt", ".md", ".markdown"}


def _front_matter(text: str, max_bytes: int = LoadLimits.max_front_matter_bytes) -> tuple[dict, int]:
    """``(metadata, body_start)`` of a ``.md`` or ``.txt`` text with optional YAML front matter (within
    ``max_bytes``), after a UTF-8 byte-order mark if there is one. Keys are read in any case (``Access:`` is
    ``access``); two keys that differ only in case are a ``ValueError`` (which one would hold?)."""
    lead = 1 if text.startswith("\ufeff") else 0
    if not text.startswith("---", lead):
        return {}, 0
    first_nl = text.find("\n", lead)
    end = text.find("\n---", first_nl)
    if first_nl == -1 or end == -1 or text[lead + 3 : first_nl].strip():
        return {}, 0
    meta = safe_yaml.load(text[first_nl + 1 : end], max_bytes=max_bytes, max_aliases=8, max_nodes=10_000) or {}
    if not isinstance(meta, dict):
        raise ValueError("front matter is not a mapping")
    close = text.find("\n", end + 4)
    return lower_keys(meta), len(text) if close == -1 else close + 1


def lower_keys(meta: dict) -> dict:
    """``meta`` with its keys in lower case — the one spelling every rule reads; a ``ValueError`` naming both when
    two keys differ only in case."""
    out: dict = {}
    for key, value in meta.items():
        low = str(key).strip().lower()
        if low in out:
            raise ValueError(f"the fields '{low}' and '{key}' differ only in case; keep one")
        out[low] = value
    return out


def _read_text_file(path: Path, rel: str, limits: LoadLimits = LoadLimits()) -> tuple[SourceDocument | None, str | None]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limits.max_document_bytes + 1)
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or type(exc).__name__})"
    if len(raw) > limits.max_document_bytes:
        return None, (f"larger than max_document_bytes ({limits.max_document_bytes:,} bytes); raise it in the "
                      f"store's YAML section or split the file")
    nul = raw.find(b"\x00")
    if nul != -1:
        return None, "binary file" if nul < 8192 else f"contains a NUL byte at byte {nul} (binary data inside text)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start}); convert it with `iconv -t UTF-8`"
    meta: dict = {}
    body = 0
    if path.suffix.lower() in TEXT_SUFFIXES:  # .txt as .md: front matter is metadata, never indexed text
        try:
            meta, body = _front_matter(text, limits.max_front_matter_bytes)
        except safe_yaml.YamlLimitError as exc:
            return None, f"front matter over the limit: {exc} (max_front_matter_bytes {limits.max_front_matter_bytes:,})"
        except (yaml.YAMLError, ValueError) as exc:
            return None, f"invalid YAML front matter ({str(exc).splitlines()[0]})"
    if not text[body:].strip():
        return None, "empty document"
    meta = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in meta.items()}
    meta.setdefault("title", path.stem.replace("-", " ").replace("_", " "))
    meta["source"] = rel
    layout = {}
    if path.suffix.lower() in (".md", ".markdown"):
        from components.core.documents.layout import markdown_headings

        headings = markdown_headings(text, body)
        layout = {"headings": headings} if headings else {}
    return SourceDocument(rel, text, meta, body, layout), None


def _display(rel: str) -> str:
    """A relative path safe to print: bytes that are not UTF-8 are shown as ``\\xNN``."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def walk_folder(root: Path, limits: LoadLimits = LoadLimits()):
    """Yield ``(path, rel, None)`` for each regular file under ``root`` (sorted, hidden names skipped) and
    ``(path, rel, reason)`` for each entry that cannot be a document: a folder or file that cannot be read, a
    symbolic link that is broken, loops or leaves ``root`` (unless allowed), a FIFO, socket or device."""
    root_real = root.resolve()
    visited = {(root_real.stat().st_dev, root_real.stat().st_ino)}
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError as exc:
            yield folder, _display(folder.relative_to(root).as_posix()), f"folder cannot be read ({exc.strerror})"
            continue
        for entry in reversed(entries):
            path = Path(entry.path)
            rel = path.relative_to(root).as_posix()
            if entry.name.startswith("."):  # hidden files and folders (.git, editor swap files) are not content,
                kind = "folder" if entry.is_dir(follow_symlinks=False) else "file"  # but never dropped unseen
                yield path, _display(rel), f"hidden {kind} (names starting with '.' are not indexed)"
                continue
            shown = _display(rel)
            if shown != rel:
                yield path, shown, "file name is not valid UTF-8; rename the file"
                continue
            if entry.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    yield path, rel, "symbolic link that is broken or loops"
                    continue
                if not limits.follow_links_outside and not target.is_relative_to(root_real):
                    yield path, rel, (f"symbolic link to '{target}', outside the data folder; set "
                                      f"follow_links_outside: true in the store's YAML section to index it")
                    continue
            try:
                st = path.stat()
            except OSError as exc:
                yield path, rel, f"cannot be read ({exc.strerror})"
                continue
            if stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) in visited:
                    yield path, rel, "folder already visited (a symbolic link loop)"
                else:
                    visited.add((st.st_dev, st.st_ino))
                    stack.append(path)
            elif stat.S_ISREG(st.st_mode):
                yield path, rel, None
            else:
                yield path, rel, "not a regular file (a FIFO, socket or device)"


def load_folder(root: Path, limits: LoadLimits = LoadLimits()) -> LoadReport:
    from components.core.documents.convert import CONVERTED_SUFFIXES, ConversionError, convert_file

    docs, skipped = [], []
    for path, rel, why in walk_folder(root, limits):
        suffix = path.suffix.lower()
        if why is None and suffix in CONVERTED_SUFFIXES:
            try:
                docs.append(convert_file(path, rel, limits))
                continue
            except ConversionError as exc:
                why = str(exc)
        if why is None and suffix not in TEXT_SUFFIXES:
            why = (f"unsupported file type '{path.suffix or path.name}' (accepted: .txt, .md, .pdf, .html, .htm, "
                   f".docx)")
        if why is None:
            doc, why = _read_text_file(path, rel, limits)
            if doc is not None:
                docs.append(doc)
                continue
        skipped.append((rel, why))
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


def check_unique_ids(documents: list[SourceDocument], location: str | Path) -> None:
    """Document ids must be unique in a corpus (every store keys its rows and offsets by them)."""
    from collections import Counter

    dup = sorted(i for i, n in Counter(d.doc_id for d in documents).items() if n > 1)[:5]
    if dup:
        raise SpanQAError(f"Data '{location}' has duplicate document ids {dup}: ids must be unique.")


def load_corpus(location: str | Path, component: str = "document_store", limits: LoadLimits = LoadLimits()) -> LoadReport:
    """Load whatever ``location`` holds; raise a one-paragraph ``SpanQAError`` when it cannot be used."""
    path = Path(location).expanduser()
    if not path.exists():
        raise SpanQAError(
            f"Data location '{location}' (component '{component}', parameter data_dir) does not exist. "
            f"Pass an existing folder of .txt/.md/.pdf/.html/.docx files, a BEIR folder or a SQuAD JSON file with --data, "
            f"or fix data_dir in the pipeline YAML (relative paths are resolved from the current directory)."
        )
    try:
        if path.is_file() and path.suffix == ".json":
            report = load_squad(path)
        elif path.is_dir() and (path / "corpus.jsonl").is_file():
            corpus = path / "corpus.jsonl"
            target = corpus.resolve()
            if corpus.is_symlink() and not limits.follow_links_outside and not target.is_relative_to(path.resolve()):
                raise SpanQAError(
                    f"Data location '{location}' (component '{component}'): corpus.jsonl is a symbolic link to "
                    f"'{target}', outside the data folder, and links that leave it are not followed. Copy the file "
                    f"into the folder, or set follow_links_outside: true in the store's YAML section.")
            report = load_beir(corpus)
        elif path.is_dir():
            report = load_folder(path, limits)
        else:
            raise SpanQAError(
                f"Data location '{location}' (component '{component}') is a file spanqa cannot read as a corpus: "
                f"give a folder of .txt/.md/.pdf/.html/.docx files, a BEIR folder (with corpus.jsonl) or a SQuAD .json file."
            )
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpanQAError(f"Could not read '{location}' (component '{component}'): {exc}. Fix or re-export the file.") from None
    if not report.documents:
        why = f" ({len(report.skipped)} files skipped: " + "; ".join(f"{p}: {r}" for p, r in report.skipped[:5]) + ")" if report.skipped else ""
        raise SpanQAError(
            f"Data location '{location}' (component '{component}') holds no usable documents{why}. "
            f"Add .txt, .md, .pdf, .html or .docx files (non-empty), or point --data at a BEIR folder or a SQuAD JSON file."
        )
    return report
