"""The trace side of compute.fused_nb's compiled pass: the buffers one pass wrote (PassBuffers), the column spans
that cut a layer's trace dict out of them (PassLayout: compute.compiled.fused_nb_layout's tables for one model, kept
apart from the CompiledPass so that kept traces do not keep its stacked weights), the LayerTrace that cuts its tensors on first access (LazyLayerTrace) and the per-layer
caches as views (PassCaches). No numba here."""
from __future__ import annotations

from collections.abc import Sequence

from compute.compiled import fused_nb_layout as layout
from compute.trace import LayerTrace


class PassLayout:
    """What cutting a pass's trace views needs — the column spans of compute.compiled.fused_nb_layout's tables for one
    model, the layer order, the AttnRes candidate counts —: the pass buffers keep this, not the CompiledPass, so
    that traces kept after an engine is replaced do not keep its stacked weights.

    order: per layer (mixer kind 0 KDA / 1 MLA, its slot, FFN kind 0 dense / 1 MoE, its slot, AttnRes candidates
    stored before the layer, after it); size: the widths the tables name; n_final: candidates of the final mix."""

    def __init__(self, order: list[tuple], size: dict, n_final: int):
        self.NL, self.order, self.size, self.n_final = len(order), order, size, n_final
        self.D, self.C, self.top_k, self.L = size["D"], size["C"], size["k"], size["L"]
        self.span = {name: {n: layout.span(t, size, n) for n, _ in t} for name, t in layout.TABLES.items()}
        self.experts = self.span["EB"]["moe.experts"]  # reshaped to [T, k, L]: not a plain column view
        self.cols = {0: layout.views(layout.KB, size), 1: layout.views(layout.MB, size),
                     "moe": [v for v in layout.views(layout.EB, size) if v[0] != "moe.experts"],
                     "dense": layout.views(layout.DB, size) + [("ffn.out",) + self.span["DB"]["mlp.down"]]}
        self.sb = layout.views(layout.SB, size)
        # every layer's key order (common | mixer | FFN), as _views zips them
        kda_keys = [n for n, _, _ in self.cols[0]] + ["kda.state", "mixer.out"]
        mla_keys = ([n for n, _, _ in self.cols[1]] + [n for n, _, _ in self.sb]
                    + ["mla.scores", "mla.softmax", "mixer.out"])
        moe_keys = [n for n, _, _ in self.cols["moe"]] + ["moe.experts", "moe.topk_idx", "moe.bias"]
        dense_keys = [n for n, _, _ in self.cols["dense"]]
        self.keys = [tuple(list(_COMMON) + (kda_keys if mk == 0 else mla_keys) + (moe_keys if fk == 1 else dense_keys))
                     for mk, _, fk, _, _, _ in order]
        # runs of layers with the same number of AttnRes candidates: one slice of CB per run
        self.runs = {}
        for which, col in (("before", 4), ("after", 5)):
            runs, lo = [], 0
            for li in range(1, self.NL + 1):
                if li == self.NL or order[li][col] != order[lo][col]:
                    runs.append((lo, li, order[lo][col]))
                    lo = li
            self.runs[which] = runs

    def _common(self, cb, nb: int, na: int) -> dict:
        """The layer-wide tensors of one layer's CB rows (AttnRes weights cut to the candidates it had)."""
        sp = self.span["CB"]
        t = {k: cb[..., a:b] for k, (a, b) in sp.items() if k not in ("attnres.mixer", "attnres.ffn")}
        a = sp["attnres.mixer"][0]
        t["attnres.mixer"] = cb[..., a:a + nb + 1] if nb else None
        a = sp["attnres.ffn"][0]
        t["attnres.ffn"] = cb[..., a:a + na + 1]
        return t

    def layer(self, pb: "PassBuffers", li: int) -> dict:
        """The trace dict of layer li alone (views into the pass buffers)."""
        mk, ms, fk, fs, nb, na = self.order[li]
        t = self._common(pb.CB[li], nb, na)
        if mk == 0:
            kb = pb.KB[ms]
            for key, a, b in self.cols[0]:
                t[key] = kb[:, a:b]
            t["kda.state"] = pb.KS[ms]
            t["mixer.out"] = t["kda.o_proj"]
        else:
            mb, sb, sc = pb.MB[ms], pb.MSB[ms], pb.MSC[ms]
            for key, a, b in self.cols[1]:
                t[key] = mb[:, a:b]
            for key, a, b in self.sb:
                t[key] = sb[:, a:b]
            t.update({"mla.scores": sc[0], "mla.softmax": sc[1], "mixer.out": t["mla.o_proj"]})
        if fk == 1:
            eb = pb.EB[fs]
            for key, a, b in self.cols["moe"]:
                t[key] = eb[:, a:b]
            a, b = self.experts
            t.update({"moe.experts": eb[:, a:b].reshape(pb.T, self.top_k, self.L), "moe.topk_idx": pb.Eidx[fs],
                      "moe.bias": pb.bias[fs]})
        else:
            db = pb.DB[fs]
            for key, a, b in self.cols["dense"]:
                t[key] = db[:, a:b]
        return t

    def layers(self, pb: "PassBuffers") -> list[dict]:
        """The trace dict of every layer (all at once): one list of views per key (C-speed iteration over the
        stacked buffer), zipped into the layer dicts; the same views as `layer`."""
        T, CB, EB = pb.T, pb.CB, pb.EB
        cols = self.cols
        kda = [list(pb.KB[:, :, a:b]) for _, a, b in cols[0]]
        kda += [list(pb.KS), kda[-1]]
        mla = [list(pb.MB[:, :, a:b]) for _, a, b in cols[1]] + [list(pb.MSB[:, :, a:b]) for _, a, b in self.sb]
        mla += [list(pb.MSC[:, 0]), list(pb.MSC[:, 1]), mla[len(cols[1]) - 1]]
        a, b = self.experts
        moe = [list(EB[:, :, a:b]) for _, a, b in cols["moe"]]
        moe += [list(EB[:, :, a:b].reshape(EB.shape[0], T, self.top_k, self.L)), list(pb.Eidx), list(pb.bias)]
        dense = [list(pb.DB[:, :, a:b]) for _, a, b in cols["dense"]]
        mix = {0: list(zip(*kda)), 1: list(zip(*mla))}
        ffn = {1: list(zip(*moe)), 0: list(zip(*dense))}
        sp = self.span["CB"]
        aw = {}
        for which, key in (("before", "attnres.mixer"), ("after", "attnres.ffn")):
            a, out = sp[key][0], []
            for lo, hi, n in self.runs[which]:
                out += list(CB[lo:hi, :, a:a + n + 1]) if n or which == "after" else [None] * (hi - lo)
            aw[key] = out
        common = zip(*[aw[k] if k in aw else list(CB[:, :, sp[k][0]:sp[k][1]]) for k in _COMMON])
        return [dict(zip(keys, ct + mix[mk][ms] + ffn[fk][fs]))
                for keys, ct, (mk, ms, fk, fs, _, _) in zip(self.keys, common, self.order)]


