"""RRFJoiner: fused scores on a hand-computed case, the record of ranks, weights, and its parameter errors."""

import pytest
from haystack import Document, Pipeline

from components.core.params import ParameterError
from components.joiners.rrf_joiner import RRFJoiner


def docs(*ids):
    return [Document(id=i, content=f"text {i}", meta={"scores": {}, "route": ["retrieve"]}) for i in ids]


def test_fused_order_scores_and_ranks_by_hand():
    # k = 1: a = 1/(1+1) + 1/(1+2) = 0.8333, b = 1/(1+2) + 1/(1+1) = 0.8333 (tie: a's best rank comes first),
    # c = 1/(1+3) = 0.25 (bm25 only), d = 1/(1+3) = 0.25 (dense only, appears later)
    out = RRFJoiner(k=1).run(bm25=docs("a", "b", "c"), dense=docs("b", "a", "d"))["documents"]
    assert [d.id for d in out] == ["a", "b", "c", "d"]
    assert [round(d.score, 4) for d in out] == [0.8333, 0.8333, 0.25, 0.25]
    assert out[0].meta["ranks"] == {"bm25": 1, "dense": 2} and out[2].meta["ranks"] == {"bm25": 3}
    assert out[0].meta["scores"]["rrf"] == out[0].score


def test_weights_and_top_k():
    # weight 3 on dense: b = 1/2 + 3/2... with k = 1: a = 1/2 + 3/3 = 1.5, b = 1/3 + 3/2 = 1.8333
    out = RRFJoiner(k=1, weights={"bm25": 1.0, "dense": 3.0}, top_k=1).run(bm25=docs("a", "b"), dense=docs("b", "a"))
    assert [(d.id, round(d.score, 4)) for d in out["documents"]] == [("b", 1.8333)]


def test_a_missing_list_counts_as_empty_and_the_yaml_round_trips():
    assert [d.id for d in RRFJoiner().run(bm25=docs("x"))["documents"]] == ["x"]
    pipe = Pipeline()
    pipe.add_component("joiner", RRFJoiner(lists=["bm25", "dense"], k=10, top_k=5))
    again = Pipeline.loads(pipe.dumps(), allowed_modules=["components"])
    assert again.get_component("joiner").to_dict() == pipe.get_component("joiner").to_dict()


@pytest.mark.parametrize("kwargs, message", [
    ({"k": -1}, "RRFJoiner: parameter 'k' is -1, but it must be a number ≥ 0"),
    ({"top_k": 0}, "RRFJoiner: parameter 'top_k' is 0, but it must be a whole number ≥ 1 (or null)"),
    ({"weights": {"sparse": 1.0}}, "RRFJoiner: parameter 'weights' names lists ['sparse'] that are not in 'lists'"),
])
def test_bad_parameters_are_one_style(kwargs, message):
    with pytest.raises(ParameterError) as err:
        RRFJoiner(**kwargs)
    assert str(err.value).startswith(message)
