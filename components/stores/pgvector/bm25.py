"""BM25 Okapi in SQL over PgSpanStore's postings, and its RRF fusion with the vector search.

``statement`` builds the common table expressions that leave the ranked BM25 list in ``bm`` (id, score, rank);
``BM25_SELECT`` reads it, ``HYBRID_TAIL`` adds the vector search and fuses both lists in the same statement.
Scores follow rank_bm25's BM25Okapi (negative idf floored to epsilon x mean idf), so they equal the in-memory
store's within 1e-6, and ties are broken by load order as in memory.
"""

from __future__ import annotations

from psycopg import sql

from components.stores.base import BM25Params
from components.stores.pgvector.schema import Tables

# BM25 Okapi of one posting without its idf: tf (k1 + 1) / (tf + k1 (1 - b) + (k1 b / avgdl) dl), the three
# constants folded per query (five operations a posting: the aggregation over postings is the cost)
TF = "(p.tf * %s / (p.tf + %s + %s * p.dl))"
# idf once per query term (MATERIALIZED: inlined, the planner re-evaluates it per posting, 6x slower)
_WEIGHTS = """
WITH q AS MATERIALIZED (SELECT term, count(*)::float8 AS n FROM unnest(%s::text[]) AS term GROUP BY term),
w AS MATERIALIZED (SELECT q.term, q.n * (CASE WHEN ln(%s - t.df + 0.5) - ln(t.df + 0.5) < 0 THEN %s
                                  ELSE ln(%s - t.df + 0.5) - ln(t.df + 0.5) END) AS idf
      FROM q JOIN {terms} AS t ON t.term = q.term),"""
# Every posting of every query term scored and summed per chunk. A top-N heap keeps the best 2k scores (a
# full sort of every matching chunk costs more than the scoring); only when the 2k-th still ties the k-th may
# chunks of that score have been cut off, and the statement is rerun keeping every tie (WITH TIES), so the
# load-order tie-break is exact either way. ``n_scored`` / ``floor`` tell the caller which case it got.
SCORED = _WEIGHTS + """
s AS MATERIALIZED (SELECT p.ckey, sum(w.idf * """ + TF + """) AS score
      FROM w JOIN {postings} AS p ON p.term = w.term {join} GROUP BY p.ckey
      HAVING sum(w.idf * """ + TF + """) > 0 ORDER BY score DESC {limit}),
bm AS (SELECT m.chunk_id AS id, s.score, row_number() OVER (ORDER BY s.score DESC, d.ord, m.chunk_ord) AS rank
       FROM s JOIN {chunkmap} AS m ON m.ckey = s.ckey JOIN {documents} AS d ON d.doc_id = m.doc_id
       ORDER BY s.score DESC, d.ord, m.chunk_ord LIMIT %s)
"""
CUT = "(SELECT count(*) FROM s) AS n_scored, (SELECT min(score) FROM s) AS floor"
BM25_SELECT = """SELECT c.id, c.content, c.meta, c.embedding, bm.score, """ + CUT + """
FROM bm JOIN {chunks} AS c ON c.id = bm.id ORDER BY bm.rank"""
# both lists and their reciprocal rank fusion in one statement (RRFJoiner's order: score, best rank, first seen)
HYBRID_TAIL = """, dn AS MATERIALIZED (SELECT id, 1 - (embedding <=> %s::vector) AS score FROM {chunks} AS c0{where}
                    ORDER BY embedding <=> %s::vector LIMIT %s),
dr AS (SELECT id, score, row_number() OVER (ORDER BY score DESC) AS rank FROM dn),
f AS (SELECT coalesce(bm.id, dr.id) AS id, bm.score AS b_score, bm.rank AS b_rank, dr.score AS d_score,
             dr.rank AS d_rank,
             coalesce(%s / (%s + bm.rank), 0) + coalesce(%s / (%s + dr.rank), 0) AS rrf,
             least(bm.rank, dr.rank) AS best,
             CASE WHEN bm.rank IS NOT NULL THEN bm.rank ELSE (SELECT count(*) FROM bm) + dr.rank END AS seen
      FROM bm FULL JOIN dr ON bm.id = dr.id)
SELECT f.id, c.content, c.meta, c.embedding, f.b_score, f.b_rank, f.d_score, f.d_rank, f.rrf, """ + CUT + """
FROM f JOIN {chunks} AS c ON c.id = f.id ORDER BY f.rrf DESC, f.best, f.seen"""


