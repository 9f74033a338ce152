"""The compiled tier: numba's set-up, the compiled pass's kernels, records and views, and the selection loops (compute.fused_nb, beside the engine, runs them)."""
