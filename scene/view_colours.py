"""The SceneView's colour jobs (a mixin: scene/view.py): the cell and stack colours of the shown trace, computed
for the next frame by whoever draws it (apply_colours, in the render thread) or ahead on the engine thread
(precolour), read under SCENE_LOCK and computed without it; only colour buffers change."""
from __future__ import annotations

import functools

import numpy as np

from scene import colouring
from scene.gl_items import SCENE_LOCK
from scene.layout import Layout

__all__ = ["ColourMixin", "atomic"]


def atomic(method):
    """Run a SceneView method under SCENE_LOCK: a frame sees the scene before or after it, never halfway."""
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with SCENE_LOCK:
            return method(self, *args, **kwargs)
    return locked


def _grid_colors(fam, layout: Layout, trace, pass_index: int, token: int) -> np.ndarray:
    """[n_boxes, 4] colours of a family of grid blocks (cells / experts) for one trace, pass and token."""
    out = np.empty((fam.n_boxes, 4), np.float32)
    for b in fam.blocks:
        k, n = fam.ranges[b.id]
        out[k:k + n] = colouring.block_colors(b, layout, trace, pass_index, token)
    return out


class ColourMixin:
    """Colour state of a SceneView: it has .layout, .families, .meshes, .trace, .pass_index, .token,
    ._box_rgba, ._stale_colours, ._colour_serial, ._precoloured, .hover_cell, _stack_emphasis(), drawn_trace()
    and _update_outlines()."""

    def _colour_job(self) -> tuple:
        """What _family_colors needs, read under SCENE_LOCK so that it can compute without the lock."""
        pre = self._precoloured
        pre = pre[2] if pre is not None and pre[0] == self._colour_inputs(self.trace) else {}
        return (self.layout, self.families, self.drawn_trace(), self.pass_index, self.token,
                self._stack_emphasis(), pre)

    @staticmethod
    def _family_colors(name: str, job: tuple) -> np.ndarray:
        layout, families, trace, pass_index, token, emphasis, pre = job
        if name == "stack":
            fam = families[name]
            out = np.empty((fam.n_boxes, 4), np.float32)
            for b in fam.blocks:
                k, n = fam.ranges[b.id]
                out[k:k + n] = colouring.stack_colors(b, layout, emphasis)
            return out
        if name in pre:
            return pre[name]
        return _grid_colors(families[name], layout, trace, pass_index, token)

    def _colour_inputs(self, trace) -> tuple:
        """What the cell colours of a family depend on besides the trace's numbers."""
        return id(trace), id(self.layout), self.pass_index, self.token

    def precolour(self, trace) -> None:
        """The cell colours the next frame will need for trace, computed ahead (the engine thread calls this
        right after a run, while the UI thread and the render thread are idle); apply_colours uses them if
        the view still shows what they were computed for (same layout, pass and token), else computes anew.
        Reads the view's state under SCENE_LOCK; computes without it."""
        with SCENE_LOCK:
            layout, families, old = self.layout, self.families, self.trace
            pass_index, token = self.pass_index, self.token
        if layout is None or old is None or not layout.trace_ok or not self._same_shapes(old, trace):
            return  # set_trace will rebuild the layout: colours are computed with it
        pass_index = min(pass_index, len(trace.passes) - 1)
        colours = {name: _grid_colors(families[name], layout, trace, pass_index, token)
                   for name in ("cells", "experts") if name in families}
        with SCENE_LOCK:
            self._precoloured = ((id(trace), id(layout), pass_index, token), trace, colours)

    @atomic
    def recolour(self, families: tuple[str, ...] = ("stack", "cells", "experts")) -> None:
        """Cell colours of these families follow the trace / pass / token / step again. They are computed for
        the next frame by whoever draws it (apply_colours, in the render thread), so a new trace during a
        slider drag costs the UI thread nothing here; only colour buffers change."""
        if self.layout is None:
            return
        self._mark_stale(name for name in families if name in self.families)
        self._update_outlines()  # asks for the frame

    def _mark_stale(self, families) -> None:
        with SCENE_LOCK:
            self._stale_colours |= set(families)
            self._colour_serial += 1

    def apply_colours(self) -> None:
        """Compute the stale families' colours now (any thread; no frame request). What they depend on is read
        under SCENE_LOCK and they are computed without it, so the UI thread does not wait for them; they are
        used only if nothing made them stale meanwhile, else computed again (the last try under the lock)."""
        for attempt in range(3):
            with SCENE_LOCK:
                if not self._stale_colours:
                    return
                serial, names, job = self._colour_serial, sorted(self._stale_colours), self._colour_job()
                if attempt == 2:  # the scene keeps changing: finish under the lock
                    self._install_colours({name: self._family_colors(name, job) for name in names})
                    return
            colours = {name: self._family_colors(name, job) for name in names}
            with SCENE_LOCK:
                if serial == self._colour_serial:
                    self._install_colours(colours)
                    return

    def _install_colours(self, colours: dict[str, np.ndarray]) -> None:  # SCENE_LOCK held
        self._stale_colours.clear()
        for name, rgba in colours.items():
            self._box_rgba[name] = rgba
            self._upload_colors(name, notify=False)

    def _upload_colors(self, name: str, notify: bool = True) -> None:
        if name in self._stale_colours or name not in self._box_rgba:
            return  # apply_colours uploads them (hover highlight included) before the next frame
        rgba = self._box_rgba[name]
        if self.hover_cell is not None:
            bid, r, c = self.hover_cell
            b = self.layout.by_id.get(bid)
            if b is not None and b.family == name and b.grid is not None:
                k, _ = self.families[name].ranges[bid]
                rgba = rgba.copy()
                i = k + r * b.grid[1] + c
                rgba[i, :3] = np.minimum(rgba[i, :3] * 0.5 + 0.55, 1.0)
        self.meshes[name].set_colors(self.families[name].box_colors_to_vertex(rgba), notify=notify)
