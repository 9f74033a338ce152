"""ToyK3 end to end: a complete trace, linear blocks, caches, knobs, resampling, dtype/device."""
import numpy as np
import pytest
import torch

from compute.config import ModelConfig, available_configs
from compute.engine import ToyK3, resolve_device
from compute.ops.parts import to_numpy
from compute.trace import LINEAR_INPUTS, Knobs

PROMPT = "Kimi K3 reads the next token"  # 6 toy tokens

COMMON = {"attnres.mixer", "attnres.mixer.out", "norm.mixer", "mixer.out", "attnres.ffn", "attnres.ffn.out",
          "norm.ffn", "ffn.out", "residual"}
KDA = {"kda.q_proj", "kda.k_proj", "kda.v_proj", "kda.q_conv", "kda.k_conv", "kda.v_conv", "kda.q_norm",
       "kda.k_norm", "kda.f", "kda.alpha", "kda.beta", "kda.state", "kda.o", "kda.gate", "kda.o_norm", "kda.o_proj"}
MLA = {"mla.q_a", "mla.q_a_norm", "mla.q_b", "mla.kv_a", "mla.c_kv", "mla.k_rope", "mla.kv_b", "mla.scores",
       "mla.softmax", "mla.o", "mla.gate", "mla.o_gated", "mla.o_proj"}
MOE = {"moe.router", "moe.router.logits", "moe.bias", "moe.topk_idx", "moe.topk_weight", "moe.down", "moe.experts",
       "moe.mix", "moe.norm", "moe.up", "moe.shared"}
DENSE = {"mlp.gate", "mlp.up", "mlp.act", "mlp.down"}


@pytest.fixture(scope="module")
def model():
    return ToyK3(device="cpu")


@pytest.fixture(scope="module")
def model64():
    return ToyK3(device="cpu", dtype=torch.float64)


@pytest.fixture(scope="module")
def trace(model):
    return model.run(PROMPT, max_new_tokens=4, knobs=Knobs(temperature=0.8, sample_seed=3))


def _all_arrays(tr):
    for pi, ps in enumerate(tr.passes):
        yield (pi, "embedding"), ps.embedding
        for k, v in ps.final.items():
            yield (pi, k), v
        for lt in ps.layers:
            for k, v in lt.tensors.items():
                yield (pi, lt.index, k), v


def _assert_same_trace(a, b, exact=True):
    assert a.tokens == b.tokens
    ka, kb = dict(_all_arrays(a)), dict(_all_arrays(b))
    assert ka.keys() == kb.keys()
    for key in ka:
        x, y = ka[key], kb[key]
        if x is None or y is None:
            assert x is None and y is None, key
        elif exact:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=str(key))
        else:
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-12, err_msg=str(key))


