"""The operators: each of K3's formulas spelled once, run on numpy and on torch (and by training)."""
