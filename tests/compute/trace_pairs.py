"""Walk two traces of the same prompt side by side (tests comparing two engine paths)."""


def layer_tensor_pairs(a, b):
    """Yield (layer of a, layer of b, key, tensor of a, tensor of b) for every layer tensor of every pass that is
    not None; asserts that both layers have the same keys and that a None in `a` is a None in `b`."""
    for pa, pb in zip(a.passes, b.passes):
        for la, lb in zip(pa.layers, pb.layers):
            assert la.tensors.keys() == lb.tensors.keys()
            for k, va in la.tensors.items():
                vb = lb.tensors[k]
                if va is None:
                    assert vb is None, k
                    continue
                yield la, lb, k, va, vb