def test_trace_is_complete(trace, model):
    cfg = model.config
    P = trace.prompt_len
    assert P == 6 and len(trace.passes) == 4 and len(trace.tokens) == 10
    assert [p.kind for p in trace.passes] == ["prefill", "decode", "decode", "decode"]
    assert len(trace.vocab) == 117 and trace.weights_global["embedding"].shape == (117, 8)
    assert trace.weights_global["lm_head"].shape == (8, 117)
    assert all(0 <= tid < 163840 for _, tid in trace.tokens)
    assert all(tuple(t) in trace.vocab for t in trace.tokens[P:])
    assert trace.generated_text == "".join(p for p, _ in trace.tokens[P:])
    for i, ps in enumerate(trace.passes):
        T = P if i == 0 else 1
        S = P + i
        np.testing.assert_array_equal(ps.positions, np.arange(S - T, S))
        assert ps.embedding.shape == (T, 8)
        assert len(ps.layers) == 93
        for lt in ps.layers:
            assert (lt.mixer, lt.ffn) == (cfg.mixer_types[lt.index], cfg.ffn_types[lt.index])
            want = COMMON | (KDA if lt.mixer == "kda" else MLA) | (MOE if lt.ffn == "moe" else DENSE)
            assert set(lt.tensors) == want, lt.index
            t = lt.tensors
            for k in ("attnres.mixer.out", "norm.mixer", "mixer.out", "attnres.ffn.out", "norm.ffn", "ffn.out",
                      "residual"):
                assert t[k].shape == (T, 8)
            n_blocks = len([s for s in range(0, 93, 12) if s < lt.index])
            if lt.index == 0:
                assert t["attnres.mixer"] is None
            else:
                assert t["attnres.mixer"].shape == (T, n_blocks + 1)
            assert t["attnres.ffn"].shape == (T, len([s for s in range(0, 93, 12) if s <= lt.index]) + 1)
            if lt.mixer == "kda":
                for k in ("kda.q_proj", "kda.k_proj", "kda.v_proj", "kda.q_conv", "kda.q_norm", "kda.f",
                          "kda.alpha", "kda.o", "kda.gate", "kda.o_norm"):
                    assert t[k].shape == (T, 8), k
                assert t["kda.beta"].shape == (T, 2) and t["kda.state"].shape == (2, 4, 4)
                np.testing.assert_array_equal(t["kda.o_proj"], t["mixer.out"])
            else:
                assert t["mla.q_a"].shape == (T, 4) and t["mla.q_b"].shape == (T, 12)
                assert t["mla.kv_a"].shape == (T, 5)
                assert t["mla.c_kv"].shape == (S, 3) and t["mla.k_rope"].shape == (S, 2)
                assert t["mla.kv_b"].shape == (S, 16)
                assert t["mla.scores"].shape == (2, T, S) and t["mla.softmax"].shape == (2, T, S)
                np.testing.assert_allclose(t["mla.softmax"].sum(-1), 1.0, rtol=1e-5)
                assert t["mla.o"].shape == (T, 8) and t["mla.o_gated"].shape == (T, 8)
            if lt.ffn == "moe":
                assert t["moe.router"].shape == (T, 896) and t["moe.bias"].shape == (896,)
                assert t["moe.topk_idx"].shape == (T, 16) and t["moe.topk_weight"].shape == (T, 16)
                assert t["moe.experts"].shape == (T, 16, 4) and t["moe.mix"].shape == (T, 4)
                assert t["moe.shared"].shape == (T, 8)
                np.testing.assert_allclose(t["moe.topk_weight"].sum(-1), 1.0, rtol=1e-5)
            else:
                assert t["mlp.gate"].shape == (T, 16) and t["mlp.down"].shape == (T, 8)
        assert ps.final["final.attnres"].shape == (T, 9)
        assert ps.final["final.norm"].shape == (T, 8) and ps.final["lm_head"].shape == (T, 117)
        assert ps.final["probs"].shape == (117,) and ps.final["probs"].sum() == pytest.approx(1.0)
        assert trace.tokens[P + i] == tuple(trace.vocab[ps.final["sampled"]])


def test_linear_blocks_are_x_times_W(trace):
    seen = set()
    for ps in (trace.passes[0], trace.passes[-1]):
        for lt in ps.layers:
            W = trace.weights[lt.index]
            for key, inp in LINEAR_INPUTS.items():
                if key not in lt.tensors:
                    assert key not in W
                    continue
                seen.add(key)
                x, y = lt.tensors[inp], lt.tensors[key]
                assert W[key].shape == (x.shape[1], y.shape[1]), key
                for row in range(x.shape[0]):
                    np.testing.assert_allclose(y[row], x[row] @ W[key], rtol=1e-5, atol=1e-5, err_msg=key)
    assert seen == set(LINEAR_INPUTS)
    ps = trace.passes[0]
    np.testing.assert_allclose(ps.final["lm_head"], ps.final["final.norm"] @ trace.weights_global["lm_head"],
                               rtol=1e-5, atol=1e-5)


def test_values_well_conditioned(trace):
    for key, v in _all_arrays(trace):
        if v is not None and np.asarray(v).dtype.kind == "f" and key[-1] not in ("mla.scores",):
            assert np.isfinite(v).all(), key
    res = np.stack([lt.tensors["residual"] for lt in trace.passes[0].layers])
    assert np.abs(res).max() < 50 and res[-1].std() > 0.3
    alpha = np.concatenate([lt.tensors["kda.alpha"].ravel() for lt in trace.passes[0].layers if lt.mixer == "kda"])
    assert alpha.min() < 0.5 < alpha.max() and alpha.min() > np.exp(-5)  # varied retention within (e^-5, 1)


def test_deterministic_same_seed(trace):
    tr2 = ToyK3(device="cpu").run(PROMPT, max_new_tokens=4, knobs=Knobs(temperature=0.8, sample_seed=3))
    _assert_same_trace(trace, tr2)
    other = ToyK3(device="cpu", seed=1).run(PROMPT, max_new_tokens=4, knobs=Knobs(temperature=0.8, sample_seed=3))
    assert not np.array_equal(other.passes[0].final["lm_head"], trace.passes[0].final["lm_head"])


