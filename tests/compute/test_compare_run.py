"""compute.teaching.compare_run's small readers, on hand-made arrays (the expected values worked out by hand here)."""
import numpy as np

from compute.teaching.compare_run import copy_layers, mention_of, mixer_best, top_experts, top_heads


def test_mention_is_the_last_earlier_position_of_the_word():
    pieces = ["the", " cup", " x", " cup", " y"]
    assert mention_of(pieces, 4, " cup") == 3 and mention_of(pieces, 3, " cup") == 1
    assert mention_of(pieces, 4, " box") is None


def test_copy_layers_read_the_mention_column_down_and_the_answer_column_up():
    p = np.zeros((5, 4))  # rows: embedding, after layers 1..4; columns: positions
    p[:3, 1] = [1.0, 0.9, 0.6]  # the mention carries the answer up to layer 2
    p[3:, 3] = [0.7, 1.0]  # it reaches the last position from layer 3
    p[2, 3] = 0.49  # under the share: not yet
    assert copy_layers(p, 1, 3) == (2, 3)
    assert copy_layers(p, None, 3) == (None, 3)
    p[:, 3] = np.nan
    assert copy_layers(p, 1, 3) == (2, None)


def test_top_heads_and_experts_name_one_based_layers_and_skip_nan():
    eff = np.array([[0.1, np.nan], [0.5, 0.2], [np.nan, 0.3]])
    assert top_heads(eff, ("kda", "kda", "mla"), n=3) == ((2, 0, "kda", 0.5), (3, 1, "mla", 0.3), (2, 1, "kda", 0.2))
    ex = np.full((2, 4), np.nan)
    ex[0, 3], ex[1, 0] = 0.25, 0.75
    assert top_experts((2, 5), ex, n=3) == ((5, 0, 0.75), (2, 3, 0.25))


def test_mixer_best_per_kind_uses_the_mixer_part_only():
    b = np.zeros((3, 2, 2))
    b[0, 0, 1] = 0.4  # layer 1 (KDA) mixer at position 1
    b[1, 1, 0] = 0.9  # layer 2's FFN: not a mixer
    b[2, 0, 0] = 0.6  # layer 3 (MLA) mixer at position 0
    assert mixer_best(b, ("kda", "kda", "mla")) == {"kda": (0.4, 1, 1), "mla": (0.6, 3, 0)}
    assert mixer_best(b, ("mla", "mla", "mla"))["kda"] is None


def test_the_survey_takes_the_first_cuts_of_each_language_each_after_a_distractor():
    from compute.language import task
    from compute.teaching.compare_survey import cuts

    got = cuts(3)
    assert len(got) == 6
    ko = [c for c in got if not c[1].isascii()]
    en = [c for c in got if c[1].isascii()]
    assert len(ko) == 3 and len(en) == 3
    for prompt, answer in got:
        first, rest = prompt.split("\n", 1)  # the distractor sentence, then the cut
        assert answer not in first and answer in rest
        assert answer in (task.KO_OBJECTS if not answer.isascii() else task.EN_OBJECTS)