# the layer-wide keys of every layer's trace dict, in the order of its key tuple
_COMMON = ("attnres.mixer", "attnres.mixer.out", "norm.mixer", "attnres.ffn", "attnres.ffn.out", "norm.ffn", "residual")


class PassBuffers:
    """The buffers one compiled pass wrote (every trace tensor of the pass lives in them)."""

    def __init__(self, cp: PassLayout, T, CB, KB, KS, Ktail, MB, MSB, MSC, EB, Eidx, bias, DB, FB):
        self.cp, self.T, self.CB, self.KB, self.KS, self.Ktail = cp, T, CB, KB, KS, Ktail
        self.MB, self.MSB, self.MSC, self.EB, self.Eidx, self.bias, self.DB, self.FB = MB, MSB, MSC, EB, Eidx, bias, DB, FB

    def final(self) -> dict:
        sp, FB = self.cp.span["FB"], self.FB
        a = sp["final.attnres"][0]
        return {"final.attnres": FB[:, a:a + self.cp.n_final + 1], "final.norm": FB[:, slice(*sp["final.norm"])],
                "lm_head": FB[:, slice(*sp["lm_head"])]}

    def caches(self) -> "PassCaches":
        return PassCaches(self)


class LazyLayerTrace(LayerTrace):
    """A LayerTrace whose `tensors` dict is cut from its pass's buffers on first access (then kept)."""

    @property
    def tensors(self) -> dict:
        t = self.__dict__["_t"]
        if t is None:
            t = self.__dict__["_t"] = self._pb.cp.layer(self._pb, self.index)
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
        mk, ms = cp.order[li][:2]
        if mk == 0:
            return {"conv": pb.Ktail[ms], "state": pb.KS[ms]}
        sp = cp.span["SB"]
        return {"c_kv": pb.MSB[ms, :, slice(*sp["mla.c_kv"])], "k_rope": pb.MSB[ms, :, slice(*sp["mla.k_rope"])]}


__all__ = ["PassLayout", "PassBuffers", "LazyLayerTrace", "PassCaches"]
