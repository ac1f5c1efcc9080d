import numpy as np

from components.core.text.windows import covering, grow, merge

UNITS = np.array([(0, 10), (11, 20), (21, 30), (32, 40), (41, 50)])


def test_covering_and_grow():
    assert covering(UNITS, 12, 25) == (1, 3)
    assert covering(UNITS, 30, 32) is None  # the gap between two units
    assert grow(UNITS, 12, 25, 0) == (11, 30)
    assert grow(UNITS, 12, 25, 1) == (0, 40)
    assert grow(UNITS, 45, 48, 3) == (11, 50)  # clipped at the document's last unit
    assert grow(UNITS, 30, 32, 2) == (30, 32)  # nothing overlaps: unchanged


def test_merge_overlapping_and_gap():
    spans = [(20, 30), (0, 10), (25, 40), (41, 50)]
    assert merge(spans) == [(0, 10, [1]), (20, 40, [0, 2]), (41, 50, [3])]
    assert merge(spans, gap=1) == [(0, 10, [1]), (20, 50, [0, 2, 3])]
