"""Animated export: the trace player's steps (or an orbit of the scene) as an MP4, WebM or GIF.

The frames come from the same off-screen path as the image export (SceneView.render_image, through
app/export/image.py render_view), on a view of its own that is never shown, so exporting never changes what the
window shows. Between steps the camera moves as the player moves it (eased, `move_s` seconds); each step
then holds for `hold_s` seconds with its caption ("3 / 33 · Tokenize" and what happens) burnt in with
QPainter, in the language asked for. Encoding is imageio-ffmpeg's (it ships its own ffmpeg binary): H.264
for .mp4, VP9 for .webm, ffmpeg's GIF encoder for .gif.

Speed (a 1080p MP4 of all steps in <= 30 s on 2 cores; bench/animate.py): a 1080p render costs
~0.2 CPU-s on a software OpenGL (llvmpipe). A step's held frames are one render, a camera move at most
`move_renders` renders; all renders of one animation draw into one kept framebuffer; each image goes to ffmpeg
once, as YUV 4:2:0, and ffmpeg stamps it with its frame time (hold_schedule), so the encoder codes ~140
images, not ~1,500 frames. The caption band sits below the picture (one height for the whole animation), so
the scene's colour legend along the picture's bottom stays visible.

The file appears only when complete (app/export/video_out.py): frames go to a temporary file beside the target that
ffmpeg writes through an open descriptor, checked and renamed over the target at the end; the container
follows the requested name; an encoder failure (exit status, ENOSPC, a cut-short file) is a one-line
ExportError and the old file stays; a failure, a cancel (the progress callback returns False) or a signal
removes the temporary file.
"""
from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

from app import i18n
from app.export.caption import caption_band_height, compose_frame
from app.export.image import ExportError, render_view

log = logging.getLogger(__name__)

MODES = ("steps", "orbit")
# the requested name's extension -> ffmpeg's codec, pixel format and options (app/export/video_out.py runs it)
ENCODERS: dict[str, dict] = {
    ".mp4": dict(codec="libx264", pix_fmt_out="yuv420p",
                 output_params=["-preset", "veryfast", "-crf", "20", "-movflags", "+faststart"]),
    ".webm": dict(codec="libvpx-vp9", pix_fmt_out="yuv420p",
                  output_params=["-deadline", "realtime", "-cpu-used", "8", "-row-mt", "1", "-b:v", "0",
                                 "-crf", "34"]),
    ".gif": dict(codec="gif", pix_fmt_out="pal8", output_params=["-loop", "0"]),
}
# GIF: each image gets its own 256-colour palette (palettegen's per-frame statistics, streamed: nothing is
# buffered) and ordered dithering. ffmpeg's fixed rgb8 palette was ~22 levels off the picture on average and made
# 23.9 MB for a 240-frame 640x360 orbit (now 11.5 MB; the 1503-frame steps GIF 13.7 -> 5.5 MB, ~2 levels off
# the MP4). No diff_mode=rectangle: with a palette per image it corrupted later frames (~10 levels off).
GIF_PALETTE = ("split[a][b];[a]palettegen=stats_mode=single:reserve_transparent=0[p];"
               "[b][p]paletteuse=new=1:dither=bayer:bayer_scale=5")
MAX_FPS = 60
MAX_FRAMES = 20000  # ~11 minutes at 30 fps: a bound, not a goal


class AnimationCancelled(Exception):
    """The progress callback asked to stop; no file was written."""


@dataclass(frozen=True)
class AnimationSpec:
    width: int = 1920
    height: int = 1080
    fps: int = 30
    mode: str = "steps"  # "steps" | "orbit"
    lang: str = "en"
    hold_s: float = 1.2  # each step stays on screen this long
    move_s: float = 0.5  # a camera move between two steps
    move_renders: int = 5  # distinct renders per camera move (each held for its share of the move)
    orbit_s: float = 8.0  # one full turn
    captions: bool = True
    labels: bool = True


