"""compute.explain: KDA's implicit attention is exact, MLA rows are distributions, the lens ends at the engine's
logits, contributions add up to the logit, knock-outs do what they say, bad arguments raise one-line errors."""
from __future__ import annotations

import numpy as np
import pytest

from compute.config import ModelConfig, available_configs
from compute.engine import ToyK3
from compute.explain import Explanation, implicit_attention, kda_output, layer_attention
from compute.explain.kda_attention import layer_qkv, value_contributions
from compute.explain.knockout import prefill
from compute.trace import Knobs

PROMPT = "아이가 상자를 집었다. 그리고"
LONG = "아이가 상자를 집었다. 그리고 상자를 테이블 위에 놓았다. the robot picks up the cup. it"


@pytest.fixture(scope="module")
def m64():
    return {w: ToyK3(device="cpu", dtype="float64", weights=w) for w in ("trained", "random")}


@pytest.fixture(scope="module")
def m32():
    return ToyK3(device="cpu")


def _kda_layers(ps):
    return [lt for lt in ps.layers if lt.mixer == "kda"]


@pytest.mark.parametrize("weights", ["trained", "random"])
@pytest.mark.parametrize("knobs", [Knobs(), Knobs(alpha=0.8, beta=0.4)], ids=["gates", "knobs"])
def test_kda_implicit_attention_reproduces_the_engine(m64, weights, knobs):
    m = m64[weights]
    ps = prefill(m, [i for _, i in m.tokenizer.encode(LONG)], knobs)
    H = m.dims.kda_heads
    n = 0
    for lt in _kda_layers(ps):
        t = lt.tensors
        q, k, v, a, b = layer_qkv(t, H)
        A = layer_attention(t, H)
        T = q.shape[0]
        assert A.shape == (H, T, T)
        assert np.all(np.triu(A, 1) == 0)  # causal
        o = np.einsum("hti,ihv->thv", A, v)  # every head
        np.testing.assert_allclose(o.reshape(T, -1), t["kda.o"], rtol=0, atol=1e-6)
        w = m._layers64[lt.index]["kda"]
        y = kda_output(A, v, t["kda.gate"], w["o_norm"], w["o"], m.config.rms_norm_eps)
        np.testing.assert_allclose(y, t["kda.o_proj"], rtol=0, atol=1e-6)
        C = value_contributions(A, v, t["kda.gate"], w["o_norm"], w["o"], m.config.rms_norm_eps)
        np.testing.assert_allclose(C.sum(1), y, rtol=0, atol=1e-9)
        n += 1
    assert n == m.config.mixer_types.count("kda")
    if knobs.alpha is not None:  # with constant α, β the weights follow from the keys alone
        assert np.allclose(a, 0.8) and np.allclose(b, 0.4)


def test_implicit_attention_batched_rows_equal_full(m64):
    m = m64["random"]
    ps = prefill(m, [i for _, i in m.tokenizer.encode(LONG)])
    qs = [layer_qkv(lt.tensors, m.dims.kda_heads) for lt in _kda_layers(ps)]
    stack = [np.stack([q[i] for q in qs]) for i in (0, 1, 3, 4)]
    rows = [0, 5, len(qs[0][0]) - 1]
    A = implicit_attention(*stack, rows=rows)  # [layers, H, R, T]
    for j, lt in enumerate(_kda_layers(ps)):
        np.testing.assert_allclose(A[j], layer_attention(lt.tensors, m.dims.kda_heads)[:, rows], atol=1e-12)


def test_mla_rows_sum_to_one_and_attention_rows(m32):
    ex = Explanation.of_prompt(m32, PROMPT)
    T = ex.position + 1
    for layer in range(1, 94):
        A = ex.attention(layer)
        assert A.shape == (2, T, T)
        if ex.mixer_kind(layer) == "mla":
            np.testing.assert_allclose(A.sum(-1), 1.0, atol=1e-6)
            assert np.all(np.triu(A, 1) == 0)
        np.testing.assert_allclose(ex.attention_rows[layer - 1], A[:, -1], atol=1e-6)
        np.testing.assert_allclose(ex.attention_row(layer), A[:, -1], atol=1e-12)
    assert ex.mixer_kind(37) == "kda" and ex.mixer_kind(4) == "mla" and ex.mixer_kind(93) == "mla"


