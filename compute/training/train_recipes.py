"""The shipped toys' training recipes (torch-free: the command checks `--recipe` before torch loads)."""
from __future__ import annotations

RECIPES: dict[str, tuple[dict, ...]] = {
    # toy-k3-v2.npz (shipped): one stage from the seed, soft targets (the language's next-piece distribution,
    # soft_targets), the two-sentence documents drawn twice as often. A recipe of several stages continues each
    # from the previous stage's written (BF16) file with a fresh Adam.
    "v2": ({"steps": 800, "batch": 8, "lr": 5e-3, "repeat_weight": 2, "soft": True},),
    # toy-kimi-linear-48b-v2.npz (issue 41.2): v2's stage, then the same stage again from its file at twice the
    # learning rate (a fresh Adam). v2 alone left Kimi Linear (27 layers, 7 MLA, no AttnRes) at 84 % in English on the
    # training pairs: the object of the two-sentence documents a coin toss and "the robots" taking a singular verb,
    # with the training loss flat from step ~300; the second stage was chosen on the training pairs' scores
    # (English 84.3 -> 100 %), never on the held-out ones
    "v2-linear": ({"steps": 800, "batch": 8, "lr": 5e-3, "repeat_weight": 2, "soft": True},
                  {"steps": 800, "batch": 8, "lr": 1e-2, "repeat_weight": 2, "soft": True}),
    # toy-deepseek-v3-v2.npz (issue 41.2): v2-linear's two stages, then a third from that file at a fifth of the second's
    # learning rate, the two-sentence documents drawn three times as often (a fresh Adam). After v2-linear's two
    # stages DeepSeek-V3 (61 MLA layers, no KDA) was already at 99.98 % on the training pairs but 93.5 % on the
    # held-out ones and 95.8 % on the repeated object (v2 alone: 82.3 / 88.4 / 77.5 / 51.0). The training pairs being
    # saturated, it was that held-out gap that called for a third stage; its options were fixed before it ran, it is
    # the only third stage tried, and its held-out score was read once, afterwards (100 %: docs/models.md). Kimi K2's
    # toy (toy-kimi-k2-v2.npz) is the same recipe run unchanged on K2's config (after its second stage: en 66.7 %)
    "v2-mla": ({"steps": 800, "batch": 8, "lr": 5e-3, "repeat_weight": 2, "soft": True},
               {"steps": 800, "batch": 8, "lr": 1e-2, "repeat_weight": 2, "soft": True},
               {"steps": 400, "batch": 8, "lr": 2e-3, "repeat_weight": 3, "soft": True}),
    # toy-k3-v1.npz (shipped before v2; one-hot targets): every-prefix greedy ko 99.6 %, en 95.5 %
    "v1": ({"steps": 300, "batch": 8, "lr": 5e-3, "repeat_weight": 1},
           {"steps": 150, "batch": 8, "lr": 3e-3, "repeat_weight": 1},
           {"steps": 300, "batch": 8, "lr": 2e-3, "repeat_weight": 3}),
}
STAGE_KEYS = ("steps", "batch", "lr", "repeat_weight", "soft")
