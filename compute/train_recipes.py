"""The shipped toys' training recipes (torch-free: the command checks `--recipe` before torch loads)."""
from __future__ import annotations

RECIPES: dict[str, tuple[dict, ...]] = {
    # toy-k3-v2.npz (shipped): one stage from the seed, soft targets (the language's next-piece distribution,
    # soft_targets), the two-sentence documents drawn twice as often. A recipe of several stages continues each
    # from the previous stage's written (BF16) file with a fresh Adam.
    "v2": ({"steps": 800, "batch": 8, "lr": 5e-3, "repeat_weight": 2, "soft": True},),
    # toy-k3-v1.npz (shipped before v2; one-hot targets): every-prefix greedy ko 99.6 %, en 95.5 %
    "v1": ({"steps": 300, "batch": 8, "lr": 5e-3, "repeat_weight": 1},
           {"steps": 150, "batch": 8, "lr": 3e-3, "repeat_weight": 1},
           {"steps": 300, "batch": 8, "lr": 2e-3, "repeat_weight": 3}),
}
STAGE_KEYS = ("steps", "batch", "lr", "repeat_weight", "soft")
