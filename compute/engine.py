"""ToyK3: all 93 layers of Kimi K3 in the real order with the real operators, at toy width.

    from compute.engine import ToyK3
    m = ToyK3()                        # K3 config, seed 0, CUDA if available
    tr = m.run("모델은 다음 토큰을", max_new_tokens=4, knobs=Knobs(temperature=0.7))
    tr2 = m.resample(tr, Knobs(temperature=0.7, top_p=0.5))   # no layer re-run unless a token changes

Toy sizes (`ToyDims`): hidden 8; KDA 2 heads × 4; MLA 2 heads, q_lora 4, kv_lora 3, nope 4, rope 2, v 4;
MoE with the REAL expert count and top-k of the config (896 / 16 for K3), 2 shared, latent 4, expert width 4;
dense MLP width 16; a toy vocabulary of 117 pieces (compute.language.tokenizer, honestly labelled) whose IDs lie in the
real vocab range.

Weights (`weights=`): "trained" (the default) loads the shipped asset assets/weights/toy-k3-v2.npz, trained by
`python -m compute.training.train` on the small bilingual language of compute.language.task (robots, cups, tables; particles,
verb endings, an object repeated from the sentence before), so "로봇이 컵을" continues grammatically at
temperature 0; it is used when the config, toy dims and vocabulary match the file, otherwise the engine falls
back to random weights and `weights_note` says why. "random" draws them from numpy's default_rng(seed) in
float64 (then cast), so the same seed gives the same model on every device, dtype and backend. Either way
`weights_name` and every Trace's `weights_name` say which ones produced the numbers. Other configs of the family (Kimi Linear, K2,
DeepSeek-V3) run with their own layer order, expert counts, routing groups, gate form, activation and
residual path (plain residual without AttnRes; for a non-latent MoE the keys 'moe.down', 'moe.norm' and
'moe.up' are absent).

Around the engine: compute.device (device and dtype resolution), compute.weights (the weight layout and the
weights file), compute.engine_weights (which weights run: trained or seeded random, and why), compute.engine_io
(the prompt and knob checks, the pass data → PassTrace conversion, caches rebuilt from a trace); this module keeps
the kernel choice, the layer loop (`forward`), run / resample and the caches.

The result is a `compute.trace.Trace` (numpy on the CPU); see that module for every field. Weight arrays in
the trace (and 'moe.bias') are read-only views of the engine's weights.

Caches: KDA keeps, per layer, the short-conv tail (3 rows) and the state S [H, K, V] (constant size); MLA keeps
the latent c_kv [S, kv_lora] and k_rope [S, rope] (one row more per token). `resample` rebuilds them from the
trace itself, so a trace is all it needs.

Backends: on a CPU device the layers run on numpy arrays (`backend="auto"`) and torch is neither needed nor
imported (weights, embeddings, layers and sampling are numpy); on CUDA they run on torch tensors (torch is
imported then; without it `ToyK3(device="cuda")` raises ImportError with the install hint). Per-layer work is a
few dozen ops on 8-wide arrays, so per-op overhead dominates, and a numpy ufunc costs a fraction of a torch
dispatch; the trace then needs no conversion. ONE layer loop (`forward`) serves every backend and config, and
it runs the operators (compute.ops.kda, .mla, .moe, .norms, and compute.ops.attnres's BlockAttnRes or the plain residual;
compute.ops.xp spells the few operations the two libraries name differently): they are the reference, also run by
training. The optimised CPU tier is the compiled pass below; the layer loop runs where it does not (numba
missing or not warmed up yet, K3_NO_NUMBA=1, other configs, the torch backend, knock-out hooks). float64 runs
of the two backends agree to ~1e-8 of each tensor's scale (the toy amplifies float64 rounding about a millionfold over 93 layers × 4 passes). In
float32 the toy is chaotic: a rounding difference (the two libraries round exp and sums differently) flips a
near-tied top-k choice somewhere in the 92 routed layers and the difference grows — float32 logits of either
backend differ from the float64 run by up to a few units for many prompts, and the two float32 backends differ
from each other as much, so sampled tokens can differ. `backend="torch"` reproduces the torch results bit for
bit.
Compiled pass (compute.fused_nb, numba): on numpy with kernels="auto" and a K3-shaped config, each pass can run
as ONE compiled call over all layers, on compute.compiled.fused's pre-scaled plans, with every trace tensor written
into per-pass buffers whose views the trace's LayerTraces cut on first access (`compiled`: None = only when
numba's disk cache is ready, so a constructor never compiles; True; False). `use_compiled()` switches an engine.
In float32 it uses vectorised exp / tanh approximations within a few float32 ulps, so its float32 numbers differ
from the operators' by float rounding (and, as between any two float32 paths, can grow over 93 layers);
in float64 it equals the operators to ~1e-12 (tests/compute/test_fused_nb.py).
Speed: see bench/engine.py (compiled: a full run ~8-14 ms on a busy 2-core machine, ~15x less than the
operator loop).
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from compute import fused_nb
from compute import weights as weights_io
from compute.ops.attnres import BlockAttnRes, PlainResidual
from compute.config import ModelConfig, load_default
from compute.device import TORCH_HINT, Device, float_dtype, import_torch, resolve_device  # noqa: F401 - re-exported
from compute.dims import OpArgs, ToyDims  # ToyDims re-exported: the toy widths live in compute.dims (torch-free)
from compute.engine_io import (caches_from_trace, check_knobs, check_prompt_text, linear_weights_numpy,
                               pass_to_numpy)
from compute.engine_weights import SEED_MASK, ToyWeights, choose_weights, dims_dict, trained_weights  # noqa: F401
from compute.engine_weights import SHARED_LOCK, config_key
from compute.guards.finite import NonFiniteError, check_pass  # noqa: F401 - NonFiniteError: what a run may raise
from compute.compiled.fused import FusedPlans
from compute.ops.kda import kda_layer
from compute.ops.mla import mla_layer
from compute.ops.moe import dense_mlp, latent_moe
from compute.ops.norms import rms_norm
from compute.ops.sampling import pass_uniforms, sample_logits
from compute.language.tokenizer import ToyTokenizer
from compute.trace import Knobs, PassTrace, Trace
from compute.weights import WeightsError, WeightsMismatch, WeightsMissing  # noqa: F401 - what a load may raise

MAX_PROMPT_TOKENS = 256
MAX_NEW_TOKENS = 64


class ToyK3:
    """The toy-width K3 engine. See the module docstring."""

    def __init__(self, config: ModelConfig | None = None, seed: int = 0, device="auto",
                 dtype="float32", dims: ToyDims | None = None, cpu_threads: int | None = 1,
                 backend: str = "auto", weights: str = "trained", weights_path: str | Path | None = None,
                 kernels: str = "auto", compiled: bool | None = None):
        """weights: "trained" = the shipped trained weights (compute.weights.default_path(), or `weights_path`)
        when they fit this config, dims and vocabulary — else the seeded random ones, and `weights_note` says
        why (a bad `weights_path` raises WeightsError instead); "random" = seeded random weights (`seed`).
        `weights_name` says which ones run ("trained" | "random"); every Trace carries it.

        device: "auto" (CUDA when torch is installed and sees a GPU, else the CPU), "cpu", "cuda" ("cuda:N"), a
        `Device` or a torch.device. dtype: "float32" / "float64", a numpy or a torch dtype.

        cpu_threads: torch.set_num_threads for the torch backend on a CPU device (process-wide). The toy's ops
        are tiny, so one intra-op thread is the fastest (bench/engine.py: several times faster than 2 threads
        on a busy machine); None leaves torch's setting alone.

        backend: the array library the layers run on. "auto" = numpy on a CPU device (no torch needed or
        imported: weights, embeddings, layers and sampling are numpy; the layer loop runs the operators on
        numpy through compute.ops.xp), torch on CUDA (imported then; ImportError with the install hint without it);
        "torch" forces torch tensors on the CPU too.

        kernels: "auto" = on numpy, the compiled pass where `compiled` allows it; "operators" = the operators'
        layer loop only (never compiled: what the compiled pass is tested against).

        compiled: with kernels="auto" on numpy and a K3-shaped config (compute.fused_nb.supported), run each pass
        as ONE compiled call (compute.fused_nb: numba, every trace tensor written into per-pass buffers). None =
        only when fused_nb.cache_ready() (the compiled code is in the disk cache: never compiles here, and
        imports numba only then); True = compile or load now (needs numba; without it, or with K3_NO_NUMBA=1,
        the operators run); False = the operators' layer loop. `use_compiled()` switches later;
        `self.compiled` says what runs."""
        self.config = config if config is not None else load_default()
        self.seed = int(seed)
        self.device = resolve_device(device)
        if backend not in ("auto", "torch", "numpy"):
            raise ValueError(f"backend must be 'auto', 'torch' or 'numpy', got {backend!r}")
        if backend == "numpy" and self.device.type != "cpu":
            raise ValueError("the numpy backend runs on the CPU only")
        if kernels not in ("auto", "operators"):
            raise ValueError(f"kernels must be 'auto' or 'operators', got {kernels!r}")
        self.kernels = kernels
        self._want_compiled = compiled
        self.compiled = False
        self.backend = "numpy" if backend == "numpy" or (backend == "auto" and self.device.type == "cpu") else "torch"
        self.dtype = float_dtype(dtype)
        self._torch = None
        if self.backend == "torch":
            self._torch = torch = import_torch(f"the torch backend on {self.device}")
            self._torch_device = torch.device(str(self.device))
            self._torch_dtype = getattr(torch, self.dtype.name)
            if cpu_threads is not None and self.device.type == "cpu":
                torch.set_num_threads(int(cpu_threads))
        self.dims = dims or ToyDims()
        self.tokenizer = ToyTokenizer(vocab_size=self.config.vocab_size)
        self.vocab = list(self.tokenizer.vocab)
        self.layer_calls = 0  # number of layer forward calls since construction (tests, bench)
        if weights not in ("trained", "random"):
            raise ValueError(f"weights must be 'trained' or 'random', got {weights!r}")
        self.weights_meta: dict = {}
        c = self.config
        self.op_args = OpArgs.of(c, self.dims)  # what every operator reads (compute.dims.OpArgs)
        self._rope_theta = self.op_args.rope_theta
        self._build_weights(weights, weights_path)

    # ------------------------------------------------------------------ weights
    def _build_weights(self, weights: str, weights_path) -> None:
        """The float64 weights (compute.engine_weights.choose_weights: the trained toy when it is this model's and
        sound, else the seeded random one with the reason in `weights_note`), then the backend's arrays."""
        self._take(choose_weights(self.config, self.dims, [pc for pc, _ in self.vocab], self.seed, weights,
                                  weights_path))
        self._to_device(fresh=True)

    def _take(self, w: ToyWeights) -> None:
        self.embedding64, self.lm_head64, self.final_norm64 = w.embedding, w.lm_head, w.final_norm
        self.w_out64, self._layers64 = w.w_out, w.layers
        self.weights_name, self.weights_note, self.weights_fallback = w.name, w.note, w.fallback
        self.weights_meta = w.meta
        self._shared = w.shared  # what the engines of these weights share (the compiled pass), see _use_compiled

    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        """{name: shape} of every weight of this config, dims and vocabulary (compute.weights.layout_shapes)."""
        return weights_io.layout_shapes(self.config, self.dims, len(self.vocab))

    def _load_trained(self, path) -> None:
        """Read and check the trained asset (or `path`) and take its float64 weights (no backend conversion)."""
        self._take(trained_weights(self.config, self.dims, [pc for pc, _ in self.vocab], path))

    def _to_device(self, fresh: bool = False) -> None:
        """The float64 numpy weights as the backend's arrays: numpy of the engine's dtype, or torch tensors on
        the device (both backends convert the same float64 numbers). fresh: the float64 weights are the ones
        choose_weights returned, untouched (the constructor), so the compiled pass may be the shared one; a caller
        that swapped some of them first (a twin, a test) gets a pass of its own."""

        def conv(obj):
            if isinstance(obj, dict):
                return {k: conv(v) for k, v in obj.items()}
            if isinstance(obj, np.ndarray):
                return self._arr(obj)
            return obj

        self.layers = [conv(w) for w in self._layers64]
        self.embedding = conv(self.embedding64)
        self.lm_head = conv(self.lm_head64)
        self.final_norm = conv(self.final_norm64)
        self.w_out = conv(self.w_out64)
        self._weights_np = linear_weights_numpy(self.layers, self.embedding, self.lm_head, self.dims)
        self._pick_kernels(fresh=fresh)
        for d in self._weights_np[0] + [self._weights_np[1]]:
            for k, a in d.items():
                d[k] = a = a.view()  # read-only views: the engine's own arrays stay as they are
                a.setflags(write=False)

    def _pick_kernels(self, fresh: bool = False) -> None:
        """The residual path of the layer loop (BlockAttnRes with AttnRes, else the plain residual), and the
        compiled pass when `compiled` asks for it (None: only when its disk cache is ready). fresh: the engine's
        arrays were just converted from its weights (so its compiled pass may be the shared one)."""
        c = self.config
        self._new_residual = ((lambda: BlockAttnRes(c.attn_res_block_size, eps=1e-6)) if c.attn_res_block_size
                              else PlainResidual)
        self._pass = None
        self.compiled = False
        want = self._want_compiled
        if want or (want is None and fused_nb.cache_ready(self.dtype)):
            self._use_compiled(True, shared=fresh)

    def use_compiled(self, on: bool = True) -> bool:
        """Run the passes as one compiled call each (on=True; loads numba's disk cache, ~0.5 s with the numba
        import, or compiles when it is cold — call it off the UI thread) or the operators' layer loop (on=False).
        Possible with numba (K3_NO_NUMBA unset), the numpy backend, kernels="auto" and a K3-shaped config;
        otherwise the layer loop stays. Returns `self.compiled`. Not while a run is in progress."""
        return self._use_compiled(on, shared=False)

    def _use_compiled(self, on: bool, shared: bool) -> bool:
        """use_compiled. shared: the engine's arrays are as just converted from its weights, so the compiled pass
        (stacked copies of them, read-only in a pass) is the one the engines of these weights, dtype, config and
        dims share (compute.engine_weights.ToyWeights.shared); never one built after a caller could have edited
        the engine's arrays."""
        self._pass = None
        self.compiled = False
        if (on and self.backend == "numpy" and self.kernels == "auto" and fused_nb.supported(self.config)
                and fused_nb.available()):
            key = ("compiled", self.dtype.str, config_key(self.config), self.dims)
            with SHARED_LOCK:
                cp = self._shared.get(key) if shared else None
            if cp is None:
                plans = FusedPlans(self.config, self.dims, self.layers, self.w_out, self.dtype, self.final_norm)
                cp = fused_nb.CompiledPass(plans, self.layers, self.lm_head, self.config, self.dims)
                if shared:
                    with SHARED_LOCK:
                        cp = self._shared.setdefault(key, cp)
            self._pass = cp
            self._warm_up()
            self.compiled = True
        return self.compiled

    def _warm_up(self) -> None:
        """Load (or compile, on a cold disk cache) the compiled pass with a prefill and a decode pass on the
        toy vocabulary's first piece. layer_calls is left as it was."""
        calls, tid = self.layer_calls, self.tokenizer.vocab[0][1]
        _, caches, _ = self.forward([tid, tid], 0, Knobs(), None)
        self.forward([tid], 2, Knobs(), caches)
        self.layer_calls = calls

    # ------------------------------------------------------------------ embedding
    def embed_ids(self, ids: list[int]):
        """Embedding rows [T, D]: the toy-vocab rows, or a seeded row derived from the id for other pieces."""
        rows = []
        for i in ids:
            r = self.tokenizer.vocab_ids.get(i)
            if r is not None:
                rows.append(self.embedding64[r])
            else:
                g = np.random.default_rng([self.seed & SEED_MASK, int(i) & SEED_MASK, 7])
                rows.append(g.standard_normal(self.dims.hidden))
        return self._arr(np.stack(rows))

    # ------------------------------------------------------------------ one pass
    def forward(self, ids: list[int], start: int, knobs: Knobs, caches: list | None = None, hooks: dict | None = None
                ) -> tuple[dict, list, object]:
        """Run all layers over tokens `ids` at positions start.. with the caches of earlier positions.

        Returns (pass data: dict of the backend's arrays — torch tensors or `Part`s, or numpy arrays —, new
        caches (one per layer), logits [T, V_toy]).

        hooks (compute.explain's knock-outs; None = none, nothing else changes): a dict of optional callables
        that replace a value on its way — "embedding": f(emb) -> emb; "mixer": f(layer, a, tensors) -> a and
        "ffn": f(layer, y, tensors) -> y (0-based layer; tensors = the layer's trace dict so far, the block's
        own tensors included); "attnres": f(layer, residual) after the layer's AttnRes has stored a block (its
        `stored` and `replace_stored(c, value)`). An embedding hook alone keeps the compiled pass; a layer hook
        runs the layer loop.
        """
        T = len(ids)
        emb = self.embed_ids(ids)
        if hooks is not None and "embedding" in hooks:
            emb = hooks["embedding"](emb)
        mixer_hook = ffn_hook = attnres_hook = None
        if hooks is not None:
            mixer_hook, ffn_hook, attnres_hook = hooks.get("mixer"), hooks.get("ffn"), hooks.get("attnres")
        if self._pass is not None and mixer_hook is None and ffn_hook is None and attnres_hook is None:
            self.layer_calls += len(self.layers)
            return self._pass.forward(emb, np.arange(start, start + T), knobs, caches, self._bias_offset(knobs))
        positions = (np.arange(start, start + T) if self.backend == "numpy"
                     else self._torch.arange(start, start + T, device=self._torch_device))
        bias_off = self._bias_offset(knobs)
        res = self._new_residual()  # BlockAttnRes or the plain residual
        res.start(emb)
        eps = self.config.rms_norm_eps
        new_caches, layer_data = [], []
        for li, w in enumerate(self.layers):
            self.layer_calls += 1
            x, aw = res.before_mixer(li, w["w_attn"])
            if attnres_hook is not None:
                attnres_hook(li, res)
            xn = rms_norm(x, w["norm_mixer"], eps)
            t = {"attnres.mixer": aw, "attnres.mixer.out": x, "norm.mixer": xn}
            a, nc = self._op_mixer(li, xn, None if caches is None else caches[li], knobs, positions, t)
            if mixer_hook is not None:
                a = mixer_hook(li, a, t)
            new_caches.append(nc)
            x2, fw = res.after_mixer(a, w["w_mlp"])
            xn2 = rms_norm(x2, w["norm_ffn"], eps)
            f = self._op_ffn(li, xn2, bias_off, t)
            if ffn_hook is not None:
                f = ffn_hook(li, f, t)
            p = res.after_ffn(f)
            t.update({"mixer.out": a, "attnres.ffn": fw, "attnres.ffn.out": x2, "norm.ffn": xn2, "ffn.out": f,
                      "residual": p})
            layer_data.append(t)
        h, fw = res.final(self.w_out)
        return self._final(positions, emb, layer_data, h, fw, new_caches)

    def _op_mixer(self, li: int, xn, cache, knobs: Knobs, positions, t: dict):
        """Layer li's mixer by the operators (compute.ops.kda.kda_layer / compute.ops.mla.mla_layer) → (y, new cache)."""
        w = self.layers[li]
        if "kda" in w:
            a, mt, nc = kda_layer(xn, w["kda"], self.op_args, cache, alpha=knobs.alpha, beta_override=knobs.beta)
        else:
            a, mt, nc = mla_layer(xn, w["mla"], self.op_args, positions, cache)
        t.update(mt)
        return a, nc

    def _op_ffn(self, li: int, xn, bias_off, t: dict):
        """Layer li's FFN by the operators (compute.ops.moe.dense_mlp / latent_moe) → y."""
        w = self.layers[li]
        if "mlp" in w:
            f, ft = dense_mlp(xn, w["mlp"], self.op_args)
        else:
            mw = w["moe"]
            bias = mw["bias"] if bias_off is None else mw["bias"] + bias_off
            f, ft = latent_moe(xn, mw, self.op_args, bias)
            if mw["down"] is None:
                for k in ("moe.down", "moe.norm", "moe.up"):
                    ft.pop(k)
        t.update(ft)
        return f

    def _final(self, positions, emb, layer_data: list, h, fw, new_caches: list) -> tuple[dict, list, object]:
        """Final RMSNorm and LM head after the last layer; forward's return value."""
        hn = rms_norm(h, self.final_norm, self.config.rms_norm_eps)
        logits = hn @ self.lm_head
        data = {"positions": positions, "embedding": emb, "layers": layer_data,
                "final": {"final.attnres": fw, "final.norm": hn, "lm_head": logits}}
        return data, new_caches, logits

    def _bias_offset(self, knobs: Knobs):
        if not knobs.expert_bias:
            return None
        E = self.config.n_routed_experts
        off = np.zeros(E)
        for e, b in knobs.expert_bias.items():
            e = int(e)
            if not 0 <= e < E:
                raise ValueError(f"expert_bias: expert {e} outside 0..{E - 1}")
            off[e] = float(b)
        return self._arr(off)

    # ------------------------------------------------------------------ public API
    def run(self, prompt: str, max_new_tokens: int = 4, knobs: Knobs | None = None) -> Trace:
        """Tokenize → prefill → decode `max_new_tokens` tokens with caches → Trace (numpy on the CPU)."""
        knobs = knobs if knobs is not None else Knobs()
        check_knobs(knobs)
        if not isinstance(prompt, str):
            raise TypeError("prompt must be a string")
        toks = self.encode_prompt(prompt)
        if not 1 <= int(max_new_tokens) <= MAX_NEW_TOKENS:
            raise ValueError(f"max_new_tokens must be in 1..{MAX_NEW_TOKENS}")
        trace = Trace(tokens=list(toks), prompt_len=len(toks), text=prompt, passes=[], knobs=knobs,
                      weights=self._weights_np[0], weights_global=self._weights_np[1], vocab=list(self.vocab),
                      config_name=self.config.name, device=str(self.device), weights_name=self.weights_name,
                      weights_fallback=self.weights_fallback)
        self._continue(trace, int(max_new_tokens), None, knobs)
        return trace

    def encode_prompt(self, prompt: str) -> list[tuple[str, int]]:
        """The prompt's toy tokens [(piece, id)], checked: no control characters, 1..MAX_PROMPT_TOKENS tokens
        (ValueError with one line otherwise). run() and compute.explain both start here."""
        check_prompt_text(prompt)
        toks = self.tokenizer.encode(prompt)
        if not toks:
            raise ValueError("the prompt is empty: type at least one character")
        if len(toks) > MAX_PROMPT_TOKENS:
            raise ValueError(f"the prompt has {len(toks)} toy tokens; the toy engine takes at most {MAX_PROMPT_TOKENS}")
        return list(toks)

    def resample(self, trace: Trace, knobs: Knobs) -> Trace:
        """A new Trace for changed temperature / top-p / sample_seed, reusing the cached logits.

        Passes before the first changed token are shared (same LayerTrace objects); layers re-run only from
        the pass after it, resuming from the caches stored in the trace. Any other knob change runs afresh.
        """
        check_knobs(knobs)
        old = trace.knobs
        if (knobs.alpha, knobs.beta, dict(knobs.expert_bias)) != (old.alpha, old.beta, dict(old.expert_bias)):
            return self.run(trace.text, len(trace.passes), knobs)
        n = len(trace.passes)
        us = pass_uniforms(knobs.sample_seed, n)
        new = Trace(tokens=list(trace.tokens[:trace.prompt_len]), prompt_len=trace.prompt_len, text=trace.text,
                    passes=[], knobs=knobs, weights=trace.weights, weights_global=trace.weights_global,
                    vocab=trace.vocab, config_name=trace.config_name, device=trace.device,
                    weights_name=trace.weights_name, weights_fallback=trace.weights_fallback,
                    prompt_in_language=trace.prompt_in_language)
        for i, ps in enumerate(trace.passes):
            probs, tok = sample_logits(ps.final["lm_head"][-1], knobs, us[i])
            final = dict(ps.final)
            final["probs"], final["sampled"] = probs, tok
            new.passes.append(PassTrace(kind=ps.kind, positions=ps.positions, embedding=ps.embedding,
                                        layers=ps.layers, final=final))
            new.tokens.append(tuple(self.vocab[tok]))
            if tok != ps.final["sampled"] and i + 1 < n:
                caches = self._caches_from_trace(new)
                self._continue(new, n, caches, knobs)
                break
        return new

    # ------------------------------------------------------------------ internals
    def _continue(self, trace: Trace, n_passes: int, caches: list | None, knobs: Knobs) -> None:
        us = pass_uniforms(knobs.sample_seed, n_passes)
        with self._torch.inference_mode() if self._torch is not None else contextlib.nullcontext():
            while len(trace.passes) < n_passes:
                i = len(trace.passes)
                if i == 0:
                    ids, start = [tid for _, tid in trace.tokens], 0
                else:
                    ids, start = [trace.tokens[-1][1]], len(trace.tokens) - 1
                kind = "prefill" if i == 0 else "decode"
                if self._pass is not None:  # compiled: one call, the layers' tensors cut out on first access
                    self.layer_calls += len(self.layers)
                    ps, caches = self._pass.pass_trace(self.embed_ids(ids), np.arange(start, start + len(ids)),
                                                       knobs, caches, self._bias_offset(knobs), kind, self.config)
                else:
                    data, caches, _ = self.forward(ids, start, knobs, caches)
                    ps = pass_to_numpy(data, self.config, kind)
                check_pass(ps, i)  # NaN / inf logits or hidden state: NonFiniteError, never a sampled garbage token
                probs, tok = sample_logits(ps.final["lm_head"][-1], knobs, us[i])
                ps.final["probs"], ps.final["sampled"] = probs, tok
                trace.passes.append(ps)
                trace.tokens.append(tuple(self.vocab[tok]))

    def _caches_from_trace(self, trace: Trace) -> list:
        """Rebuild the per-layer caches after the trace's last pass from the stored tensors (a compiled pass of this
        engine's kind keeps its caches: taken as they are)."""
        nb = getattr(trace.passes[-1], "_nb_caches", None)
        if nb is not None and self._pass is not None and self._pass.owns(nb):
            return nb
        return caches_from_trace(trace, self.dims, self._t)

    def _t(self, a: np.ndarray):
        """A trace array as a layer input of this engine's backend, device and dtype (a copy)."""
        return self._arr(np.array(a))

    def _arr(self, a: np.ndarray):
        """A numpy array cast to the engine's dtype (a new contiguous array); a torch tensor on the device for
        the torch backend."""
        a = np.array(a, dtype=np.float64 if self._torch is not None else self.dtype, order="C")
        if self._torch is None:
            return a
        return self._torch.from_numpy(a).to(device=self._torch_device, dtype=self._torch_dtype)


__all__ = ["ToyK3", "ToyDims", "Device", "resolve_device", "Knobs"]