@pytest.mark.parametrize("mode", ["exit", "read"])
def test_lens_ends_at_the_engine_logits(m64, m32, mode):
    for m, tol in ((m64["trained"], 1e-9), (m64["random"], 1e-9), (m32, 1e-4)):
        ex = Explanation.of_prompt(m, PROMPT, lens_mode=mode)
        lens = ex.lens_detail
        assert len(ex.lens) == 94 and len(ex.lens_mixers) == 93
        np.testing.assert_allclose(lens.logits[-1], ex.logits, rtol=0, atol=tol)
        last = ex.lens[-1]
        assert last.layer == 93 and last.rank == 1 and last.top[0][0] == ex.word
        assert abs(last.prob - ex.probs[ex.word_index]) < 1e-6
        assert ex.lens[0].part == "embedding" and ex.lens_mixers[0].layer == 1
        ranks = ex.lens_rank(ex.word)
        assert len(ranks) == 94 and ranks[-1] == 1 and all(r >= 1 for r in ranks)
        assert [e.rank for e in ex.lens] == ranks


def test_lens_embedding_entry_is_the_embedding_through_the_head(m64):
    m = m64["random"]
    ex = Explanation.of_prompt(m, PROMPT)
    e = ex.run.embedding[ex.position]
    hn = e / np.sqrt(np.mean(e * e) + m.config.rms_norm_eps) * m.final_norm64
    np.testing.assert_allclose(ex.lens_detail.logits[0], hn @ m.lm_head64, atol=1e-12)


