"""Monospace text that holds Hangul keeps one face for Latin and digits.

Qt's <code> and 'font-family:monospace' name one family; a line holding Hangul was shaped as one item in the
fallback CJK mono face, digits and Latin included (narrower, a size smaller than the next line). These tests
lay the real widgets' texts out and read which face draws each glyph."""
import html

from PySide6.QtGui import QFont, QTextDocument, QTextLayout

from app.widgets.paint import MONO_FAMILIES, mono_font, mono_html

LATIN_MONO, HANGUL_MONO = MONO_FAMILIES
LINE = "1. ' 상자를' 0.312 → 0.402"


def _hangul(text: str) -> int:
    return sum(1 for ch in text if "\uac00" <= ch <= "\ud7a3")


def glyph_faces_rich(rich: str, font: QFont | None = None) -> dict[str, int]:
    """Glyph count per font family when `rich` text is laid out as a QLabel / QTextBrowser does."""
    doc = QTextDocument()
    if font is not None:
        doc.setDefaultFont(font)
    doc.setHtml(rich)
    doc.setTextWidth(2000)
    doc.size()  # lays the document out
    faces: dict[str, int] = {}
    block = doc.begin()
    while block.isValid():
        for run in block.layout().glyphRuns(0, len(block.text())):
            fam = run.rawFont().familyName()
            faces[fam] = faces.get(fam, 0) + len(run.glyphIndexes())
        block = block.next()
    return faces


def glyph_faces_plain(text: str, font: QFont) -> dict[str, int]:
    lay = QTextLayout(text, font)
    lay.beginLayout(); lay.createLine(); lay.endLayout()
    faces: dict[str, int] = {}
    for run in lay.glyphRuns():
        fam = run.rawFont().familyName()
        faces[fam] = faces.get(fam, 0) + len(run.glyphIndexes())
    return faces


def assert_only_hangul_in_cjk(faces: dict[str, int], text: str):
    assert faces.get(HANGUL_MONO, 0) == _hangul(text), faces
    assert faces.get(LATIN_MONO, 0) >= len(text.replace(" ", "")) - _hangul(text) - 2, faces  # '→' may fall back


def test_mono_html_draws_only_hangul_in_the_cjk_face(qapp):
    assert_only_hangul_in_cjk(glyph_faces_rich(mono_html(html.escape(LINE))), LINE)


def test_the_single_family_markup_it_replaces_does_not(qapp):
    """The check above can fail: <code> puts the whole line in the CJK face on these machines."""
    faces = glyph_faces_rich(f"<code>{html.escape(LINE)}</code>")
    assert faces.get(HANGUL_MONO, 0) > _hangul(LINE), faces


def test_mono_font_keeps_the_size_and_takes_both_families(qapp):
    base = QFont(); base.setPointSizeF(13.5)
    f = mono_font(base)
    assert f.families() == MONO_FAMILIES and f.pointSizeF() == 13.5
    assert_only_hangul_in_cjk(glyph_faces_plain(LINE, f), LINE)


def test_harness_xtml_box_keeps_one_mono_face(qtbot):
    from app.docks.learn.harness import HarnessPanel
    p = HarnessPanel(); qtbot.addWidget(p)
    p.recompute()
    rich = p.xtml.toHtml()
    faces = glyph_faces_rich(rich, p.xtml.font())
    assert faces.get(LATIN_MONO, 0) > 0, faces  # the tag marks are drawn in the Latin mono face


def test_tokenizer_bytes_use_both_mono_families(qtbot):
    from app.docks.experiments.tokenizer import TokenizerPanel
    t = TokenizerPanel(); qtbot.addWidget(t)
    assert t.bytes.font().families() == MONO_FAMILIES
    assert_only_hangul_in_cjk(glyph_faces_plain(LINE, t.bytes.font()), LINE)


def test_sampling_candidates_with_hangul_keep_one_mono_face(qapp):
    """The trace player's top-5 lines (the sampling step): a Hangul word's line has its digits in the Latin
    mono face like the line of a Latin word under it."""
    from app.docks.trace_player import candidate_rows
    rows = candidate_rows([(" 상자를", 0.312, 0.402), (" cup", 0.1, 0.05)])
    hangul_line, latin_line = rows[1][1], rows[2][1]
    text = QTextDocument(); text.setHtml(hangul_line)
    plain = text.toPlainText()
    faces = glyph_faces_rich(hangul_line)
    assert faces.get(HANGUL_MONO, 0) == _hangul(plain), faces
    assert glyph_faces_rich(latin_line).get(HANGUL_MONO, 0) == 0
