"""Qt-free rule of the experiments dock: which layer the KDA panel shows in 3D."""
from __future__ import annotations

from compute.config import default_config


def kda_layer(trace, layer: int) -> int:
    """`layer` (0-based) when it is a KDA layer, otherwise the first KDA layer: read from the trace's layer list
    when there is one, else from K3's config (compute.config, the one source of the layer kinds)."""
    if trace is not None and trace.passes:
        layers = trace.passes[0].layers
        if 0 <= layer < len(layers) and layers[layer].mixer == "kda":
            return layer
        return next(lt.index for lt in layers if lt.mixer == "kda")
    mixers = default_config().mixer_types
    return layer if 0 <= layer < len(mixers) and mixers[layer] == "kda" else mixers.index("kda")