@dataclass(frozen=True)
class Shot:
    """One render, held for `frames` frames: the step to show (index into steps, or None) and the camera."""

    step: int | None
    camera: dict
    frames: int


def tr(spec: AnimationSpec):
    """A translator in the export's language (the app's own language stays as it is)."""
    return lambda key, **fmt: i18n.tr(key, lang=spec.lang, **fmt)


def check_spec(spec: AnimationSpec, out: str) -> None:
    """ExportError (translated, one line) for a format, size, fps or mode the export cannot do."""
    t = tr(spec)
    ext = os.path.splitext(out)[1].lower()
    if ext not in ENCODERS:
        raise ExportError(t("anim.error.format", path=out, formats=", ".join(sorted(ENCODERS))))
    if spec.mode not in MODES:
        raise ExportError(t("anim.error.mode", mode=spec.mode))
    if not (isinstance(spec.fps, int) and 1 <= spec.fps <= MAX_FPS):
        raise ExportError(t("anim.error.fps", fps=spec.fps, max=MAX_FPS))
    from app.export.image import check_size

    check_size(spec.width, spec.height)
    if ext != ".gif" and (spec.width % 2 or spec.height % 2):
        raise ExportError(t("anim.error.odd_size", w=spec.width, h=spec.height))


# ------------------------------------------------------------------------------------------- planning


def apply_step(view, steps: Sequence, index: int, layer: int) -> None:
    """Put the view where the trace player puts the scene for steps[index] (layer, pass, token, focus)."""
    from scene.steps import focus_layer

    step = steps[index]
    if step.layer_type:
        view.set_layer(focus_layer(step, view.cfg.mixer_types, view.cfg.ffn_types, layer), animate=False)
    view.set_pass(step.pass_index)
    view.set_token(step.token)
    view.set_step_focus(step.kind)


def _move_shots(start: dict, target: dict, frames: int, renders: int, step: int) -> list[Shot]:
    """A camera move of `frames` frames drawn with at most `renders` distinct cameras (eased)."""
    from scene import camera as camlib

    if frames <= 0:
        return []
    renders = max(1, min(renders, frames))
    a, b = camlib.Camera.from_dict(start), camlib.Camera.from_dict(target)
    cuts = [round(frames * i / renders) for i in range(renders + 1)]
    shots = []
    for i in range(renders):
        t = (i + 1) / renders  # the move ends exactly on the target
        shots.append(Shot(step, camlib.lerp(a, b, t).to_dict(), cuts[i + 1] - cuts[i]))
    return shots


def plan_steps(view, steps: Sequence, spec: AnimationSpec, layer: int) -> list[Shot]:
    """Walk the steps on the view once and note each step's camera (the player's focus moves)."""
    hold = max(1, round(spec.hold_s * spec.fps))
    move = max(0, round(spec.move_s * spec.fps))
    shots: list[Shot] = []
    for i in range(len(steps)):
        before = view.camera_state()
        apply_step(view, steps, i, layer)
        after = view.camera_state()
        if i > 0 and after != before:
            shots += _move_shots(before, after, move, spec.move_renders, i)
        shots.append(Shot(i, after, hold))
    return shots


def plan_orbit(view, spec: AnimationSpec, step: int | None) -> list[Shot]:
    """One full turn around the scene's centre, one render per frame."""
    start = view.camera_state()
    n = max(2, round(spec.orbit_s * spec.fps))
    shots = []
    for i in range(n):
        cam = dict(start)
        cam["azimuth"] = (float(start["azimuth"]) + 360.0 * i / n) % 360.0
        shots.append(Shot(step, cam, 1))
    return shots


# ------------------------------------------------------------------------------------------- captions


def caption_text(steps: Sequence, index: int, spec: AnimationSpec, config=None) -> tuple[str, str]:
    """('3 / 33 · Tokenize', what the step does) in the export's language, with `config`'s real numbers
    (None: the default model's)."""
    from scene.steps import text_args

    t = tr(spec)
    step = steps[index]
    args = text_args(config, t)
    head = t("anim.caption", n=index + 1, total=len(steps), title=t(step.title_key, **args))
    return head, t(step.what_key, **args)