def test_contributions_sum_to_the_logit(m64, m32):
    for m, rest_tol in ((m64["trained"], 1e-9), (m64["random"], 1e-9), (m32, 1e-3)):
        for pos in (None, 3):
            ex = Explanation.of_prompt(m, PROMPT, position=pos)
            vals = [v for _, _, v in ex.blocks]
            assert abs(sum(vals) + ex.rest - ex.logit) < 1e-4
            assert abs(ex.rest) < rest_tol * max(1.0, abs(ex.logit))
            parts = {p for _, p, _ in ex.blocks}
            assert {"embedding", "mixer", "ffn", "shared"} <= parts
            assert sum(1 for _, p, _ in ex.blocks if p.startswith("expert ")) == 92 * m.config.num_experts_per_tok
    # a MoE layer's experts + shared add up to its FFN output's direct contribution
    ex = Explanation.of_prompt(m64["trained"], PROMPT)
    r = ex.route
    li = 70
    ffn = ex.run.layers[li - 1].tensors["ffn.out"][ex.position]
    a = ex.run.final["final.attnres"][ex.position][(li - 1) // 12 + 1]
    assert abs(r.totals()[(li, "ffn")] - a * ffn @ r.u) < 1e-9
    up, down = ex.promotes(0, 3)
    assert len(up) == 3 and up[0][1] >= down[0][1]


def test_contributions_plain_residual_and_non_latent_moe():
    cfg = ModelConfig.from_json(available_configs()["kimi-linear-48b"])
    m = ToyK3(config=cfg, device="cpu", dtype="float64", weights="random")
    ex = Explanation.of_prompt(m, PROMPT)
    assert abs(sum(v for *_, v in ex.blocks) - ex.logit) < 1e-9
    np.testing.assert_allclose(ex.lens_detail.logits[-1], ex.logits, atol=1e-9)


def test_token_knockout_changes_its_effect(m32):
    ex = Explanation.of_prompt(m32, PROMPT, source_mode="zero", source_metric="logit")
    src = ex.sources
    assert [s.position for s in src] == list(range(8)) and src[2].piece == " 상자"
    ko = ex.knockout(tokens=[2])
    # the knock-out's effect is the source's effect, and the token knocked out has none left
    assert abs(ko.effect - src[2].effect) < 1e-9
    assert abs(ko.before.logit - ko.logits[ex.word_index] - src[2].effect) < 1e-9
    assert ko.sources[2].effect == 0.0
    assert ko.ablation.tokens == (2,) and ko.before is ex
    assert ko.run.embedding[2].tolist() == [0.0] * 8
    # the trained toy copies the earlier mention of the object: it is the top source, and the answer changes
    assert ex.word == " 상자" and ex.top_source().position == 2 and ko.changed and ko.word != " 상자"
    assert ex.source_answers[2] == ko.word


def test_block_and_expert_knockouts(m64):
    m = m64["random"]
    ex = Explanation.of_prompt(m, PROMPT)
    ko = ex.knockout(blocks=[(37, "mixer"), (5, "ffn")])
    assert np.all(ko.run.layers[36].tensors["mixer.out"] == 0) and np.all(ko.run.layers[4].tensors["ffn.out"] == 0)
    assert ko.effect != 0.0
    km = ex.knockout(blocks=[(37, "mixer")], mode="mean")
    mo = ex.run.layers[36].tensors["mixer.out"]
    np.testing.assert_allclose(km.run.layers[36].tensors["mixer.out"], np.broadcast_to(mo.mean(0), mo.shape),
                               atol=1e-6)
    # zeroing expert e at one layer equals a model whose expert e has a zero output matrix there
    li = 40
    e = int(ex.run.layers[li].tensors["moe.topk_idx"][ex.position][0])
    ke = ex.knockout(experts=[(li + 1, e)])
    ref = ToyK3(device="cpu", dtype="float64", weights="random", kernels="operators")
    ref.layers[li]["moe"]["w2"][e] = 0.0
    ids = ex.ids
    data, _, logits = ref.forward(ids, 0, Knobs(temperature=0.0))
    np.testing.assert_allclose(ke.logits, logits[-1], atol=1e-9)
    assert ke.effect != 0.0


def test_hooks_none_is_the_plain_forward(m64):
    m = m64["trained"]
    ids = [i for _, i in m.tokenizer.encode(PROMPT)]
    _, _, a = m.forward(ids, 0, Knobs())
    _, _, b = m.forward(ids, 0, Knobs(), None, None)
    _, _, c = m.forward(ids, 0, Knobs(), None, {"mixer": lambda li, x, t: x})
    assert np.array_equal(a, b)
    np.testing.assert_allclose(a, c, atol=1e-12)


def _one_line(excinfo):
    msg = str(excinfo.value)
    assert msg and "\n" not in msg
    return msg


def test_bad_arguments_raise_one_line(m32):
    ex = Explanation.of_prompt(m32, PROMPT)
    bad = [
        lambda: Explanation.of_prompt(m32, PROMPT, position=8),
        lambda: Explanation.of_prompt(m32, PROMPT, position="last"),
        lambda: Explanation.of_prompt(m32, ""),
        lambda: Explanation.of_prompt(m32, 5),
        lambda: Explanation.of_prompt(m32, PROMPT, lens_mode="middle"),
        lambda: ex.attention(0),
        lambda: ex.attention(94),
        lambda: ex.attention(2.5),
        lambda: ex.lens_rank("xyzzy"),
        lambda: ex.knockout(),
        lambda: ex.knockout(tokens=[8]),
        lambda: ex.knockout(tokens=3),
        lambda: ex.knockout(tokens=[True]),
        lambda: ex.knockout(blocks=[(37, "attention")]),
        lambda: ex.knockout(blocks=[(0, "mixer")]),
        lambda: ex.knockout(blocks=[37]),
        lambda: ex.knockout(experts=[896]),
        lambda: ex.knockout(experts=[(1, 3)]),  # layer 1 is dense
        lambda: ex.knockout(tokens=[1], mode="half"),
        lambda: ex.promotes(10 ** 6),
    ]
    for f in bad:
        with pytest.raises(ValueError) as e:
            f()
        _one_line(e)


def test_torch_backend_gives_the_same_explanation(m64):
    pytest.importorskip("torch")
    a = m64["random"]
    b = ToyK3(device="cpu", dtype="float64", weights="random", backend="torch")
    ea, eb = Explanation.of_prompt(a, PROMPT), Explanation.of_prompt(b, PROMPT)
    assert ea.word == eb.word and abs(ea.logit - eb.logit) < 1e-9 and abs(eb.rest) < 1e-9
    np.testing.assert_allclose(eb.attention(37), ea.attention(37), atol=1e-9)
    np.testing.assert_allclose(eb.lens_detail.logits, ea.lens_detail.logits, atol=1e-9)
    kw = dict(tokens=[2], blocks=[(5, "ffn")], experts=[(40, 7), 3], mode="mean")
    assert abs(ea.knockout(**kw).effect - eb.knockout(**kw).effect) < 1e-9
    assert np.allclose([s.effect for s in ea.sources], [s.effect for s in eb.sources], atol=1e-9)


def test_attnres_source_knockouts(m64):
    """An AttnRes source knock-out replaces stored candidate c in every later mix: the engine's default path
    and the operators' layer loop agree (float64), the candidate's score is 0 in the mixes after it (zero
    ablation: s_c = (0 / rms) . w), the residual stream before it is untouched, and a bad source is one line."""
    from compute.explain.knockout import stored_sources

    m = m64["trained"]
    ex = Explanation.of_prompt(m, PROMPT)
    n = stored_sources(m.config)
    assert n == 8  # the embedding and blocks 1..7 (block 8, layers 85-93, is the running partial)
    for c in (0, 3):
        ko = ex.knockout(sources=[c])
        assert ko.ablation.sources == (c,) and ko.effect != 0.0
        ref = ToyK3(device="cpu", dtype="float64", weights="trained", kernels="operators")
        kr = Explanation.of_prompt(ref, PROMPT).knockout(sources=[c])
        np.testing.assert_allclose(ko.logits, kr.logits, atol=1e-9)
        bs = m.config.attn_res_block_size
        stored_at = c * bs  # 0-based layer whose AttnRes stored candidate c
        later = ko.run.layers[stored_at + 1].tensors["attnres.mixer"]  # [T, C] weights of a later mix
        before = ex.run.layers[stored_at + 1].tensors["attnres.mixer"]
        assert not np.allclose(later[:, c], before[:, c])
        # with V_c = 0 its score is 0: its weight is exp(0) / sum_j exp(s_j), i.e. 1 / sum over the others' exp
        assert np.all(later[:, c] > 0) and np.all(np.isfinite(later))
        np.testing.assert_allclose(later.sum(1), 1.0, atol=1e-12)
        if c:  # the layers before the source was stored run as without the knock-out
            np.testing.assert_allclose(ko.run.layers[stored_at - 1].tensors["residual"],
                                       ex.run.layers[stored_at - 1].tensors["residual"], atol=1e-9)
    km = ex.knockout(sources=[2], mode="mean")
    assert km.effect != 0.0 and km.ablation.mode == "mean"
    with pytest.raises(ValueError) as e:
        ex.knockout(sources=[n])
    assert "outside 0..7" in str(e.value) and "\n" not in str(e.value)
    assert "AttnRes sources 0 (embedding)" in ex.knockout(sources=[0]).ablation.describe()


def test_another_word_is_explained_on_request():
    """Explanation(word=j) explains the logit of vocabulary entry j, not the argmax: its logit is the run's
    lm_head entry j and its direct contributions still sum to that logit; a word outside the vocabulary is
    one clear ValueError."""
    import numpy as np
    import pytest

    from compute.engine import ToyK3
    from compute.explain import Explanation

    m = ToyK3(device="cpu")
    top = Explanation.of_prompt(m, "로봇이 컵을 집었다")
    j = int(np.argsort(-top.logits)[1])
    ex = Explanation.of_prompt(m, "로봇이 컵을 집었다", word=j)
    assert ex.word_index == j and ex.word == m.vocab[j][0] and ex.word != top.word
    assert ex.logit == pytest.approx(float(top.logits[j]))
    # logit_of names a piece instead of a row: the same number as explaining that piece on its own
    assert top.logit_of(ex.word) == pytest.approx(ex.logit) and top.logit_of(top.word) == pytest.approx(top.logit)
    with pytest.raises(ValueError, match="not a piece of the toy vocabulary"):
        top.logit_of("no such piece")
    total = sum(b.value for b in ex.blocks) + ex.rest
    assert total == pytest.approx(ex.logit, abs=1e-3 * max(1.0, abs(ex.logit)))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        Explanation.of_prompt(m, "로봇이 컵을 집었다", word=len(m.vocab) + 5)


def test_direct_contributions_against_an_independent_recomputation(m32):
    """Each block's direct effect rebuilt from the block outputs alone (the final mix's candidates summed from
    mixer + FFN outputs, not the engine's stored residuals; the frozen mix weights and norm scale applied by
    hand): equal to the Route's values, and |rest| <= 1e-4 in the float32 engine."""
    ex = Explanation.of_prompt(m32, PROMPT)
    t, w = ex.position, ex.word_index
    lay = ex.run.layers
    bs = m32.config.attn_res_block_size
    out = [np.asarray(lt.tensors["mixer.out"][t], np.float64) + np.asarray(lt.tensors["ffn.out"][t], np.float64)
           for lt in lay]
    emb = np.asarray(ex.run.embedding[t], np.float64)
    V = [emb] + [sum(out[j:j + bs]) for j in range(0, len(lay), bs)]  # R_0, R_1.., and the last partial
    a = np.asarray(ex.run.final["final.attnres"][t], np.float64)
    assert a.shape == (len(V),) and abs(a.sum() - 1) < 1e-5
    h = sum(ac * v for ac, v in zip(a, V))
    scale = 1 / np.sqrt(np.mean(h * h) + m32.config.rms_norm_eps)
    u = m32.final_norm64 * m32.lm_head64[:, w] * scale
    totals = ex.route.totals()
    assert abs(totals[(0, "embedding")] - a[0] * emb @ u) < 1e-4
    for li in (0, 2, 40, 92):
        for part in ("mixer", "ffn"):
            y = np.asarray(lay[li].tensors[part + ".out"][t], np.float64)
            assert abs(totals[(li + 1, part)] - a[li // bs + 1] * y @ u) < 1e-4, (li, part)
    assert abs(ex.rest) <= 1e-4
    assert abs(sum(v for _, _, v in ex.blocks) + ex.rest - ex.logit) < 1e-9
    assert "not causal" in ex.route.label and "mix weights" in ex.route.label and "scale" in ex.route.label
