"""The overlay's look, shared by its labels, header and legend: fonts (CJK capable), the two themes' colours,
and OverlayInput, what the overlay is drawn from (scene/labels.py places and paints it)."""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QFont

from scene import palette
from scene.camera import Camera
from scene.layout import Layout

FONT_FAMILIES = ["Noto Sans CJK KR", "Noto Sans KR", "Noto Sans CJK SC", "DejaVu Sans", "Sans Serif"]

# colours of the overlay's text and panels per theme (RGBA 0-255)
THEMES: dict[str, dict[str, tuple[int, int, int, int]]] = {
    "dark": {"panel": (14, 16, 22, 255), "panel_edge": (60, 66, 80, 255), "title": (235, 237, 242, 255),
             "text": (235, 237, 242, 255), "dim": (170, 176, 190, 255), "note": (255, 214, 120, 255),
             "legend_text": (220, 224, 232, 255), "legend_note": (165, 172, 188, 255),
             "label": (14, 16, 22, 190), "label_emph": (14, 16, 22, 235), "label_text": (235, 237, 242, 255),
             "label_text_emph": (255, 255, 255, 255), "label_edge": (255, 255, 255, 200)},
    "light": {"panel": (250, 250, 252, 255), "panel_edge": (190, 195, 205, 255), "title": (18, 20, 26, 255),
              "text": (18, 20, 26, 255), "dim": (80, 86, 100, 255), "note": (150, 88, 0, 255),
              "legend_text": (30, 34, 44, 255), "legend_note": (80, 86, 100, 255),
              "label": (250, 250, 252, 215), "label_emph": (255, 255, 255, 245), "label_text": (18, 20, 26, 255),
              "label_text_emph": (0, 0, 0, 255), "label_edge": (40, 44, 56, 220)},
}
THEME_NAMES: tuple[str, ...] = tuple(THEMES)
BACKGROUNDS = {"dark": palette.role("background"), "light": (0.97, 0.97, 0.98, 1.0)}


def make_font(px: float, bold: bool = False) -> QFont:
    f = QFont()
    f.setFamilies(FONT_FAMILIES)
    f.setPixelSize(max(6, int(round(px))))
    f.setBold(bold)
    f.setHintingPreference(QFont.HintingPreference.PreferNoHinting)
    return f


def qcolor(role_or_rgba, alpha: float | None = None) -> QColor:
    rgba = palette.role(role_or_rgba) if isinstance(role_or_rgba, str) else role_or_rgba
    c = QColor.fromRgbF(*[float(v) for v in rgba[:3]], float(rgba[3] if alpha is None else alpha))
    return c


def theme_colour(theme: str, name: str) -> QColor:
    return QColor(*THEMES.get(theme, THEMES["dark"])[name])


@dataclass
class OverlayInput:
    layout: Layout
    camera: Camera
    tr: callable
    selected: str | None = None
    hovered: str | None = None
    has_trace: bool = False
    tokens: list | None = None  # pieces per drawn row
    step_note: str = ""  # text for the current trace step (S7)
    flow_on: bool = False
    extra_labels: list | None = None  # [(world point, text, role)]
    focus: tuple = ()  # ids of the blocks the current step names: their labels are never dropped
    theme: str = "dark"  # "dark" | "light" (THEMES)
    label_scale: float = 1.0  # multiplies every font (presentation mode)
    weights: str = ""  # "trained" | "random": the weights that produced the trace drawn ("" = no trace)
    lens_labels: list | None = None  # the logit-lens column's word labels (scene/lens_column.label_candidates)
    explain_note: str = ""  # the header's line about the lens column / route (scene/explain_overlay.header_note)
    route_on: bool = False  # the contribution route is drawn: the legend says what its colours mean
    units_on: bool = False  # the heads' / experts' total effects are lit in the exploded layer (legend note)
    route_kind: str = ""  # "causal" | "direct" (scene.explain_data.ExplainOverlay.route_kind): the legend's words
    outside_note: str = ""  # the prompt is outside the toy language: the answer is not meaningful (feature I5)


@dataclass
class _Fonts:
    title: QFont
    sub: QFont
    name: QFont
    shape: QFont


def _fonts(s: float) -> _Fonts:
    return _Fonts(make_font(17 * s, True), make_font(12 * s), make_font(11.5 * s, True), make_font(10 * s))
