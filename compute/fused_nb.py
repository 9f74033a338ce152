"""The compiled (numba) CPU engine: one compiled call per pass over all layers of K3, writing every trace tensor
into per-pass buffers; the Python side only cuts the trace's views out of them (`CompiledPass`). The formulas
are the operators' (compute.ops.kda, .mla, .moe, .attnres, .norms) rearranged on compute.compiled.fused's pre-scaled plans,
as explicit loops, in compute.compiled._fused_nb_kernels (imported only here, after the cache folder is set). The
operators' layer loop (compute.engine.ToyK3.forward) stays the fallback: without numba, with K3_NO_NUMBA=1,
for configs that are not K3-shaped, and until the compiled code is in the disk cache.

Start-up API (the app must never compile on its UI thread, and the first result must not wait for a compile):

    from compute import fused_nb
    fused_nb.enabled()      # numba installed and K3_NO_NUMBA unset; imports nothing (cheap)
    fused_nb.cache_ready()  # compiled code for this numba / Python / CPU / kernel source (and float32, the
                            # engine's default dtype) is in the disk cache (a stamp written by warm_cache)
    fused_nb.warm_cache()   # compile everything into the disk cache (~30-60 s CPU on a cold cache) and write
                            # the stamp; the one warm-up entry point, app/engine/kernel_warmup.py (`k3-explorer
                            # --warm-kernels [--if-needed]`, frozen bundles too), runs it

    ToyK3(compiled=None)    # compiled only when cache_ready(its dtype), else the operators: never compiles
    m.use_compiled()        # switch to the compiled kernels later (loads from the cache, ~0.5 s incl. the
                            # numba import; compiles when the cache is cold); returns m.compiled
    m.use_compiled(False)   # back to the operators' layer loop

Disk cache (numba `cache=True`): the user cache (~/.cache/k3-explorer/numba, or under $XDG_CACHE_HOME) through
NUMBA_CACHE_DIR, set before numba is imported; never next to the code (site-packages or the checkout). The kernel is compiled per engine dtype (float32: the app; float64: the differential tests).
tests/compute/test_fused_nb.py compares every trace tensor of the compiled passes with the operators in float64.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from compute.compiled import fused_nb_layout as layout
from compute.compiled import numba_setup
from compute.compiled.fused_nb_views import LazyLayerTrace, PassBuffers, PassLayout
from compute.trace import PassTrace

_NB = None  # the kernels module, or False when numba is unavailable
_HERE = Path(__file__).resolve().parent
_KERNELS = _HERE / "compiled/_fused_nb_kernels.py"
# numba keys a cached kernel on its own source file only: a change in what it calls from the others (the shared
# loops, the layout's constants) would load stale code, so the readiness stamp covers all three and a stale stamp
# clears their cache entries in the warm-up, before its process imports the kernels (clear_stale)
_SOURCES = (_KERNELS, _HERE / "compiled/_fused_nb_math.py", _HERE / "compiled/fused_nb_layout.py")


def _stamp_name(src: str) -> str:
    """The readiness stamp's file for the kernels in folder src: one per checkout (or install), as numba's own
    cache folders are. With one shared stamp, two checkouts on one machine (a pip install and a clone, or
    several worktrees) overwrote each other's, and each warm-up found the other's, cleared and compiled anew."""
    return f"k3_fused_nb_ready_{hashlib.sha1(src.encode()).hexdigest()[:16]}.json"


_STAMP = _stamp_name(os.path.dirname(os.path.abspath(_SOURCES[0])))


def enabled() -> bool:
    """numba is installed and K3_NO_NUMBA is not set to a true value (imports nothing)."""
    if numba_setup.disabled_by_env():
        return False
    if _NB is not None:
        return bool(_NB)
    return importlib.util.find_spec("numba") is not None


def available() -> bool:
    """The compiled kernels can run: `enabled()`, and numba imports (this imports numba, ~0.3 s)."""
    global _NB
    if numba_setup.disabled_by_env():
        return False
    if _NB is None:
        numba_setup.cache_dir_setup()
        try:
            from compute.compiled import _fused_nb_kernels
        except ImportError:
            _NB = False
        else:
            _NB = _fused_nb_kernels
    return bool(_NB)


def cache_dir() -> Path:
    """Where numba's disk cache (and the readiness stamp) of the kernels lives."""
    numba_setup.cache_dir_setup()
    d = os.environ.get("NUMBA_CACHE_DIR")
    return Path(d) if d else _KERNELS.parent / "__pycache__"


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "Model", "CPU part")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _stamp() -> dict:
    """What the disk cache's validity depends on (numba keys its cache on the source file's path, mtime and size,
    the Python and numba versions and the CPU; a moved bundle or checkout keeps the mtimes, not the path)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        nb = version("numba")
    except PackageNotFoundError:
        nb = None
    return {"numba": nb, "python": sys.version.split()[0], "machine": platform.machine(), "cpu": _cpu_name(),
            "kernels": [_file_stamp(p) for p in _SOURCES]}


def _file_stamp(p: Path) -> list:
    try:
        st = p.stat()
    except OSError:  # not on disk (a bundle that archived it): the stamp still says so
        return [str(p), None, None]
    return [str(p), st.st_size, st.st_mtime_ns]


def cache_ready(dtype="float32") -> bool:
    """`enabled()` and warm_cache() has filled the disk cache for this numba, Python, CPU, kernel source and engine
    dtype (its stamp matches). Cheap: reads one small file, imports nothing heavy."""
    if not enabled():
        return False
    try:
        st = json.loads((cache_dir() / _STAMP).read_text(encoding="utf-8"))
        dtypes = st.pop("dtypes")
        return st == _stamp() and np.dtype(dtype).name in dtypes
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def warm_cache(dtypes=("float32",)) -> float:
    """Compile the pass kernel for `dtypes` (and the selection loops of compute.compiled.fast_select) into the disk cache (a
    load when it is already there) and write the readiness stamp. Returns the seconds it took; RuntimeError when numba is unavailable."""
    t0 = time.perf_counter()
    clear_stale()
    if not available():
        raise RuntimeError("numba is not installed (or K3_NO_NUMBA is set): nothing to compile")
    names = []
    for dt in dtypes:
        names.append(_warm_pass(dt))
    _warm_select()
    _warm_explain()
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / (_STAMP + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(dict(_stamp(), dtypes=names)), encoding="utf-8")
    os.replace(tmp, d / _STAMP)
    return time.perf_counter() - t0


def clear_stale() -> bool:
    """The warm-up's first step: _clear_stale, only while this process has not imported the kernels (False, and
    nothing removed, after: a clear then would remove the entries this process had just compiled and cached, so
    every second warm-up compiled again). app/engine/kernel_warmup.py calls it before its engine loads the kernels."""
    if _NB is not None or numba_setup.disabled_by_env():
        return False
    _clear_stale()
    return True


def _clear_stale() -> None:
    """Remove numba's cache entries of the kernel modules when the readiness stamp is not this source's (a kernel
    cached before a change in a function it calls from another file would load as it was). A stamp that matches
    leaves them (warm_cache then only loads). Only through clear_stale, in the warm-up, before the kernels load."""
    d = cache_dir()
    try:
        st = json.loads((d / _STAMP).read_text(encoding="utf-8"))
        st.pop("dtypes", None)
        if st == _stamp():
            return
    except (OSError, ValueError, TypeError, AttributeError):
        pass
    # numba's folder for this checkout's kernels (its _CacheLocator: the source folder's name and SHA1 of its path),
    # so that another checkout's cache stays; in it <module>.<function>-<line>.pyXY.nbi / .N.nbc
    src = os.path.dirname(os.path.abspath(_SOURCES[0]))
    sub = d / f"{os.path.basename(src)}_{hashlib.sha1(src.encode()).hexdigest()}"
    for p in sub.glob("*.nb[ic]") if sub.is_dir() else ():
        if not (p.name.startswith("_fused_nb_") or "._fused_nb_" in p.name):
            continue
        try:
            p.unlink()
        except OSError:
            pass


def _warm_explain() -> None:
    """Compile (or load) the causal explanations' MoE rows (compute.compiled._moe_rows_nb, float64, C-contiguous
    weights as compute.explain.rerun passes them) and KDA rows (the kernels' kda_rows on a float64 pass's records,
    as compute.explain.rerun._kda_rows calls it): the first causal route or patching grid then only loads them."""
    from compute.compiled._moe_rows_nb import moe_rows

    cp = _random_pass("float64")
    xn = np.zeros((2, 2, cp.D))
    inp = layout.PassInputs(xn[0], False, 0.0, False, 0.0, cp.ebias, cp.tail0, cp.S00, False, cp.ckv00, cp.kr00)
    cp.kern.kda_rows(xn, cp.kw, 0, inp, np.empty_like(xn))

    D, E, Lat, F, Fs, k = 4, 3, 2, 2, 2, 2
    r = np.random.default_rng(0)
    a = lambda *shape: np.ascontiguousarray(r.standard_normal(shape))  # noqa: E731
    out = np.empty((2, D))
    moe_rows(a(2, D), a(D, E), np.zeros(E), a(D, Lat), a(E, Lat, 2 * F), a(E, F, Lat), np.ones(Lat), a(Lat, D),
             a(D, 2 * Fs), a(Fs, D), k, 1.0, 1.0, 1.0, 1e-6, out)


def _warm_select() -> None:
    """Compile (or load) compute.compiled.fast_select's loops for both float dtypes: the expert dock's Quantile Balancing
    (float64, on the UI thread) and CPU training (float32) then only load them."""
    from compute.compiled import fast_select

    for dt in (np.float32, np.float64):
        x = np.arange(12, dtype=dt).reshape(3, 4)
        fast_select.topk_rows(x, 2)
        fast_select.kth_largest_cols(x, 1)


def _warm_pass(dtype) -> str:
    """Compile (or load) the pass kernel for `dtype` by what ToyK3's warm-up runs — a two-token prefill and a
    one-token decode with its caches — on a seeded random K3 of the engine's layout (compute.weights), built here
    without the engine (compute.engine imports this module; this one never imports it). Returns the dtype's name."""
    from compute.trace import Knobs

    cp, emb = _random_pass(dtype, True)
    _, caches, _ = cp.forward(emb[[0, 0]], np.arange(2), Knobs(), None, None)
    cp.forward(emb[[0]], np.arange(2, 3), Knobs(), caches, None)
    return np.dtype(dtype).name


