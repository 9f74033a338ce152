"""Why this word: logit lens, KDA's implicit attention, contribution routes and knock-outs for the toy K3
(compute-only, no Qt). See `compute.explain.explanation.Explanation` and docs/spec/k3-math.md §7-§10."""
from compute.explain.contributions import Contribution, Route, direct_contributions
from compute.explain.explanation import Explanation, Source
from compute.explain.kda_attention import implicit_attention, kda_output, layer_attention
from compute.explain.knockout import Ablation, make_ablation, prefill
from compute.explain.lens import Lens, LensEntry, logit_lens
from compute.explain.patching import Patching, patch
from compute.explain.causal_route import CausalRoute

__all__ = ["Explanation", "Source", "Contribution", "Route", "direct_contributions", "implicit_attention",
           "kda_output", "layer_attention", "Ablation", "make_ablation", "prefill", "Lens", "LensEntry", "logit_lens", "Patching", "patch", "CausalRoute"]