# ------------------------------------------------------------------------------------------- encoding


def yuv420_bytes(image: QImage) -> bytes:
    """The frame as planar YUV 4:2:0 (BT.601, limited range: what ffmpeg makes of rgb24 by default), so
    ffmpeg need not convert every held copy of it and the pipe carries half the bytes. Even width and
    height."""
    opaque32 = (QImage.Format.Format_ARGB32, QImage.Format.Format_ARGB32_Premultiplied, QImage.Format.Format_RGB32)
    img = image if image.format() in opaque32 else image.convertToFormat(QImage.Format.Format_RGB32)
    w, h = img.width(), img.height()
    px = np.frombuffer(img.constBits(), np.uint8, count=img.bytesPerLine() * h).reshape(h, -1)[:, : 4 * w]
    px = px.reshape(h, w, 4)  # B, G, R, A in memory (little-endian ARGB32)
    b, g, r = (px[..., i].astype(np.uint16) for i in range(3))
    y = ((66 * r + 129 * g + 25 * b + 128) >> 8) + 16
    # 2 x 2 means of the channels for the chroma planes
    r4, g4, b4 = ((c.reshape(h // 2, 2, w // 2, 2).sum(axis=(1, 3), dtype=np.int32) + 2) >> 2 for c in (r, g, b))
    u = ((-38 * r4 - 74 * g4 + 112 * b4 + 128) >> 8) + 128
    v = ((112 * r4 - 94 * g4 - 18 * b4 + 128) >> 8) + 128
    return y.astype(np.uint8).tobytes() + u.astype(np.uint8).tobytes() + v.astype(np.uint8).tobytes()


def rgb_array(image: QImage) -> np.ndarray:
    """H x W x 3 uint8 (what ffmpeg reads as rgb24)."""
    img = image.convertToFormat(QImage.Format.Format_RGB888)
    w, h = img.width(), img.height()
    rows = np.frombuffer(img.constBits(), np.uint8, count=img.bytesPerLine() * h).reshape(h, img.bytesPerLine())
    return np.ascontiguousarray(rows[:, : w * 3]).reshape(h, w, 3)


MAX_SCHEDULE_CHARS = 60000  # a longer frame schedule is sent frame by frame instead (a command-line bound)


def hold_schedule(holds: Sequence[int]) -> str | None:
    """ffmpeg `setpts` expression that gives the n-th image sent its frame time when every image i is held
    for holds[i] frames and the last one is sent once more for the video's last frame; None when no image is
    held (or the expression would be too long): then every frame is sent. A binary search over the image
    number N (nested ifs, depth log2 of the images: ffmpeg's parser limits nesting, not length)."""
    holds = [int(n) for n in holds]
    if not holds or max(holds) <= 1:
        return None
    starts = [0]
    for n in holds[:-1]:
        starts.append(starts[-1] + n)
    if holds[-1] > 1:
        starts.append(starts[-1] + holds[-1] - 1)  # the repeated last image, on the video's last frame

    def search(lo: int, hi: int) -> str:  # the frame time of image N for lo <= N < hi
        if hi - lo == 1:
            return str(starts[lo])
        mid = (lo + hi) // 2
        return f"if(lt(N\\,{mid})\\,{search(lo, mid)}\\,{search(mid, hi)})"

    expr = search(0, len(starts))
    return expr if len(expr) <= MAX_SCHEDULE_CHARS else None


class VideoFile:
    """Frames piped to ffmpeg, which writes a temporary file beside `path` through an open descriptor
    (app/export/video_out.py: the container follows the requested name, a special file at the target is refused, the
    encoder's failure is a one-line ExportError and the old file stays); `commit()` renames it over `path`,
    `abort()` (or any failure) removes it.

    With `holds` (frames per image, in the order the images come) a held image is sent once and ffmpeg
    stamps it with its frame time (a variable-frame-rate file: the encoder codes 138 images instead of
    1,500 frames for the 1080p steps video); players show it for its whole hold. Without, every frame is
    sent."""

    def __init__(self, path: str, width: int, height: int, fps: int, holds: Sequence[int] | None = None,
                 exe: str | None = None):
        from fractions import Fraction

        from app.export import video_out

        ext = os.path.splitext(path)[1].lower()  # the name asked for, not where a link leads
        if ext not in ENCODERS:
            raise ExportError(tr(AnimationSpec(lang=i18n.language()))(
                "anim.error.format", path=path, formats=", ".join(sorted(ENCODERS))))
        encoder = ENCODERS[ext]
        self.yuv = encoder["pix_fmt_out"] == "yuv420p"  # frames go in as ffmpeg writes them
        schedule = hold_schedule(holds) if holds is not None else None
        self.held = schedule is not None
        filters = ["-vf", f"setpts={schedule}", "-fps_mode", "vfr"] if self.held else []
        if ext == ".gif":
            graph = (f"setpts={schedule}," if self.held else "") + GIF_PALETTE
            filters = ["-filter_complex", graph] + (["-fps_mode", "vfr"] if self.held else [])
        args = ["-f", "rawvideo", "-vcodec", "rawvideo", "-s", f"{width}x{height}",
                "-pix_fmt", "yuv420p" if self.yuv else "rgb24", "-r", str(Fraction(fps).limit_denominator()),
                "-i", "-", "-an", "-vcodec", encoder["codec"], "-pix_fmt", encoder["pix_fmt_out"],
                "-v", "error", *filters, *encoder["output_params"]]
        try:
            self._out = video_out.VideoOut(path, args, exe=exe)
        except video_out.VideoError as exc:
            raise ExportError(str(exc)) from exc
        self.path = self._out.path
        self.tmp = self._out.tmp
        self.frames = 0
        self._last: tuple[bytes, int] | None = None  # the last image sent and its hold

    def write_image(self, image: QImage, times: int = 1) -> None:
        """One rendered image, held for `times` frames (converted once)."""
        self.write(yuv420_bytes(image) if self.yuv else rgb_array(image), times)

    def write(self, frame, times: int = 1) -> None:
        from app.export.video_out import VideoError

        data = frame if isinstance(frame, bytes) else frame.tobytes()
        try:
            for _ in range(1 if self.held else times):
                self._out.write(data)
        except VideoError as exc:
            raise ExportError(str(exc)) from exc
        self.frames += times
        self._last = (data, times)

    def commit(self) -> str:
        from app.export.video_out import VideoError

        try:
            if self.held and self._last is not None and self._last[1] > 1:
                self._out.write(self._last[0])  # the video's last frame: the last image's hold ends there
            return self._out.commit()  # waits for ffmpeg to finish the file, checks it, renames it
        except VideoError as exc:
            raise ExportError(str(exc)) from exc

    def abort(self) -> None:
        self._out.abort()


# ------------------------------------------------------------------------------------------- the export

Progress = Callable[[int, int], bool]  # (frames done, frames in all) -> False to cancel


def export(view, steps: Sequence, spec: AnimationSpec, out: str, layer: int,
           progress: Progress | None = None, step: int = 0) -> tuple[str, int]:
    """Render and encode the animation of `view` (a SceneView that is not on screen, holding the trace
    whose `steps` these are) to `out`. Returns (path written, frames). Raises ExportError (one translated
    line) or AnimationCancelled; either way no file is left behind."""
    check_spec(spec, out)
    if spec.mode == "steps" and not steps:
        raise ExportError(tr(spec)("anim.error.no_trace"))
    view.set_translator(tr(spec))
    band = band_height(steps, spec, step, view.cfg)
    size_view(view, spec.width, spec.height - band)  # the camera fits frame the picture above the band
    start_camera = view.camera_state()
    if spec.mode == "steps":
        shots = plan_steps(view, steps, spec, layer)
    else:
        if steps:
            apply_step(view, steps, min(step, len(steps) - 1), layer)
        shots = plan_orbit(view, spec, min(step, len(steps) - 1) if steps else None)
    total = sum(s.frames for s in shots)
    if total > MAX_FRAMES:
        raise ExportError(tr(spec)("anim.error.too_long", n=total, max=MAX_FRAMES))
    view.set_camera_state(start_camera)
    if spec.mode == "steps":
        apply_step(view, steps, 0, layer)
    if progress is not None and progress(0, total) is False:
        raise AnimationCancelled()
    t0 = time.perf_counter()
    video = VideoFile(out, spec.width, spec.height, spec.fps, holds=[s.frames for s in shots])
    try:
        with view.keeping_export_buffers():  # one framebuffer for all frames (one size)
            _write_shots(view, steps, shots, spec, layer, video, progress, total, band)
        path = video.commit()
    except BaseException:
        video.abort()
        raise
    log.info("animate: wrote %s (%d frames, %d x %d, %.1f s)", path, total, spec.width, spec.height,
             time.perf_counter() - t0)
    return path, total


def band_height(steps: Sequence, spec: AnimationSpec, step: int, config) -> int:
    """The caption band's height for the whole animation (the longest caption it shows); 0 without one."""
    if not spec.captions or not steps:
        return 0
    shown = range(len(steps)) if spec.mode == "steps" else [min(step, len(steps) - 1)]
    return caption_band_height(spec.width, spec.height, [caption_text(steps, i, spec, config) for i in shown])


def render_frame(view, steps: Sequence, spec: AnimationSpec, index: int | None, band: int) -> QImage:
    """One frame as the video shows it: the view's picture (labels, legend) above the caption band of step
    `index` (no band: the picture fills the frame)."""
    image = render_view(view, spec.width, spec.height - band, labels=spec.labels)
    if band and index is not None:
        image = compose_frame(image, spec.width, spec.height, *caption_text(steps, index, spec, view.cfg))
    return image


def _write_shots(view, steps: Sequence, shots: Sequence[Shot], spec: AnimationSpec, layer: int,
                 video: VideoFile, progress: Progress | None, total: int, band: int = 0) -> None:
    """Render every shot once (labels, caption band below the picture) and send it to the encoder for its
    frames."""
    shown = None
    for shot in shots:
        if spec.mode == "steps" and shot.step != shown:
            apply_step(view, steps, shot.step, layer)
            shown = shot.step
        view.set_camera_state(shot.camera)
        video.write_image(render_frame(view, steps, spec, shot.step, band), shot.frames)
        if progress is not None and progress(video.frames, total) is False:
            raise AnimationCancelled()


def offscreen_view(config, trace, layer: int, camera: dict | None, width: int, height: int):
    """A SceneView that is never shown, holding the trace at the layer, with the window's camera angles."""
    from scene.view import SceneView

    view = SceneView()
    view.setAttribute(Qt.WA_DontShowOnScreen, True)
    size_view(view, width, height)
    view.set_config(config)
    view.set_trace(trace)
    view.set_layer(layer, animate=False)
    if camera:
        try:
            view.set_camera_state(camera)
        except (KeyError, TypeError, ValueError):
            pass
    return view


def size_view(view, width: int, height: int) -> None:
    """The never-shown view at the picture's aspect (at most 1600 x 1000), so camera fits frame it the same."""
    fit = min(1.0, 1600 / width, 1000 / height)
    size = (max(16, int(width * fit)), max(16, int(height * fit)))
    if (view.width(), view.height()) != size:
        view.resize(*size)
        view.container.resize(*size)  # never shown, so no layout pass sizes it: the camera fits read this


def duration_text(frames: int, fps: int) -> str:
    seconds = frames / max(fps, 1)
    return f"{int(seconds // 60)}:{int(math.floor(seconds % 60)):02d}"