def test_decoding_with_caches_equals_recompute(model64):
    knobs = Knobs(temperature=1.0, sample_seed=1)
    tr = model64.run(PROMPT, max_new_tokens=4, knobs=knobs)
    ids = [tid for _, tid in tr.tokens[:-1]]  # everything the last decode pass has seen
    with torch.inference_mode():
        full, _, _ = model64.forward(ids, 0, knobs, None)
    last = tr.passes[-1]
    for li, lt in enumerate(last.layers):
        ft = full["layers"][li]
        for key, v in lt.tensors.items():
            if v is None:
                continue
            ref = to_numpy(ft[key], {})
            if key in ("kda.state", "moe.bias"):
                np.testing.assert_allclose(v, ref, rtol=1e-9, atol=1e-10, err_msg=f"{li} {key}")
            elif key in ("mla.c_kv", "mla.k_rope", "mla.kv_b"):
                np.testing.assert_allclose(v, ref, rtol=1e-9, atol=1e-10, err_msg=f"{li} {key}")
            elif key in ("mla.scores", "mla.softmax"):
                np.testing.assert_allclose(v, ref[:, -1:], rtol=1e-9, atol=1e-10, err_msg=f"{li} {key}")
            else:
                np.testing.assert_allclose(v, ref[-1:], rtol=1e-9, atol=1e-10, err_msg=f"{li} {key}")
    np.testing.assert_allclose(last.final["lm_head"], to_numpy(full["final"]["lm_head"], {})[-1:], rtol=1e-9,
                               atol=1e-10)


def test_alpha_beta_knobs(model64):
    tr = model64.run(PROMPT, max_new_tokens=1, knobs=Knobs(beta=0.0))
    for lt in tr.passes[0].layers:
        if lt.mixer == "kda":
            assert (lt.tensors["kda.beta"] == 0).all()
            assert (lt.tensors["kda.state"] == 0).all()  # nothing is ever written
            assert (lt.tensors["kda.o"] == 0).all()
    tr = model64.run(PROMPT, max_new_tokens=1, knobs=Knobs(alpha=0.0, beta=0.4))
    for lt in tr.passes[0].layers:
        if lt.mixer == "kda":
            t = lt.tensors
            assert (t["kda.alpha"] == 0).all() and (t["kda.beta"] == 0.4).all()
            k = t["kda.k_norm"][-1].reshape(2, 4)
            v = t["kda.v_conv"][-1].reshape(2, 4)
            # α = 0 forgets everything before the last token: S = β k vᵀ (by hand)
            np.testing.assert_allclose(t["kda.state"], 0.4 * k[:, :, None] * v[:, None, :], atol=1e-6)
    tr = model64.run(PROMPT, max_new_tokens=1, knobs=Knobs(alpha=1.0, beta=1.0))
    assert all((lt.tensors["kda.alpha"] == 1).all() for lt in tr.passes[0].layers if lt.mixer == "kda")
    auto = model64.run(PROMPT, max_new_tokens=1)
    a = auto.passes[0].layers[0].tensors
    assert len(np.unique(a["kda.alpha"].round(6))) > 10 and len(np.unique(a["kda.beta"].round(6))) > 4


def test_resample_without_token_change_runs_no_layer(model, trace):
    calls = model.layer_calls
    same = model.resample(trace, Knobs(temperature=0.8, sample_seed=3))
    assert model.layer_calls == calls
    _assert_same_trace(trace, same)
    for a, b in zip(trace.passes, same.passes):
        assert a.layers is b.layers


def test_resample_equals_fresh_run(model):
    base = model.run(PROMPT, max_new_tokens=4, knobs=Knobs(temperature=1.5, sample_seed=0))
    changed = None
    for seed in range(20):  # find knobs whose first differing token is not the last one
        kn = Knobs(temperature=1.5, top_p=0.9, sample_seed=seed)
        calls = model.layer_calls
        re = model.resample(base, kn)
        diff = [i for i in range(4) if re.passes[i].final["sampled"] != base.passes[i].final["sampled"]]
        if diff and diff[0] < 3:
            changed = diff[0]
            break
    assert changed is not None
    assert model.layer_calls - calls == 93 * (3 - changed)  # only the passes after the changed token
    for i in range(changed + 1):
        assert re.passes[i].layers is base.passes[i].layers
    _assert_same_trace(re, model.run(PROMPT, max_new_tokens=4, knobs=kn))