def _random_pass(dtype, with_embedding: bool = False):
    """A CompiledPass over a seeded random K3 of the engine's layout in `dtype` (and its embedding table)."""
    from compute import weights
    from compute.config import load_default
    from compute.dims import ToyDims
    from compute.compiled.fused import FusedPlans

    c, d, dt = load_default(), ToyDims(), np.dtype(dtype)
    gen = np.random.default_rng(0)

    def rnd(*shape, scale=1.0):
        return np.ascontiguousarray(gen.standard_normal(shape) * scale, dt)

    def uni(n, lo, hi):
        return np.ascontiguousarray(gen.uniform(lo, hi, n), dt)

    emb, lm_head, final_norm, w_out, layers = weights.draw_layout(c, d, 4, rnd, uni)
    fz = FusedPlans(c, d, layers, w_out, dt, final_norm)
    cp = CompiledPass(fz, layers, lm_head, c, d)
    return (cp, emb) if with_embedding else cp


def supported(config) -> bool:
    """The compiled pass runs this config: every block has a fused kernel (compute.compiled.fused.supported: K3's KDA,
    gated NoPE MLA, latent MoE and Block AttnRes) and the dense layers use SiTU-GLU."""
    from compute.compiled import fused

    return fused.supported(config) and config.hidden_act == "situ_glu"


