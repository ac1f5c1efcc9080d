"""Indexing with Ray Data: files converted, split and embedded on a Ray cluster's nodes, written by the driver to
PostgreSQL (a ``PgSpanStore``, or each shard of a ``PgClusterStore``) in groups, each group one transaction.

``python run.py PIPELINE --index --ray auto`` (a running cluster: ``ray start --head`` here, ``ray start --address
HEAD:6379`` on each other node) or ``--ray local`` (a cluster of this process's own). The Ray Data pipeline:

1. ``from_items``: every file of ``data_dir`` (the loader's walk: hidden files, bad links and the like are skipped
   and reported, as in a local build), with its place in the load order;
2. ``map_batches(PrepareAndEmbed)``, one actor per node (one CPU each, the embedding model loaded once): each file
   converted (PDF, HTML, Word, text) and, when its content hash differs from what its store holds, split and
   analysed — the same ``prepare`` as a local build — and its chunks embedded, in the one process (two stages of
   one CPU each would leave a one-CPU node idle between them);
3. the driver writes each document's rows (``sync.write_group``) and, at the end, deletes what left the folder and
   sets the load order — exactly what a local build writes, so the tables hold the same rows.

**Resumable**: a document is written whole in one transaction and keyed by its content hash, so after a killed
driver the next run skips what was written and does the rest; a killed worker's tasks are retried by Ray (its
``max_retries``), and the driver writes only what comes back — nothing twice. The embedding model must be at the
same path on every node (the project's ``models/`` or the HF cache). ``pip install -e '.[cluster]'`` installs Ray.
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path

from components.core.errors import SpanQAError

BLOCKS_PER_NODE = 64


class Prepare:
    """A file → its SourceDocument and prepared chunks (or why it was skipped / that it is unchanged)."""

    def __init__(self, settings, limits, existing: dict[str, str], shards: int):
        self.settings, self.limits, self.existing, self.shards = settings, limits, existing, shards

    def __call__(self, row: dict) -> dict:
        from components.core.documents.convert import CONVERTED_SUFFIXES, ConversionError, convert_file
        from components.core.retrieval.loaders import TEXT_SUFFIXES, _read_text_file
        from components.core.text.analysis import Analyzer
        from components.stores.pgvector.cluster import shard_of
        from components.stores.pgvector.sync import prepare

        path, rel = Path(row["path"]), row["rel"]
        out = {"pos": row["pos"], "rel": rel, "doc_id": "", "status": "skipped", "reason": "", "prepared": b"",
               "texts": [], "shard": 0}
        suffix = path.suffix.lower()
        try:
            if suffix in CONVERTED_SUFFIXES:
                doc = convert_file(path, rel, self.limits)
            elif suffix in TEXT_SUFFIXES:
                doc, why = _read_text_file(path, rel, self.limits)
                if doc is None:
                    return {**out, "reason": why}
            else:
                return {**out, "reason": f"unsupported file type '{path.suffix or path.name}' (accepted: .txt, .md, "
                                         f".pdf, .html, .htm, .docx)"}
        except ConversionError as exc:
            return {**out, "reason": str(exc)}
        out.update(doc_id=doc.doc_id, shard=shard_of(doc.doc_id, self.shards) if self.shards > 1 else 0)
        if self.existing.get(doc.doc_id) == doc.fingerprint():
            return {**out, "status": "unchanged"}
        p = prepare(doc, row["pos"], self.settings, Analyzer(**self.settings.analyzer))
        return {**out, "status": "ready", "prepared": pickle.dumps(p),
                "texts": [self.settings.passage_prefix + x for x in p.texts]}


class PrepareAndEmbed:
    """The map actor: files → their SourceDocument, prepared chunks and chunk vectors (or why a file was skipped /
    that it is unchanged). One actor per node holds the embedding model, loaded once; conversion, splitting and
    embedding of a file run in that one process, so a node with one CPU is never idle between two stages."""

    def __init__(self, settings, limits, existing: dict[str, str], shards: int, model_path: str, precision: str,
                 batch_size: int):
        from components.core.backends.models import load_sentence_transformer

        self.prepare = Prepare(settings, limits, existing, shards)
        self.model, self.batch_size = load_sentence_transformer(model_path, "cpu", precision), batch_size

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        rows = [self.prepare({"path": str(path), "rel": str(rel), "pos": int(pos)})
                for path, rel, pos in zip(batch["path"], batch["rel"], batch["pos"])]
        texts = [t for row in rows for t in row["texts"]]
        vectors = (self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False) if texts
                   else np.zeros((0, 0), np.float32))
        at = 0
        for row in rows:  # the texts stay here: the driver writes the prepared chunks and their vectors
            n = len(row.pop("texts"))
            row["vectors"] = pickle.dumps(np.asarray(vectors[at: at + n], dtype=np.float32))
            at += n
        return {key: [row[key] for row in rows] for key in rows[0]} if rows else {}


def ray_index(store, address: str, progress: bool = True) -> dict:
    """Index ``store.data_dir`` into ``store`` (a PgSpanStore or PgClusterStore) with Ray; what was done."""
    try:
        import ray
    except ImportError:
        raise SpanQAError("--ray needs Ray: pip install -e '.[cluster]' (wheels only).") from None
    from components.core.backends.models import resolve_model
    from components.core.retrieval.loaders import walk_folder
    from components.stores.pgvector import schema, server, sync
    from components.stores.pgvector.schema import q

    root = Path(store.data_dir)
    if not root.is_dir():
        raise SpanQAError(f"--ray indexes a folder of files; data_dir '{root}' is not one (a BEIR folder or SQuAD "
                          f"file is indexed without --ray).")
    targets = list(getattr(store, "primaries", None) or [store])
    start = time.perf_counter()
    existing: dict[str, str] = {}
    for target in targets:  # create or check the tables, as a local build does, without writing documents
        conn = server.connect(target.server_dsn)
        try:
            server.check_server(conn, target.server_dsn)  # version, pgvector (created when missing)
            with sync.advisory_lock(conn, target.tables):
                schema.check_compatible(conn, target.tables, target._wanted(), target.where)
                target._vector_store().count_documents()
                schema.create(conn, target.tables, target._wanted())
                schema.index_chunks_by_document(conn, target.tables)
                existing.update(conn.execute(q("SELECT doc_id, content_hash FROM {documents} WHERE origin = 'data'",
                                               target.tables)).fetchall())
        finally:
            conn.close()
    files, skipped = [], []
    for path, rel, why in walk_folder(root, store.limits):
        (skipped.append((rel, why)) if why else files.append({"path": str(path.resolve()), "rel": rel,
                                                               "pos": len(files)}))
    ray.init(address=None if address == "local" else address, ignore_reinit_error=True, log_to_driver=False,
             include_dashboard=False, configure_logging=False)
    nodes = max(1, len([n for n in ray.nodes() if n.get("Alive")]))
    model = resolve_model(store.embedding_model, component="document_store").path
    # a block per file up to BLOCKS_PER_NODE a node: the last blocks are small, so no node waits long on another
    ds = ray.data.from_items(files, override_num_blocks=max(1, min(len(files), BLOCKS_PER_NODE * nodes)))
    ds = ds.map_batches(PrepareAndEmbed, fn_constructor_kwargs={
        "settings": store.settings, "limits": store.limits, "existing": existing, "shards": len(targets),
        "model_path": model, "precision": store.config.embedding_precision, "batch_size": store.config.batch_size},
        batch_size=1, concurrency=nodes, num_cpus=1, max_restarts=-1, max_task_retries=-1)
    from pgvector.psycopg import register_vector

    conns = [server.connect(t.server_dsn) for t in targets]
    for conn in conns:
        register_vector(conn)
    done = {"written": 0, "unchanged": 0, "chunks_written": 0, "deleted": 0, "nodes": nodes}
    seen: dict[str, int] = {}
    try:
        for row in ds.iter_rows():
            if row["status"] == "skipped":
                skipped.append((row["rel"], row["reason"]))
                continue
            seen[row["doc_id"]] = int(row["pos"])
            if row["status"] == "unchanged":
                done["unchanged"] += 1
                continue
            prepared, vectors = pickle.loads(row["prepared"]), pickle.loads(row["vectors"])
            i = int(row["shard"])
            with sync.advisory_lock(conns[i], targets[i].tables):
                sync.write_group(conns[i], targets[i].tables, [prepared], vectors, "data",
                                 [prepared.doc.doc_id] if prepared.doc.doc_id in existing else [])
            done["written"] += 1
            done["chunks_written"] += len(prepared.chunks)
        for conn, target in zip(conns, targets):  # what left the folder, and the load order of what is there
            with sync.advisory_lock(conn, target.tables), conn.transaction():
                have = [r[0] for r in conn.execute(q("SELECT doc_id FROM {documents} WHERE origin = 'data'",
                                                     target.tables)).fetchall()]
                gone = sorted(set(have) - set(seen))
                if gone:
                    sync.delete_rows(conn, target.tables, gone)
                    conn.execute(q("UPDATE {state} SET version = version + 1 WHERE id = 1", target.tables))
                    done["deleted"] += len(gone)
                mine = [d for d in have if d in seen]
                conn.execute(q("UPDATE {documents} AS d SET ord = v.ord FROM unnest(%s::text[], %s::integer[]) AS "
                               "v(doc_id, ord) WHERE d.doc_id = v.doc_id AND d.ord <> v.ord", target.tables),
                             (mine, [seen[d] for d in mine]))
            for part in ("postings", "chunkmap", "terms"):
                conn.execute(q(f"VACUUM (ANALYZE) {{{part}}}", target.tables))
    finally:
        for conn in conns:
            conn.close()
    return {**done, "skipped": skipped, "files": len(files), "seconds": round(time.perf_counter() - start, 2)}
