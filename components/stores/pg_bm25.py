"""BM25 Okapi in SQL over PgSpanStore's postings: the exhaustive statement, MaxScore pruning, and RRF fusion.

``statement`` builds the common table expressions that leave the ranked BM25 list in ``bm`` (id, score, rank);
``BM25_SELECT`` reads it, ``HYBRID_TAIL`` adds the vector search and fuses both lists in the same statement.
Scores follow rank_bm25's BM25Okapi (negative idf floored to epsilon x mean idf), so they equal the in-memory
store's within 1e-6, and ties are broken by load order as in memory.
"""

from __future__ import annotations

from psycopg import sql

from components.stores.base import BM25Params
from components.stores.pg_schema import Tables

# BM25 Okapi of one posting, without the term weight (parameters k1, k1, b, b, avgdl)
TF = "(p.tf * (%s + 1) / (p.tf + %s * (1 - %s + %s * p.dl / %s)))"
# idf once per query term (MATERIALIZED: inlined, the planner re-evaluates it per posting, 6x slower)
_WEIGHTS = """
WITH q AS MATERIALIZED (SELECT term, count(*)::float8 AS n FROM unnest(%s::text[]) AS term GROUP BY term),
w AS MATERIALIZED (SELECT q.term, t.df, q.n * (CASE WHEN ln(%s - t.df + 0.5) - ln(t.df + 0.5) < 0 THEN %s
                                  ELSE ln(%s - t.df + 0.5) - ln(t.df + 0.5) END) AS idf
      FROM q JOIN {terms} AS t ON t.term = q.term),"""
# every posting of every query term scored and summed: the oracle the pruned statement is tested against
EXHAUSTIVE = _WEIGHTS + """
s AS MATERIALIZED (SELECT p.ckey, sum(w.idf * """ + TF + """) AS score
      FROM w JOIN {postings} AS p ON p.term = w.term {join} GROUP BY p.ckey),"""
# MaxScore (Turtle & Flood 1995), exact: a posting adds at most ub = idf * (k1 + 1). A lower bound theta of the
# k-th best score comes from the rarest terms' postings alone (partial scores never exceed full ones); the
# "non-essential" terms, the cheapest whose ub sum stays below theta, cannot lift a chunk that has none of the
# other terms into the top k, so only chunks holding an essential term are candidates, and of those only the
# ones whose partial score plus the non-essential ub sum reaches theta are completed with index look-ups.
# Every chunk scoring >= the true k-th score survives (theta carries a 1e-9 relative margin for rounding), so
# the top k, ties included, equal EXHAUSTIVE's. Needs weights >= 0 and 0 <= b <= 1 (else EXHAUSTIVE serves).
PRUNED = _WEIGHTS + """
u AS MATERIALIZED (SELECT term, df, idf, idf * (%s + 1) AS ub FROM w),
seed AS MATERIALIZED (SELECT term FROM (SELECT term, sum(df) OVER (ORDER BY ub DESC, term ROWS UNBOUNDED PRECEDING)
                                               - df AS before FROM u) AS x WHERE before < %s),
sp AS MATERIALIZED (SELECT p.ckey, sum(u.idf * """ + TF + """) AS s FROM u JOIN {postings} AS p ON p.term = u.term
      {join} {and_} u.term IN (SELECT term FROM seed) GROUP BY p.ckey),
theta AS MATERIALIZED (SELECT CASE WHEN count(*) >= %s THEN min(s) * (1 - 1e-9) ELSE 0 END AS v
      FROM (SELECT s FROM sp ORDER BY s DESC LIMIT %s) AS x),
ne AS MATERIALIZED (SELECT term, idf, ub FROM (SELECT term, idf, ub, sum(ub) OVER (ORDER BY ub, term ROWS UNBOUNDED
                                           PRECEDING) AS cum FROM u) AS x WHERE cum < (SELECT v FROM theta)),
ep AS MATERIALIZED (SELECT p.ckey, sum(u.idf * """ + TF + """) AS s FROM u JOIN {postings} AS p ON p.term = u.term
      {join} {and_} u.term NOT IN (SELECT term FROM ne) GROUP BY p.ckey),
live AS MATERIALIZED (SELECT ckey, s FROM ep
      WHERE s + (SELECT coalesce(sum(ub), 0) FROM ne) >= (SELECT v FROM theta)),
s AS MATERIALIZED (SELECT l.ckey, l.s + coalesce((SELECT sum(ne.idf * """ + TF + """) FROM ne
      JOIN {postings} AS p ON p.term = ne.term AND p.ckey = l.ckey), 0) AS score FROM live AS l),"""
