"""Qt-free rules of the experiments dock: which layers are KDA layers, which one the KDA panel shows in 3D."""
from __future__ import annotations


def is_mla_layer(layer0: int, n_layers: int = 93) -> bool:
    """K3 rule (docs/spec/k3-math.md §0): MLA at 0-based 3, 7, …, 91 and the last layer; KDA elsewhere."""
    return layer0 % 4 == 3 or layer0 == n_layers - 1


def kda_layer(trace, layer: int) -> int:
    """`layer` (0-based) when it is a KDA layer, otherwise the first KDA layer: read from the trace's layer list
    when there is one, else from K3's rule."""
    if trace is not None and trace.passes:
        layers = trace.passes[0].layers
        if 0 <= layer < len(layers) and layers[layer].mixer == "kda":
            return layer
        return next(lt.index for lt in layers if lt.mixer == "kda")
    return layer if not is_mla_layer(layer) else 0
