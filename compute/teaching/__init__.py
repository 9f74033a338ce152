"""The models the docks teach with (real formulas, toy numbers): experiments, memory cells, bits, memory and model comparison, Quantile Balancing."""