def _stack(arrays: list, tail: tuple, dt) -> np.ndarray:
    """Contiguous [n, *tail] stack (an empty [0, *tail] one for no arrays)."""
    if not arrays:
        return np.zeros((0,) + tuple(tail), dt)
    return np.ascontiguousarray(np.stack([np.asarray(a, dt) for a in arrays]))


class CompiledPass:
    """The stacked weights of one engine (from its compute.compiled.fused.FusedPlans `fz`) and its compiled pass:
    `forward(emb, positions, knobs, caches,
    bias_off)` returns what ToyK3.forward returns (pass data with the trace's dicts, new caches, logits)."""

    def __init__(self, fz, layers: list[dict], lm_head: np.ndarray, config, dims):
        if not available():
            raise RuntimeError("numba is not available")
        self.kern = _NB
        c, d = config, dims
        dt = self.dtype = fz.dtype
        P = fz.plans
        self.NL = NL = len(P)
        self.D = D = d.hidden
        self.C = fz.n_cand
        self.block = int(fz.block)
        self.Deps = float(np.array(D * fz.attn_eps, dt))  # AttnRes: D·eps of compute.ops.attnres
        self.nDeps = float(fz.c_Deps)  # RMSNorm: D·rms_norm_eps
        self.shift = bool(fz.softmax_shift)
        self.fast = dt == np.float32  # the vectorised float32 exp / tanh of the kernels
        kda = [li for li, p in enumerate(P) if "kda" in p]
        mla = [li for li, p in enumerate(P) if "mla_f" in p]
        moe = [li for li, p in enumerate(P) if "moe" in p]
        dense = [li for li in range(NL) if "mlp" in layers[li]]
        if len(kda) + len(mla) != NL or len(moe) + len(dense) != NL:
            raise ValueError("the compiled pass needs a fused kernel for every block")
        self.kda, self.mla, self.moe, self.dense = kda, mla, moe, dense
        slot = {li: i for group in (kda, mla) for i, li in enumerate(group)}
        fslot = {li: i for group in (moe, dense) for i, li in enumerate(group)}
        self.mkind = np.array([0 if "kda" in p else 1 for p in P], np.int64)
        self.fkind = np.array([1 if "moe" in p else 0 for p in P], np.int64)
        self.mslot = np.array([slot[li] for li in range(NL)], np.int64)
        self.fslot = np.array([fslot[li] for li in range(NL)], np.int64)
        self.norm_mix = _stack([p["norm_mixer"] for p in P], (D,), dt)
        self.norm_ffn = _stack([p["norm_ffn"] for p in P], (D,), dt)
        self.w_attn = _stack([p["w_attn"] for p in P], (D,), dt)
        self.w_mlp = _stack([p["w_mlp"] for p in P], (D,), dt)
        self.w_out = np.ascontiguousarray(fz.w_out, dt)
        self.final_norm = np.ascontiguousarray(fz.final_norm, dt)
        self.lm_head = np.ascontiguousarray(lm_head, dt)
        # KDA
        H, Kd = d.kda_heads, d.kda_head_dim
        self.H, self.Kd, self.HK, self.Vk, self.Kc = H, Kd, H * Kd, Kd, d.conv
        kp = [P[li]["kda"] for li in kda]
        self.kW = _stack([p["W"] for p in kp], (D, 0), dt)
        self.kgbias = _stack([p["gbias"] for p in kp], (0,), dt)
        self.kconv = _stack([p["conv"] for p in kp], (3 * H * Kd, d.conv), dt)
        self.kgscale = _stack([p["gscale"] for p in kp], (0,), dt)
        self.konorm = _stack([p["o_norm"] for p in kp], (Kd,), dt)
        self.ko = _stack([p["o"] for p in kp], (H * Kd, D), dt)
        self.kVeps = float(np.array(Kd * fz.eps, dt))
        self.kscale = float(fz.kscale)
        # MLA
        self.mH, self.ql, self.kl, self.r, self.nope, self.dv = d.mla_heads, d.q_lora, d.kv_lora, d.rope, d.nope, d.v
        mp = [P[li]["mla_f"] for li in mla]
        self.mW = _stack([p["W"] for p in mp], (D, 0), dt)
        self.mqan = _stack([p["q_a_norm"] for p in mp], (d.q_lora,), dt)
        self.mqb = _stack([p["q_b"] for p in mp], (d.q_lora, d.mla_heads * (d.nope + d.rope)), dt)
        self.mkvan = _stack([p["kv_a_norm"] for p in mp], (d.kv_lora,), dt)
        self.mkvb = _stack([p["kv_b"] for p in mp], (d.kv_lora, d.mla_heads * (d.nope + d.v)), dt)
        self.mo = _stack([p["o"] for p in mp], (d.mla_heads * d.v, D), dt)
        self.mcq = float(np.array(d.q_lora * fz.eps, dt))
        self.mckv = float(np.array(d.kv_lora * fz.eps, dt))
        self.msc = float(np.array(1.0 / np.sqrt(d.nope + d.rope), dt))
        # MoE
        ep = [P[li]["moe"] for li in moe]
        self.E = c.n_routed_experts
        self.top_k = c.num_experts_per_tok
        self.L, self.F, self.Fs = (ep[0]["L"], ep[0]["F"], ep[0]["Fs"]) if ep else (d.latent, d.expert_width, 0)
        self.eW = _stack([p["W"] for p in ep], (D, 0), dt)
        self.eexp = _stack([p["experts"] for p in ep], (self.E, 0), dt)
        for i, p in enumerate(ep):  # the plans share the stacked table (no second copy of the experts)
            p["experts"] = self.eexp[i]
        self.ebias = _stack([p["bias"] for p in ep], (self.E,), dt)
        self.enorm = _stack([p["norm"] for p in ep], (self.L,), dt)
        self.eup = _stack([p["up"] for p in ep], (self.L, D), dt)
        self.esh2 = _stack([p["shared2"] for p in ep], (self.Fs, D), dt)
        self.rsf = float(c.routed_scaling_factor)
        self.Leps = float(np.array(self.L * fz.eps, dt))
        # dense
        dw = [layers[li]["mlp"] for li in dense]
        self.I = d.dense_width
        self.dgate = _stack([w["gate"] for w in dw], (D, self.I), dt)
        self.dup = _stack([w["up"] for w in dw], (D, self.I), dt)
        self.ddown = _stack([w["down"] for w in dw], (self.I, D), dt)
        self.b1, self.b2 = float(c.situ_glu_beta1), float(c.situ_glu_beta2)
        # start values (no cache) and the stored-block counts of every layer's two AttnRes calls
        self.tail0 = np.zeros((len(kda), self.Kc - 1, 3 * self.HK), dt)
        self.S00 = np.zeros((len(kda), H, Kd, Kd), dt)
        self.ckv00 = np.zeros((len(mla), 0, self.kl), dt)
        self.kr00 = np.zeros((len(mla), 0, self.r), dt)
        n_before, n_after, n = [], [], 0
        for li in range(NL):
            n_before.append(n)
            n += li % self.block == 0
            n_after.append(n)
        self.n_final = n
        order = list(zip(self.mkind.tolist(), self.mslot.tolist(), self.fkind.tolist(), self.fslot.tolist(),
                         n_before, n_after))
        self._records()
        self.layout = PassLayout(order, self.size, n)

    def _records(self) -> None:
        """The kernel's typed records (compute.compiled.fused_nb_layout) over the stacked weights, and the column starts
        of every buffer from the layout's tables; the plans' projection widths must be the tables' (checked)."""
        self.size = size = {
            "D": self.D, "C": self.C, "H": self.H, "HK": self.HK, "HVk": self.H * self.Vk, "ql": self.ql,
            "kl": self.kl, "r": self.r, "kvr": self.kl + self.r, "HVm": self.mH * self.dv,
            "Hq": self.mH * (self.nope + self.r), "Hkv": self.mH * (self.nope + self.dv), "E": self.E, "L": self.L,
            "Fs3": 3 * self.Fs, "k": self.top_k, "kL": self.top_k * self.L, "I": self.I,
            "vocab": self.lm_head.shape[1]}
        cols = {name: layout.starts(t, size) for name, t in layout.TABLES.items()}
        for name, W, first in (("KB", self.kW, layout.KB_AT.kda_q_conv), ("MB", self.mW, layout.MB_AT.mla_q_a_norm),
                               ("EB", self.eW, layout.EB_AT.moe_router)):
            if W.shape[0] and W.shape[2] != cols[name][first]:
                raise ValueError(f"the {name} plan's projection has {W.shape[2]} columns, the layout {cols[name][first]}")
        self.widths = {name: int(c[-1]) for name, c in cols.items()}
        self.pw = layout.PassWeights(self.mkind, self.mslot, self.fkind, self.fslot, self.norm_mix, self.norm_ffn,
                                     self.w_attn, self.w_mlp, self.w_out, self.final_norm, self.lm_head, self.block,
                                     self.Deps, self.nDeps, self.shift, self.fast, cols["CB"], cols["FB"])
        self.kw = layout.KDAWeights(self.kW, self.kgbias, self.kconv, self.kgscale, self.konorm, self.ko, self.kVeps,
                                    self.kscale, self.H, self.Kd, cols["KB"])
        self.mw = layout.MLAWeights(self.mW, self.mqan, self.mcq, self.mqb, self.mkvan, self.mckv, self.mkvb, self.mo,
                                    self.msc, self.mH, self.ql, self.kl, self.r, self.nope, self.dv, cols["MB"],
                                    cols["SB"])
        self.ew = layout.MoEWeights(self.eW, self.eexp, self.enorm, self.eup, self.esh2, self.E, self.L, self.F,
                                    self.Fs, self.top_k, self.rsf, self.Leps, cols["EB"])
        self.dw = layout.DenseWeights(self.dgate, self.dup, self.ddown, self.b1, self.b2, cols["DB"])

    # ------------------------------------------------------------------ one pass
    def forward(self, emb: np.ndarray, positions: np.ndarray, knobs, caches, bias_off):
        """ToyK3.forward's result: (pass data with every layer's trace dict, new caches, logits)."""
        pb = self._run(emb, knobs, caches, bias_off)
        layer_data = self.layout.layers(pb)
        data = {"positions": positions, "embedding": emb, "layers": layer_data, "final": pb.final()}
        return data, pb.caches(), data["final"]["lm_head"]

    def pass_trace(self, emb: np.ndarray, positions: np.ndarray, knobs, caches, bias_off, kind: str, config):
        """(PassTrace, new caches) of one pass: as compute.engine's _pass_to_numpy of forward's data, but each
        LayerTrace cuts its tensor views out of the pass buffers on first access (most readers look at a few
        layers: creating ~3,300 views per pass up front costs more than the compiled pass itself)."""
        pb = self._run(emb, knobs, caches, bias_off)
        layers = []
        new, cls = object.__new__, LazyLayerTrace
        for li, mixer, ffn in zip(range(self.NL), config.mixer_types, config.ffn_types):
            o = new(cls)
            o.__dict__.update(index=li, mixer=mixer, ffn=ffn, _pb=pb, _t=None)
            layers.append(o)
        ps = PassTrace(kind=kind, positions=positions, embedding=emb, layers=layers, final=pb.final())
        ps._nb_caches = new = pb.caches()  # the caches after this pass (ToyK3._caches_from_trace takes them)
        return ps, new

    def _run(self, emb: np.ndarray, knobs, caches, bias_off) -> "PassBuffers":
        T, D, C, dt = emb.shape[0], self.D, self.C, self.dtype
        nK, nM, nE, nD = len(self.kda), len(self.mla), len(self.moe), len(self.dense)
        if caches is None:
            tail0, S0, has, ckv0, kr0 = self.tail0, self.S00, False, self.ckv00, self.kr00
        else:
            tail0, S0, ckv0, kr0 = self._stacked(caches)
            has = True
        S = ckv0.shape[1] + T
        w = self.widths
        CB = np.empty((self.NL, T, w["CB"]), dt)
        Vb = np.empty((T, C, D), dt)
        Den = np.empty((T, C), dt)
        KB = np.empty((nK, T, w["KB"]), dt)
        KS = np.empty((nK, self.H, self.Kd, self.Vk), dt)
        Ktail = np.empty((nK, self.Kc - 1, 3 * self.HK), dt)
        MB = np.empty((nM, T, w["MB"]), dt)
        MSB = np.empty((nM, S, w["SB"]), dt)
        MSC = np.empty((nM, 2, self.mH, T, S), dt)
        EB = np.empty((nE, T, w["EB"]), dt)
        Eidx = np.empty((nE, T, self.top_k), np.intp)
        DB = np.empty((nD, T, w["DB"]), dt)
        FB = np.empty((T, w["FB"]), dt)
        ebias = self.ebias if bias_off is None else self.ebias + bias_off
        a, b = knobs.alpha, knobs.beta
        inp = layout.PassInputs(emb, a is not None, 0.0 if a is None else float(a), b is not None,
                                0.0 if b is None else float(b), ebias, tail0, S0, has, ckv0, kr0)
        self.kern.pass_into(self.pw, self.kw, self.mw, self.ew, self.dw, inp,
                            layout.PassOutputs(CB, Vb, Den, KB, KS, Ktail, MB, MSB, MSC, EB, Eidx, DB, FB))
        bias_ro = ebias.view()
        bias_ro.setflags(write=False)  # the trace's 'moe.bias' is read-only (the kernel's array stays writable)
        return PassBuffers(self.layout, T, CB, KB, KS, Ktail, MB, MSB, MSC, EB, Eidx, bias_ro, DB, FB)

    def owns(self, caches) -> bool:
        """`caches` came from a compiled pass with this one's stacked layout and dtype (so it can take them)."""
        st = getattr(caches, "stacked", None)
        return (st is not None and st[0].dtype == self.dtype and st[0].shape == (len(self.kda),) + self.tail0.shape[1:]
                and st[2].shape[0] == len(self.mla) and st[2].shape[2] == self.widths["SB"])

    def _stacked(self, caches) -> tuple:
        """(conv tails [nK, Kc-1, 3HK], states [nK, H, K, V], c_kv [nM, S0, kl], k_rope [nM, S0, r]) of a cache
        list: from the previous compiled pass as they are, else stacked from the per-layer dicts."""
        kl, r = self.kl, self.r
        if self.owns(caches):
            Ktail, KS, MSB = caches.stacked
            sp = self.layout.span["SB"]
            return (Ktail, KS, np.ascontiguousarray(MSB[:, :, slice(*sp["mla.c_kv"])]),
                    np.ascontiguousarray(MSB[:, :, slice(*sp["mla.k_rope"])]))
        dt = self.dtype
        return (_stack([caches[li]["conv"] for li in self.kda], self.tail0.shape[1:], dt),
                _stack([caches[li]["state"] for li in self.kda], self.S00.shape[1:], dt),
                _stack([caches[li]["c_kv"] for li in self.mla], (0, kl), dt),
                _stack([caches[li]["k_rope"] for li in self.mla], (0, r), dt))