def test_resample_greedy(model, trace):
    re = model.resample(trace, Knobs(temperature=0.0))
    _assert_same_trace(re, model.run(PROMPT, max_new_tokens=4, knobs=Knobs(temperature=0.0)))
    for ps in re.passes:
        assert ps.final["sampled"] == int(np.argmax(ps.final["lm_head"][-1]))


def test_expert_bias_changes_selection_and_values(model, trace):
    kn = Knobs(temperature=0.8, sample_seed=3, expert_bias={5: 10.0})
    tr = model.run(PROMPT, max_new_tokens=4, knobs=kn)
    for lt in tr.passes[0].layers:
        if lt.ffn == "moe":
            assert (lt.tensors["moe.topk_idx"] == 5).any(-1).all()
            base_bias = trace.passes[0].layers[lt.index].tensors["moe.bias"]
            np.testing.assert_allclose(lt.tensors["moe.bias"][5] - base_bias[5], 10.0, rtol=1e-6)
            np.testing.assert_array_equal(np.delete(lt.tensors["moe.bias"], 5), np.delete(base_bias, 5))
    assert not np.allclose(tr.passes[0].layers[1].tensors["ffn.out"], trace.passes[0].layers[1].tensors["ffn.out"])
    assert not np.allclose(tr.passes[0].final["lm_head"], trace.passes[0].final["lm_head"])
    # a resample with a different expert_bias is a full, consistent run
    _assert_same_trace(model.resample(trace, kn), tr)


def test_float64(model64):
    tr = model64.run(PROMPT, max_new_tokens=2)
    assert tr.passes[0].layers[5].tensors["residual"].dtype == np.float64
    assert tr.weights[3]["mla.q_a"].dtype == np.float64


def test_device_auto(monkeypatch):
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto").type == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto").type == "cuda"
    assert resolve_device("cpu").type == "cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    kn = Knobs(temperature=0.0)
    a = ToyK3(device="cuda", dtype=torch.float64).run(PROMPT, 3, kn)
    b = ToyK3(device="cpu", dtype=torch.float64, backend="torch").run(PROMPT, 3, kn)  # numpy: test_backends
    assert a.device.startswith("cuda")
    _assert_same_trace(a, b, exact=False)


def test_bad_inputs(model):
    with pytest.raises(ValueError, match="empty"):
        model.run("", 2)
    with pytest.raises(ValueError):
        model.run("x", 0)
    for kn in (Knobs(alpha=1.5), Knobs(beta=-0.1), Knobs(top_p=0.0), Knobs(temperature=-1),
               Knobs(expert_bias={9999: 1.0})):
        with pytest.raises(ValueError):
            model.run("x", 1, kn)


def test_korean_and_any_unicode(model):
    tr = model.run("모델은 다음 토큰을 🙂", max_new_tokens=2)
    assert tr.prompt_len == len(tr.tokens) - 2
    assert any("<0x" in p for p, _ in tr.tokens[:tr.prompt_len])


@pytest.mark.parametrize("name", ["kimi-linear-48b", "kimi-k2", "deepseek-v3"])
def test_other_family_configs_run(name):
    cfg = ModelConfig.from_json(available_configs()[name])
    m = ToyK3(cfg, device="cpu")
    tr = m.run("the model", max_new_tokens=2, knobs=Knobs(temperature=0.0))
    assert len(tr.passes[1].layers) == cfg.num_hidden_layers
    lt = tr.passes[1].layers[-1]
    assert "moe.down" not in lt.tensors and lt.tensors["attnres.mixer"] is None
    assert tr.passes[1].layers[cfg.mla_layers[0]].tensors["mla.c_kv"].shape[0] == tr.prompt_len + 1
    assert all(0 <= tid < cfg.vocab_size for _, tid in tr.tokens)


def test_trace_cannot_corrupt_the_engine(model, trace):
    with pytest.raises(ValueError):
        trace.weights[1]["kda.q_proj"][0, 0] = 1.0
    with pytest.raises(ValueError):
        trace.passes[0].layers[1].tensors["moe.bias"][0] = 1.0
    with pytest.raises(ValueError):
        trace.weights_global["lm_head"][0, 0] = 1.0
