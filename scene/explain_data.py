"""What the 3D view draws of an explanation, as plain data (Qt-free: app/engine/explain_service.py builds it without
a display); scene/explain_overlay.py draws it."""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from scene import route_glow

__all__ = ["ExplainOverlay"]


@dataclass(frozen=True)
class ExplainOverlay:
    """position / piece: the explained position (0-based) and its token; word: the piece predicted there.
    lens: (layer, top_word, top_prob, word_rank, word_prob) per reading (layer 0 = the embedding), or () when
    the lens column is off. route: (layer, part, value) direct contributions or causal knock-out effects, or ()
    when the route is off; threshold: the absolute |value| from which a direct-effect block glows, or the causal
    route's share of the largest effect (route_set then names the lit blocks)."""

    position: int
    piece: str
    word: str
    lens: tuple = ()
    route: tuple = ()
    threshold: float = 0.0
    logit: float = 0.0
    attention: tuple = ()  # per layer (1-based: index ℓ-1), what the position reads at each position 0..position
    # per head [H][T] (KDA's implicit A or MLA's softmax), or () when the arcs are off
    knockout: tuple = ()  # the active knock-out's items (scene/knockout_marks.py), or ()
    after: tuple = ()  # with a knock-out: (mode, word after, its probability, the word's probability after, the
    # word's logit after, the word's probability before)
    n_tokens: int = 0  # positions 0..position: the lanes of the embedding slab
    route_kind: str = ""  # "causal" (route = knock-out effects, shares of the answer's margin) | "direct" (direct
    # effects, not causal) | "" (no route)
    lanes: tuple = ()  # causal: the residual patching grid [L+1][T] (row 0 = the embedding): restored fraction
    decided_at: int | None = None  # causal: the layer from which the last position alone restores the answer
    largest: float = 0.0  # causal: the largest block effect (a spread-out route says how far it got)
    computing: bool = False  # causal: the route's knock-outs are still being computed (off the UI thread)
    route_set: tuple | None = None  # causal: the route's (layer, part) blocks at the threshold (compute.explain's
    # causal_route: what lights; () when spread out); None: lit by |value| ≥ threshold (direct effects)
    units: object = field(default=None, compare=False)  # scene.effect_cells.UnitEffects: the heads' and experts'
    # total effects lit in the exploded layer (issue 39.5), or None when not asked for
    extra: dict = field(default_factory=dict, compare=False)

    @functools.cached_property  # computed once per overlay (the header, the stack colours and the lines read it)
    def lit(self) -> dict:
        if not self.route:
            return {}
        if self.route_set is not None:
            values = route_glow.block_values(self.route)
            return {(int(ly), str(pt)): (1 if values.get((int(ly), str(pt)), 0.0) >= 0 else -1)
                    for ly, pt in self.route_set}
        return route_glow.lit_blocks(self.route, self.threshold)
