"""A view file's knock-outs and explained position, checked (Qt-free, no torch; app/files/viewfile.py reads the rest).

`read_knockouts` checks the `knockouts` object field by field against the model (layers, MoE layers, experts,
AttnRes sources). `position_problem` checks the positions against the view's own prompt: the explained position
(`explain3d.position`) must be one of the trace's tokens (the prompt's toy tokens and the `tokens` generated),
and every knocked-out token one at or before the explained position (the last prompt position when the view
names none), as compute.explain's knock-out takes them. View.from_dict runs both on every view, so the window,
`k3-explorer export --view` and app.api refuse the same files with one ViewError naming the field, before
anything changes; the command line checks again (viewfile.check_positions) when `--prompt` or `--tokens`
replace the view's.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

MAX_KNOCKOUTS = 64  # items per knockouts list (tokens, blocks, experts)
KNOCKOUT_MODES = ("zero", "mean")  # compute.explain.knockout.ABLATION_MODES
KNOCKOUT_PARTS = ("mixer", "ffn")  # compute.explain.knockout.BLOCK_PARTS
KEYS = ("mode", "tokens", "blocks", "experts", "sources")


def read_knockouts(reader, value: Any, config, max_position: int) -> dict | None:
    """The optional knock-out set (compute.explain.knockout.Ablation's fields) of a view, checked by `reader`
    (app.files.viewfile._Reader: object, fail, choice, integer, optional_int) against `config`; token positions 0..max_position
    here, against the prompt in position_problem. None when nothing is knocked out."""
    if value is None:
        return None
    value = reader.object("knockouts", value, KEYS)
    mode = reader.choice("knockouts.mode", value.get("mode", "zero"), KNOCKOUT_MODES)
    n_layers, n_experts = config.num_hidden_layers, config.n_routed_experts
    lists = {}
    for name in KEYS[1:]:
        items = value.get(name, [])
        if not isinstance(items, list):
            raise reader.fail(f"knockouts.{name}", "must be a list")
        if len(items) > MAX_KNOCKOUTS:
            raise reader.fail(f"knockouts.{name}", f"{len(items)} entries (at most {MAX_KNOCKOUTS})")
        lists[name] = items
    tokens = [reader.integer(f"knockouts.tokens[{i}]", p, 0, max_position) for i, p in enumerate(lists["tokens"])]
    blocks = []
    for i, b in enumerate(lists["blocks"]):
        name = f"knockouts.blocks[{i}]"
        if not isinstance(b, list) or len(b) != 2:
            raise reader.fail(name, "must be [layer, part], e.g. [37, \"mixer\"]")
        blocks.append([reader.integer(name + "[0]", b[0], 1, n_layers),
                       reader.choice(name + "[1]", b[1], KNOCKOUT_PARTS)])
    experts = []
    for i, e in enumerate(lists["experts"]):
        name = f"knockouts.experts[{i}]"
        if not isinstance(e, list) or len(e) != 2:
            raise reader.fail(name, "must be [layer or null, expert id]")
        if "moe" not in config.ffn_types or n_experts < 1:
            raise reader.fail(name, "this model has no MoE layer, no experts to knock out")
        layer = reader.optional_int(name + "[0]", e[0], 1, n_layers)
        if layer is not None and config.ffn_types[layer - 1] != "moe":
            raise reader.fail(name + "[0]", f"layer {layer} has a dense MLP, no experts")
        experts.append([layer, reader.integer(name + "[1]", e[1], 0, n_experts - 1)])
    bs = config.attn_res_block_size  # AttnRes candidates stored: the embedding and every block but the last
    n_sources = len(range(0, n_layers, bs)) if bs else 0
    sources = []
    for i, c in enumerate(lists["sources"]):
        if not n_sources:
            raise reader.fail("knockouts.sources", "this model has no Block Attention Residuals")
        sources.append(reader.integer(f"knockouts.sources[{i}]", c, 0, n_sources - 1))
    if not (tokens or blocks or experts or sources):
        return None
    return {"mode": mode, "tokens": tokens, "blocks": blocks, "experts": experts,
            **({"sources": sources} if sources else {})}


@lru_cache(maxsize=1)
def _tokenizer():
    from compute.language.tokenizer import ToyTokenizer  # its split does not depend on the vocabulary size

    return ToyTokenizer()


def prompt_tokens(prompt: str) -> int:
    """How many toy tokens the engine makes of `prompt`."""
    return len(_tokenizer().split(prompt))


def explained_position(view, n_prompt: int | None = None) -> int:
    """The 0-based position whose prediction `view` (an app.files.viewfile.View) explains: its explain3d position, else
    the last prompt position (what the window, the command line and render() explain)."""
    at = (view.explain3d or {}).get("position")
    return int(at) if at is not None else (prompt_tokens(view.prompt) if n_prompt is None else n_prompt) - 1


def position_problem(view) -> tuple[str, str] | None:
    """(field, problem) when `view`'s explained position or a knocked-out token does not fit its prompt and token
    count, else None."""
    n_prompt = prompt_tokens(view.prompt)
    n_trace = n_prompt + int(view.tokens)
    shape = f"the view's prompt has {n_prompt} toy tokens, 0…{n_prompt - 1}, and {view.tokens} generated"
    at = (view.explain3d or {}).get("position")
    if at is not None and not 0 <= at < n_trace:
        return "explain3d.position", f"{at} is outside 0…{n_trace - 1} ({shape})"
    explained = explained_position(view, n_prompt)
    for i, p in enumerate((view.knockouts or {}).get("tokens", ())):
        if not 0 <= p <= explained:
            where = "the explained position" if at is not None else "the last prompt position"
            return (f"knockouts.tokens[{i}]", f"token position {p} is past {where}, {explained} ({shape}): "
                    f"a knock-out takes positions 0…{explained}")
    return None


def knockout_line(res) -> str:
    """One plain line of a knock-out's before and after (app/docks/explain/model.ExplainResult with .knockout), in
    the label language: what `k3-explorer export --view` prints for a view's knock-outs (the Explain dock's
    sentence, without markup)."""
    from app.i18n import tr

    def piece(p: str) -> str:
        return repr(p)[:40]

    ko, what = res.knockout, []
    for it in ko["items"]:
        if it[0] == "token":
            what.append(tr("knockout.what.token", position=it[1], piece=piece(res.pieces[it[1]])))
        elif it[0] == "block":
            what.append(tr("checks.ko.block", layer=it[1], part=tr(f"checks.ko.part.{it[2]}")))
        elif it[0] == "source":
            what.append(tr("knockout.what.source0") if it[1] == 0 else tr("knockout.what.source", n=it[1]))
        elif it[1] is None:
            what.append(tr("knockout.what.expert_all", n=it[2]))
        else:
            what.append(tr("knockout.what.expert", n=it[2], layer=it[1]))
    return tr("checks.cli.knockout", what="; ".join(what), mode=tr(f"explain.mode.{ko['mode']}"),
              position=res.position, before=piece(res.word), after=piece(ko["word"]),
              logit=f"{res.logit:.2f}", logit_after=f"{ko['logit_after']:.2f}")
