"""The Explain dock's Qt-free data, which lives in the one explanation service (app/engine/explain_service.py) that the
window, the API and the command line share; the dock's parts import these names from here."""
from __future__ import annotations

from app.engine.explain_service import (ABLATION_MODES, LAYER_WORDS, TOP_BLOCKS, TOP_EXPERTS, ExplainRequest,  # noqa: F401
                                 ExplainResult, explain_result, folded_words, other_weights)
