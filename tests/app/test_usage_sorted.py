"""Experts -> Usage by token type: columns are grouped by each expert's dominant token type."""
import numpy as np

from app.docks.experts.usage import dominant_order


def test_column_order_groups_experts_by_dominant_type():
    m = np.array([[0.0, 0.5, 0.1, 0.0, 0.9],
                  [0.0, 0.2, 0.6, 0.0, 0.05],
                  [0.0, 0.3, 0.3, 0.0, 0.05]])
    order = dominant_order(m)
    assert list(order) == [4, 1, 2, 0, 3]
    dom = np.argmax(m[:, order], axis=0)[:3]
    assert list(dom) == sorted(dom)