def statement(t: Tables, tokens: list[str], k: int, where: sql.Composable | None, fparams: tuple,
              corpus: tuple[float, float, float], params: BM25Params, ties: bool = False, read_chunks: bool = True):
    """``(CTEs, parameters, table names)`` of BM25 top ``k`` for ``tokens``; ``where`` is the filter's SQL on
    ``c0.meta`` (``components.stores.pgvector.filters``) — or, with ``read_chunks=False``, on the postings ``p``
    themselves — applied inside the search; ``ties`` keeps every chunk tied with the k-th."""
    n, avgdl, floor = corpus
    join = sql.SQL("")
    if where is not None and read_chunks:
        join = sql.SQL("JOIN {} AS m0 ON m0.ckey = p.ckey JOIN {} AS c0 ON c0.id = m0.chunk_id").format(
            t.id("chunkmap"), t.id("chunks")) + where
    elif where is not None:
        join = where
    tf = (params.k1 + 1, params.k1 * (1 - params.b), params.k1 * params.b / avgdl)
    args = (list(tokens), n, floor, n, *tf, *fparams, *tf, k if ties else 2 * k, k)
    names = {key: t.id(key) for key in ("terms", "postings", "documents", "chunks", "chunkmap")}
    limit = sql.SQL("FETCH FIRST %s ROWS WITH TIES" if ties else "LIMIT %s")
    return sql.SQL(SCORED).format(join=join, limit=limit, **names), args, names


def cut_ties(rows: list, k: int, score_at: int, n_at: int) -> bool:
    """True when chunks tied with the k-th score may have been cut off (rerun with ``ties=True``): the heap
    was full and its lowest score still equals the k-th."""
    scores = sorted((r[score_at] for r in rows if r[score_at] is not None), reverse=True)
    if not rows or len(scores) < k:
        return False
    n_scored, floor = rows[0][n_at], rows[0][n_at + 1]
    return n_scored > k and floor == scores[k - 1]


# -- exact top-k over impact-ordered postings (components.core.retrieval.impact) -----------------------------------
# the next page of each term's postings after its position, best impact first (an index range scan per term)
PAGE = """SELECT t.term, p.imp, p.ckey FROM unnest(%s::text[], %s::real[], %s::integer[]) AS t(term, imp0, ckey0)
CROSS JOIN LATERAL (SELECT p.imp, p.ckey FROM {postings} AS p WHERE p.term = t.term AND p.imp <= t.imp0
                    AND (p.imp < t.imp0 OR p.ckey > t.ckey0) ORDER BY p.imp DESC, p.ckey LIMIT %s) AS p"""
# every query term's posting of the chunks seen, with their load order, for those the selection admits
EXACT = """SELECT m.ckey, m.chunk_id, d.ord, m.chunk_ord, array_agg(p.term), array_agg(p.tf), min(p.dl)
FROM (SELECT * FROM {chunkmap} WHERE ckey = ANY(%s)) AS m JOIN {documents} AS d ON d.doc_id = m.doc_id
JOIN {postings} AS p ON p.ckey = m.ckey AND p.term = ANY(%s){chunks}{where}
GROUP BY m.ckey, m.chunk_id, d.ord, m.chunk_ord"""


def impact_top_k(conn, t: Tables, tokens: list[str], k: int, where: sql.Composable | None, fparams: tuple,
                 corpus: tuple[float, float, float], params: BM25Params, reference: dict,
                 max_postings: int = 2_000_000):
    """``([(chunk_id, score)], stats)`` of the exact BM25 top ``k`` read best impact first (``stats.exhaustive``
    and no list when the threshold could not close within ``max_postings``); ``where`` is the selection's
    clause on the chunk row ``c0`` (None: every chunk)."""
    from collections import Counter

    from components.core.retrieval.impact import bound_factor, idf_weights, term_score, top_k

    n, avgdl, floor = corpus
    counts = Counter(tokens)
    dfs = dict(conn.execute(sql.SQL("SELECT term, df FROM {} WHERE term = ANY(%s)").format(t.id("terms")),
                            (list(counts),)).fetchall())
    weights = idf_weights(counts, dfs, n, floor)
    terms = list(weights)
    page = sql.SQL(PAGE).format(postings=t.id("postings"))
    chunks = sql.SQL(" JOIN {} AS c0 ON c0.id = m.chunk_id").format(t.id("chunks")) if where is not None else sql.SQL("")
    exact_sql = sql.SQL(EXACT).format(chunkmap=t.id("chunkmap"), documents=t.id("documents"),
                                      postings=t.id("postings"), chunks=chunks, where=where or sql.SQL(""))
    ids: dict[int, str] = {}

    def fetch(positions, size):
        names = list(positions)
        imps = [positions[x][0] if positions[x] else float("inf") for x in names]
        keys = [positions[x][1] if positions[x] else -1 for x in names]
        out: dict[str, list] = {x: [] for x in names}
        for term, imp, key in conn.execute(page, (names, imps, keys, size)).fetchall():
            out[term].append((float(imp), int(key)))
        return out

    def exact(keys):
        out = {}
        for key, chunk_id, ord_, chunk_ord, ts, tfs, dl in conn.execute(exact_sql, (keys, terms, *fparams)).fetchall():
            ids[key] = chunk_id
            out[key] = (sum(weights[x] * term_score(tf, dl, params.k1, params.b, avgdl) for x, tf in zip(ts, tfs)),
                        (ord_, chunk_ord))
        return out

    if not weights:
        return [], None
    ranked, stats = top_k(weights, k, fetch, exact, bound_factor(avgdl, reference["avgdl"]),
                          max_postings=max_postings)
    return (None if ranked is None else [(ids[key], score) for key, score in ranked]), stats