_RANKED = """
top AS (SELECT score FROM s WHERE score > 0 ORDER BY score DESC LIMIT %s),
bm AS (SELECT m.chunk_id AS id, s.score, row_number() OVER (ORDER BY s.score DESC, d.ord, m.chunk_ord) AS rank
       FROM s JOIN {chunkmap} AS m ON m.ckey = s.ckey JOIN {documents} AS d ON d.doc_id = m.doc_id
       WHERE s.score > 0 AND s.score >= (SELECT min(score) FROM top)
       ORDER BY s.score DESC, d.ord, m.chunk_ord LIMIT %s)
"""
SEED_POSTINGS = 20_000  # postings read for theta: speed only, never which chunks come back


def bm25_ctes(pruned: bool) -> str:
    return (PRUNED if pruned else EXHAUSTIVE) + _RANKED


BM25_SELECT = """SELECT c.id, c.content, c.meta, c.embedding, bm.score
FROM bm JOIN {chunks} AS c ON c.id = bm.id ORDER BY bm.rank"""
# both lists and their reciprocal rank fusion in one statement (RRFJoiner's order: score, best rank, first seen)
HYBRID_TAIL = """, dn AS MATERIALIZED (SELECT id, 1 - (embedding <=> %s::vector) AS score FROM {chunks} {where}
                    ORDER BY embedding <=> %s::vector LIMIT %s),
dr AS (SELECT id, score, row_number() OVER (ORDER BY score DESC) AS rank FROM dn),
f AS (SELECT coalesce(bm.id, dr.id) AS id, bm.score AS b_score, bm.rank AS b_rank, dr.score AS d_score,
             dr.rank AS d_rank,
             coalesce(%s / (%s + bm.rank), 0) + coalesce(%s / (%s + dr.rank), 0) AS rrf,
             least(bm.rank, dr.rank) AS best,
             CASE WHEN bm.rank IS NOT NULL THEN bm.rank ELSE (SELECT count(*) FROM bm) + dr.rank END AS seen
      FROM bm FULL JOIN dr ON bm.id = dr.id)
SELECT f.id, c.content, c.meta, c.embedding, f.b_score, f.b_rank, f.d_score, f.d_rank, f.rrf
FROM f JOIN {chunks} AS c ON c.id = f.id ORDER BY f.rrf DESC, f.best, f.seen"""


def statement(t: Tables, tokens: list[str], k: int, where: sql.Composable | None, fparams: tuple,
              corpus: tuple[float, float, float], params: BM25Params, pruned: bool = True):
    """``(CTEs, parameters, table names)`` of BM25 top ``k`` for ``tokens``; ``where`` is a Haystack filter's
    SQL (on the chunk table's meta) applied inside the search. MaxScore serves unless its bound fails
    (a negative idf floor, k1 < 0, b outside [0, 1]) or ``pruned`` is False (the oracle)."""
    n, avgdl, floor = corpus
    join = sql.SQL("")
    if where is not None:
        join = sql.SQL("JOIN {} AS m0 ON m0.ckey = p.ckey JOIN {} AS c0 ON c0.id = m0.chunk_id").format(
            t.id("chunkmap"), t.id("chunks")) + where
    tf = (params.k1, params.k1, params.b, params.b, avgdl)
    weights = (list(tokens), n, floor, n)
    pruned = pruned and floor >= 0 and params.k1 >= 0 and 0 <= params.b <= 1  # ub = idf * (k1 + 1) holds
    if pruned:
        args = (*weights, params.k1, SEED_POSTINGS, *tf, *fparams, k, k, *tf, *fparams, *tf, k, k)
    else:
        args = (*weights, *tf, *fparams, k, k)
    names = {key: t.id(key) for key in ("terms", "postings", "documents", "chunks", "chunkmap")}
    ctes = sql.SQL(bm25_ctes(pruned)).format(join=join, and_=sql.SQL("WHERE" if where is None else "AND"), **names)
    return ctes, args, names
