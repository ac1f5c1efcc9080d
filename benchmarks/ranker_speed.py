"""CrossEncoderRanker.run() against bare CrossEncoder.predict on the same 50 (query, passage) pairs.

The model is a full-size stand-in for cross-encoder/ms-marco-MiniLM-L-6-v2 (BERT, hidden 384, 6 layers,
12 heads, intermediate 1536, the MiniLM WordPiece tokenizer, random seeded weights): the hub model cannot be
downloaded here, and the speed depends on the shape, not on the weights. Both sides use the very same loaded
CrossEncoder and batch size; runs alternate (ours, peer, peer, ours, ...) so that load from other processes
hits both alike. Optionally Haystack's SentenceTransformersSimilarityRanker runs on the same model too.

    python benchmarks/ranker_speed.py [--pairs 50] [--repeats 7] [--batch-size 32] [--no-haystack]
"""

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.standins import build_cross_encoder  # noqa: E402 - after the path set-up above

WORDS = (
    "printer error code paper tray firmware update network driver install reset button status light blinks "
    "orange green cartridge toner scanner duplex wireless router password manual warranty service restart "
    "configuration menu settings display battery charge cable port voltage sensor jam feed roller cleaning"
).split()


def build_stand_in(path: str) -> None:
    """A full-size (MiniLM-L6 shape) random cross-encoder stand-in."""
    build_cross_encoder(path, hidden=384, layers=6, heads=12, intermediate=1536)


def make_documents(n: int):
    from haystack import Document

    rng = random.Random(0)
    docs = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(60, 160))]
        content = " ".join(words).capitalize() + "."
        docs.append(Document(content=content, meta={"doc_id": f"doc{i}", "title": f"Manual section {i}",
                                                    "char_start": 0, "char_end": len(content),
                                                    "route": ["retrieve"]}))
    return docs


def timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    ap.add_argument("--no-haystack", action="store_true", help="skip SentenceTransformersSimilarityRanker")
    args = ap.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    from components.core.backends.models import load_cross_encoder
    from components.rankers import CrossEncoderRanker
    from components.rankers.cross_encoder_ranker import passage_text

    query = "What does the orange status light on the printer mean after a firmware update?"
    docs = make_documents(args.pairs)
    with tempfile.TemporaryDirectory(prefix="ranker-speed-") as path:
        build_stand_in(path)
        ranker = CrossEncoderRanker(model=path, device="cpu", top_k=5, batch_size=args.batch_size)
        ranker.warm_up()
        ce = load_cross_encoder(path, "cpu", None)
        assert ranker._cross_encoder is ce, "ranker and peer must share one loaded model"
        pairs = [(query, passage_text(d, ["title"], "\n")) for d in docs]

        def ours():
            return ranker.run(query=query, documents=docs)

        def peer():
            return ce.predict(pairs, batch_size=args.batch_size, show_progress_bar=False)

        contenders = [("CrossEncoderRanker.run", ours), ("CrossEncoder.predict", peer)]
        if not args.no_haystack:
            from haystack_integrations.components.rankers.sentence_transformers import (
                SentenceTransformersSimilarityRanker,
            )

            hs = SentenceTransformersSimilarityRanker(model=path, token=None, device=None, top_k=5,
                                                      meta_fields_to_embed=["title"], scale_score=False,
                                                      batch_size=args.batch_size)
            hs.warm_up()
            contenders.append(("haystack ST SimilarityRanker", lambda: hs.run(query=query, documents=docs)))

        # same answer first: our top 5 are predict's top 5 with equal scores
        scores = peer()
        top = ours()["documents"]
        best = sorted(range(len(docs)), key=lambda i: -scores[i])[:5]
        assert [d.meta["doc_id"] for d in top] == [docs[i].meta["doc_id"] for i in best]
        assert [d.score for d in top] == [float(scores[i]) for i in best]

        for _, fn in contenders:  # warm caches / allocator
            fn()
        times: dict[str, list[float]] = {name: [] for name, _ in contenders}
        for r in range(args.repeats):
            order = contenders if r % 2 == 0 else contenders[::-1]
            for name, fn in order:
                times[name] += timed(fn, 1)

    print(f"{args.pairs} (query, passage) pairs, batch_size {args.batch_size}, {args.repeats} alternating runs, "
          f"torch {torch.__version__} on CPU with {torch.get_num_threads()} threads; "
          f"stand-in BERT 384x6 (12 heads, 1536 FFN), ~{sum(len(p[1].split()) for p in pairs) // len(pairs)} "
          f"words/passage")
    base_med = statistics.median(times["CrossEncoder.predict"])
    base_min = min(times["CrossEncoder.predict"])
    print(f"{'':30s} {'median s':>9s} {'min s':>8s} {'pairs/s':>8s} {'median/predict':>15s} {'min/predict':>12s}")
    for name, ts in times.items():
        med, low = statistics.median(ts), min(ts)
        print(f"{name:30s} {med:9.3f} {low:8.3f} {args.pairs / low:8.1f} {med / base_med:14.3f}x "
              f"{low / base_min:11.3f}x")
    print("(pairs/s from the min; the min is the least disturbed by other load on the machine)")


if __name__ == "__main__":
    main()
