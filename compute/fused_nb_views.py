"""The trace side of compute.fused_nb's compiled pass: the buffers one pass wrote (PassBuffers), the column layout
that cuts a layer's trace dict out of them (PassLayout, copied from the CompiledPass so that kept traces do not
keep its stacked weights), the LayerTrace that cuts its tensors on first access (LazyLayerTrace) and the per-layer
caches as views (PassCaches). No numba here."""
from __future__ import annotations

from collections.abc import Sequence

from compute.trace import LayerTrace


class PassLayout:
    """What cutting a pass's trace views needs (column ranges, layer order, sizes): the pass buffers keep this,
    not the CompiledPass, so that traces kept after an engine is replaced do not keep its stacked weights."""

    def __init__(self, cp):
        for name in ("NL", "D", "C", "kl", "r", "top_k", "L", "n_final", "_order", "_cols", "_experts_cols"):
            setattr(self, name, getattr(cp, name))

    def _layer(self, pb: "PassBuffers", li: int) -> dict:
        """The trace dict of layer li alone (views into the pass buffers)."""
        mk, ms, fk, fs, nb, na = self._order[li]
        D, C, kl, r = self.D, self.C, self.kl, self.r
        cb = pb.CB[li]
        t = {"attnres.mixer": cb[:, 5 * D:5 * D + nb + 1] if nb else None, "attnres.mixer.out": cb[:, :D],
             "norm.mixer": cb[:, D:2 * D], "attnres.ffn": cb[:, 5 * D + C:5 * D + C + na + 1],
             "attnres.ffn.out": cb[:, 2 * D:3 * D], "norm.ffn": cb[:, 3 * D:4 * D], "residual": cb[:, 4 * D:5 * D]}
        if mk == 0:
            kb = pb.KB[ms]
            for key, a, b in self._cols[0]:
                t[key] = kb[:, a:b]
            t["kda.state"] = pb.KS[ms]
            t["mixer.out"] = t["kda.o_proj"]
        else:
            mb, sb, sc = pb.MB[ms], pb.MSB[ms], pb.MSC[ms]
            for key, a, b in self._cols[1]:
                t[key] = mb[:, a:b]
            t.update({"mla.c_kv": sb[:, :kl], "mla.k_rope": sb[:, kl:kl + r], "mla.kv_b": sb[:, kl + r:],
                      "mla.scores": sc[0], "mla.softmax": sc[1], "mixer.out": t["mla.o_proj"]})
        if fk == 1:
            eb = pb.EB[fs]
            for key, a, b in self._cols["moe"]:
                t[key] = eb[:, a:b]
            a, b = self._experts_cols
            t.update({"moe.experts": eb[:, a:b].reshape(pb.T, self.top_k, self.L), "moe.topk_idx": pb.Eidx[fs],
                      "moe.bias": pb.bias[fs]})
        else:
            db = pb.DB[fs]
            for key, a, b in self._cols["dense"]:
                t[key] = db[:, a:b]
        return t


class PassBuffers:
    """The buffers one compiled pass wrote (every trace tensor of the pass lives in them)."""

    def __init__(self, cp: PassLayout, T, CB, KB, KS, Ktail, MB, MSB, MSC, EB, Eidx, bias, DB, FB):
        self.cp, self.T, self.CB, self.KB, self.KS, self.Ktail = cp, T, CB, KB, KS, Ktail
        self.MB, self.MSB, self.MSC, self.EB, self.Eidx, self.bias, self.DB, self.FB = MB, MSB, MSC, EB, Eidx, bias, DB, FB

    def final(self) -> dict:
        cp, FB = self.cp, self.FB
        D, C = cp.D, cp.C
        return {"final.attnres": FB[:, D:D + cp.n_final + 1], "final.norm": FB[:, D + C:2 * D + C],
                "lm_head": FB[:, 2 * D + C:]}

    def caches(self) -> "PassCaches":
        return PassCaches(self)


class LazyLayerTrace(LayerTrace):
    """A LayerTrace whose `tensors` dict is cut from its pass's buffers on first access (then kept)."""

    @property
    def tensors(self) -> dict:
        t = self.__dict__["_t"]
        if t is None:
            t = self.__dict__["_t"] = self._pb.cp._layer(self._pb, self.index)
        return t

    @tensors.setter
    def tensors(self, value: dict) -> None:
        self.__dict__["_t"] = value


class PassCaches(Sequence):
    """The caches after a compiled pass: per layer (index) the cache dict of its mixer — views into the pass's
    buffers, made on access —, and `stacked`, the buffers the next compiled pass takes as they are."""

    def __init__(self, pb: PassBuffers):
        self._pb = pb
        self.stacked = (pb.Ktail, pb.KS, pb.MSB)

    def __len__(self) -> int:
        return self._pb.cp.NL

    def __getitem__(self, li):
        if isinstance(li, slice):
            return [self[i] for i in range(*li.indices(len(self)))]
        pb, cp = self._pb, self._pb.cp
        mk, ms = cp._order[li][:2]
        if mk == 0:
            return {"conv": pb.Ktail[ms], "state": pb.KS[ms]}
        kl, r = cp.kl, cp.r
        return {"c_kv": pb.MSB[ms, :, :kl], "k_rope": pb.MSB[ms, :, kl:kl + r]}


__all__ = ["PassLayout", "PassBuffers", "LazyLayerTrace", "PassCaches"]
