"""The checks of the one text walk (tests/app/text_walk.py, run by tests/app/test_model_truth.py on every model and
the weights it runs) can fail: a text claiming the weights that do not run, and a sentence showing one of K3's
numbers on another model, are found and named by place; a text naming both kinds of weights, or a choice offered
in a combo box, is no claim."""
from compute.config import ModelConfig, available_configs

from tests.app.text_walk import k3_sentences, weights_claims


def test_the_claim_check_can_fail():
    seen = [("inspector.x", "Values are from the seeded random weights."), ("a", "Weights: random (no trained toy)"),
            ("b", "학습된 가중치로 돌린 값"), ("c", "trained weights")]
    assert [p for p, _t in weights_claims(seen, "trained", set())] == ["inspector.x"]
    assert [p for p, _t in weights_claims(seen, "random", {"trained weights"})] == ["b"]
    deepseek = ModelConfig.from_json(available_configs()["deepseek-v3"])
    texts = [("inspector.ffn.out", "A transform (MoE with 16 of 896 experts + 2 shared). In K3: 896 experts."),
             ("inspector.embedding", "Everything the 93 layers do starts here."), ("learn.1", "All 896 experts.")]
    assert k3_sentences(texts, deepseek) == [("inspector.ffn.out", "A transform (MoE with 16 of 896 experts + 2 shared)."),
                                             ("inspector.embedding", "Everything the 93 layers do starts here.")]


def test_the_k3_number_check_can_fail():
    """Reader.untrue finds a K3 number on another model, and lets it pass where the text says it is K3's."""
    from tests.app.text_walk import Reader

    read = Reader(ModelConfig.from_json(available_configs()["deepseek-v3"]))
    read.add("inspector.ffn.out", ["routes each token to 8 of 896 experts", "K3 routes to 16 of 896 experts",
                                   "a bias of +4.896", "vocabulary of 163,840 pieces", "real K3: [2, 896]"])
    assert [t for _, t in read.untrue()] == ["routes each token to 8 of 896 experts", "vocabulary of 163,840 pieces",
                                             "real K3: [2, 896]"]
    k3 = Reader(ModelConfig.from_json(available_configs()["kimi-k3"]))
    k3.add("inspector.ffn.out", "routes each token to 16 of 896 experts")
    assert k3.untrue() == []
