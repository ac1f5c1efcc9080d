"""Span decoding on hand-computed logits, and against a brute-force version of the peer's formula."""

import math

import numpy as np
import pytest

from components.core.reading.span_decoding import (
    calibrated,
    cls_no_answer,
    complement_no_answer,
    context_mask,
    decode_window,
    dedup_by_overlap,
    null_logit,
    overlap_chars,
    sigmoid,
    top_spans,
)

# [CLS] q q [SEP] Paris in 1889 [SEP] [PAD]
SEQ = np.array([-1, 0, 0, -1, 1, 1, 1, -1, -1])
ATT = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0])
START = np.array([5, 9, 9, 9, 1, 3, 0, 9, 9], dtype=np.float32)
END = np.array([4, 9, 9, 9, 0, 2, 6, 9, 9], dtype=np.float32)
CONTEXT = "Paris in 1889"
OFFSETS = np.array([(0, 0), (0, 4), (5, 9), (0, 0), (0, 5), (6, 8), (9, 13), (0, 0), (0, 0)])
# context spans (start_token, end_token) -> start + end: (4,4)=1 (4,5)=3 (4,6)=7 (5,5)=5 (5,6)=9 (6,6)=6
ALL_SPANS = [(5, 6, 9.0), (4, 6, 7.0), (6, 6, 6.0), (5, 5, 5.0), (4, 5, 3.0), (4, 4, 1.0)]


def test_context_mask_keeps_only_attended_context_tokens():
    assert context_mask(SEQ, ATT).tolist() == [False] * 4 + [True] * 3 + [False] * 2
    # a context token that is not attended is masked too
    assert context_mask(np.array([1, 1]), np.array([1, 0])).tolist() == [True, False]


def test_top_spans_masks_question_and_special_tokens_and_orders_by_logit():
    mask = context_mask(SEQ, ATT)
    assert top_spans(START, END, mask, k=10) == ALL_SPANS
    assert top_spans(START, END, mask, k=2) == ALL_SPANS[:2]
    assert top_spans(START, END, mask, k=0) == []


@pytest.mark.parametrize(
    ("max_len", "expected"),
    [
        (1, [(6, 6, 6.0), (5, 5, 5.0), (4, 4, 1.0)]),
        (2, [(5, 6, 9.0), (6, 6, 6.0), (5, 5, 5.0), (4, 5, 3.0), (4, 4, 1.0)]),
        (3, ALL_SPANS),
        (None, ALL_SPANS),
    ],
)
def test_max_answer_length_counts_tokens(max_len, expected):
    assert top_spans(START, END, context_mask(SEQ, ATT), k=10, max_answer_length=max_len) == expected


