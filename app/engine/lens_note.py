"""The Explain dock's lens note for the loaded model (issue 40.7): "after layer ℓ" means the AttnRes final mix for
a model with Attention Residuals (K3) and the plain residual stream for one without (Kimi Linear, K2, DeepSeek-V3),
and the last layer is the model's own count — never K3's 93 on another model. Qt-free."""
from __future__ import annotations


def lens_note(config, tr) -> str:
    """The note in the current language (`tr` = app.widgets.safe_text.rich_tr for a rich-text label: the model's
    name comes from its config file and is escaped there; app.i18n.tr for plain text) for `config` (a compute.config.ModelConfig; None: K3's)."""
    if config is None:
        from compute.config import default_config

        config = default_config()
    kind = "attnres" if config.attn_res_block_size else "plain"
    return tr(f"explain.lens.note.{kind}", layers=config.num_hidden_layers, model=config.display_name)
