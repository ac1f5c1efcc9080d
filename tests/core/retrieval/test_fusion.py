import pytest

from components.core.retrieval.fusion import reciprocal_rank_fusion


def test_rrf_hand_computed():
    # a: 1/(60+1) + 1/(60+3) = 0.0163934 + 0.0158730 = 0.0322664
    # b: 1/(60+2)            = 0.0161290 (only in bm25)
    # c: 1/(60+3) + 1/(60+1) = same as a -> tie, broken by best single rank (both 1) then first seen (a)
    # d: 1/(60+2)            = 0.0161290 (only in dense), tie with b -> b seen first
    fused = reciprocal_rank_fusion({"bm25": ["a", "b", "c"], "dense": ["c", "d", "a"]}, k=60)
    assert [d for d, _, _ in fused] == ["a", "c", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 63)
    assert fused[2][1] == pytest.approx(1 / 62)
    assert fused[0][2] == {"bm25": 1, "dense": 3}


def test_rrf_weights_and_top_k():
    fused = reciprocal_rank_fusion({"bm25": ["a", "b"], "dense": ["b", "a"]}, k=0, weights={"dense": 3.0}, top_k=1)
    # a: 1/1 + 3/2 = 2.5 ; b: 1/2 + 3/1 = 3.5
    assert fused == [("b", 3.5, {"bm25": 2, "dense": 1})]


def test_rrf_counts_a_repeated_id_once_at_its_best_rank():
    fused = reciprocal_rank_fusion({"x": ["a", "a", "b"]}, k=60)
    assert fused[0] == ("a", pytest.approx(1 / 61), {"x": 1})
    assert fused[1][1] == pytest.approx(1 / 63)