def test_ties_are_broken_by_earlier_start_then_shorter_span():
    zeros = np.zeros(3, dtype=np.float32)
    spans = top_spans(zeros, zeros, np.ones(3, bool), k=6)
    assert [(i, j) for i, j, _ in spans] == [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
    # k cuts inside a group of equal values deterministically
    assert [(i, j) for i, j, _ in top_spans(zeros, zeros, np.ones(3, bool), k=2)] == [(0, 0), (0, 1)]


def test_no_context_tokens_no_spans():
    assert top_spans(START, END, np.zeros(len(START), bool), k=5) == []


def brute_force(start, end, mask, max_len=None):
    """The peer's construction: masked start[:, None] + end[None, :], upper triangle, sorted."""
    s = np.where(mask, start, -np.inf)
    e = np.where(mask, end, -np.inf)
    m = s[:, None] + e[None, :]
    i, j = np.indices(m.shape)
    ok = (j >= i) & np.isfinite(m)
    if max_len is not None:
        ok &= j - i + 1 <= max_len
    rows = sorted(((-float(m[a, b]), a, b) for a, b in zip(i[ok], j[ok])))
    return [(int(a), int(b), -v) for v, a, b in rows]


@pytest.mark.parametrize("max_len", [None, 1, 4, 30])
def test_top_spans_equal_brute_force_on_random_logits(max_len):
    rng = np.random.default_rng(7)
    for _ in range(5):
        n = 40
        start = rng.normal(size=n).astype(np.float32)
        end = rng.normal(size=n).astype(np.float32)
        seq = np.array([-1] + [0] * 6 + [-1] + [1] * 30 + [-1, -1])
        att = np.array([1] * 39 + [0])
        mask = context_mask(seq, att)
        expected = brute_force(start, end, mask, max_len)
        assert top_spans(start, end, mask, k=len(expected) + 5, max_answer_length=max_len) == expected
        assert top_spans(start, end, mask, k=20, max_answer_length=max_len) == expected[:20]


def test_decode_window_gives_character_spans_scores_and_null():
    dec = decode_window(START, END, OFFSETS, SEQ, ATT, k=2, calibration_factor=0.1, window=3)
    assert dec.window == 3
    assert [(c.start_token, c.end_token, c.char_start, c.char_end) for c in dec.spans] == [(5, 6, 6, 13), (4, 6, 0, 13)]
    assert [CONTEXT[c.char_start : c.char_end] for c in dec.spans] == ["in 1889", "Paris in 1889"]
    assert dec.spans[0].logit == 9.0
    assert dec.spans[0].score == pytest.approx(1 / (1 + math.exp(-0.9)))
    assert dec.spans[1].score == pytest.approx(1 / (1 + math.exp(-0.7)))
    assert all(c.window == 3 for c in dec.spans)
    assert dec.null_logit == 9.0  # start[CLS] + end[CLS] = 5 + 4
    assert dec.null_score == pytest.approx(1 / (1 + math.exp(-0.9)))


def test_null_logit_uses_the_given_cls_index():
    assert null_logit(START, END, cls_index=0) == 9.0
    assert null_logit(START, END, cls_index=4) == 1.0


def test_sigmoid_and_calibration():
    assert sigmoid(0.0) == 0.5
    assert sigmoid(-1000.0) == 0.0 and sigmoid(1000.0) == 1.0  # no overflow warnings
    assert calibrated(20.0, 0.1) == pytest.approx(1 / (1 + math.exp(-2.0)))
    assert np.allclose(calibrated(np.array([-10.0, 0.0, 10.0]), 0.5), [1 / (1 + math.exp(5)), 0.5, 1 / (1 + math.exp(-5))])


def test_cls_no_answer_takes_the_least_confident_window():
    # windows' null logits 12, -3, 4: the window most sure it holds an answer (-3) decides
    assert cls_no_answer([12.0, -3.0, 4.0], 0.1) == pytest.approx(1 / (1 + math.exp(0.3)))
    assert cls_no_answer([], 0.1) == 1.0


def test_complement_no_answer_is_probability_that_all_answers_are_wrong():
    assert complement_no_answer([0.5, 0.2]) == pytest.approx(0.4)
    assert complement_no_answer([]) == 1.0


def test_overlap_chars():
    assert overlap_chars(0, 10, 5, 20) == 5
    assert overlap_chars(5, 20, 0, 10) == 5
    assert overlap_chars(2, 4, 0, 10) == 2  # inside
    assert overlap_chars(0, 5, 5, 9) == 0  # touching
    assert overlap_chars(0, 5, 6, 9) == 0


def test_dedup_by_overlap_per_document():
    text = "I want to go to the river in Maine."
    the_river_in = ("d1", text.index("the river in"), text.index("the river in") + len("the river in"))
    in_maine = ("d1", text.index("in Maine"), text.index("in Maine") + len("in Maine"))
    assert text[in_maine[1] : in_maine[2]] == "in Maine"
    # "in" is shared: 2 chars = 2/12 of the first, 2/8 = 0.25 of the second
    items = [the_river_in, in_maine]
    assert dedup_by_overlap(items, lambda x: x, 0.3) == items
    assert dedup_by_overlap(items, lambda x: x, 0.2) == [the_river_in]
    assert dedup_by_overlap(items, lambda x: x, None) == items
    # same offsets in another document are kept; items without key always kept and never block others
    other = ("d2", *the_river_in[1:])
    assert dedup_by_overlap([the_river_in, other, in_maine], lambda x: x, 0.01) == [the_river_in, other]
    free = ("none", 0, 0)
    key = lambda x: None if x[0] == "none" else x  # noqa: E731
    assert dedup_by_overlap([free, the_river_in, free], key, 0.01) == [free, the_river_in, free]
