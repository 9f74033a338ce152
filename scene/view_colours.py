"""The SceneView's colour job (a part the view owns: `SceneView.colours`): the cell and stack colours of the
shown trace, computed for the next frame by whoever draws it (apply, in the render thread) or ahead on the engine
thread (precolour), read under SCENE_LOCK and computed without it; only colour buffers change. It reads the view's
public state only (.layout, .families, .meshes, .trace, .pass_index, .token, .hover_cell, drawn_trace(),
stack_emphasis(), same_shapes(), update_outlines())."""
from __future__ import annotations

import functools

import numpy as np

from scene import colouring
from scene.gl_items import SCENE_LOCK
from scene.layout import Layout

__all__ = ["ColourJob", "atomic"]


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


def _family_colors(name: str, job: tuple) -> np.ndarray:
    """One family's [n_boxes, 4] colours from a job (ColourJob.job: what they depend on)."""
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


class ColourJob:
    """The colour state of a SceneView: each family's box colours, which are stale, and the colours the
    engine thread computed ahead."""

    def __init__(self, view):
        self.view = view
        self.box_rgba: dict[str, np.ndarray] = {}
        self.stale: set[str] = set()  # families whose colours the next frame must recompute
        self.serial = 0  # bumped by every change that makes colours stale (apply checks it)
        self.precoloured = None  # (colour inputs, trace, {family: rgba}) from precolour()

    def reset(self, families) -> None:
        """A new layout: no colours kept, these families' colours due (under SCENE_LOCK)."""
        self.box_rgba = {}
        self.stale = set()
        self.mark_stale(families)

    def job(self) -> tuple:
        """What _family_colors needs, read under SCENE_LOCK so that it can compute without the lock."""
        v = self.view
        pre = self.precoloured
        pre = pre[2] if pre is not None and pre[0] == self.inputs(v.trace) else {}
        return (v.layout, v.families, v.drawn_trace(), v.pass_index, v.token, v.stack_emphasis(), pre)

    def inputs(self, trace) -> tuple:
        """What the cell colours of a family depend on besides the trace's numbers."""
        return id(trace), id(self.view.layout), self.view.pass_index, self.view.token

    def precolour(self, trace) -> None:
        """The cell colours the next frame will need for trace, computed ahead (the engine thread calls this
        right after a run, while the UI thread and the render thread are idle); apply uses them if the view
        still shows what they were computed for (same layout, pass and token), else computes anew. Reads the
        view's state under SCENE_LOCK; computes without it."""
        v = self.view
        with SCENE_LOCK:
            layout, families, old = v.layout, v.families, v.trace
            pass_index, token = v.pass_index, v.token
        if layout is None or old is None or not layout.trace_ok or not v.same_shapes(old, trace):
            return  # set_trace will rebuild the layout: colours are computed with it
        pass_index = min(pass_index, len(trace.passes) - 1)
        colours = {name: _grid_colors(families[name], layout, trace, pass_index, token)
                   for name in ("cells", "experts") if name in families}
        with SCENE_LOCK:
            self.precoloured = ((id(trace), id(layout), pass_index, token), trace, colours)

    def recolour(self, families: tuple[str, ...] = ("stack", "cells", "experts")) -> None:
        """Cell colours of these families follow the trace / pass / token / step again. They are computed for
        the next frame by whoever draws it (apply, in the render thread), so a new trace during a slider drag
        costs the UI thread nothing here; only colour buffers change."""
        with SCENE_LOCK:
            v = self.view
            if v.layout is None:
                return
            self.mark_stale(name for name in families if name in v.families)
            v.update_outlines()  # asks for the frame

    def mark_stale(self, families) -> None:
        with SCENE_LOCK:
            self.stale |= set(families)
            self.serial += 1

    def apply(self) -> None:
        """Compute the stale families' colours now (any thread; no frame request). What they depend on is read
        under SCENE_LOCK and they are computed without it, so the UI thread does not wait for them; they are
        used only if nothing made them stale meanwhile, else computed again (the last try under the lock)."""
        for attempt in range(3):
            with SCENE_LOCK:
                if not self.stale:
                    return
                serial, names, job = self.serial, sorted(self.stale), self.job()
                if attempt == 2:  # the scene keeps changing: finish under the lock
                    self._install({name: _family_colors(name, job) for name in names})
                    return
            colours = {name: _family_colors(name, job) for name in names}
            with SCENE_LOCK:
                if serial == self.serial:
                    self._install(colours)
                    return

    def _install(self, colours: dict[str, np.ndarray]) -> None:  # SCENE_LOCK held
        self.stale.clear()
        for name, rgba in colours.items():
            self.box_rgba[name] = rgba
            self.upload(name, notify=False)

    def upload_all(self) -> None:
        """Upload every family's colours again (the hovered cell's highlight changed)."""
        for name in list(self.box_rgba):
            self.upload(name)

    def upload(self, name: str, notify: bool = True) -> None:
        """Hand a family's colours (with the hovered cell lit) to its mesh."""
        if name in self.stale or name not in self.box_rgba:
            return  # apply uploads them (hover highlight included) before the next frame
        v = self.view
        rgba = self.box_rgba[name]
        if v.hover_cell is not None:
            bid, r, c = v.hover_cell
            b = v.layout.by_id.get(bid)
            if b is not None and b.family == name and b.grid is not None:
                k, _ = v.families[name].ranges[bid]
                rgba = rgba.copy()
                i = k + r * b.grid[1] + c
                rgba[i, :3] = np.minimum(rgba[i, :3] * 0.5 + 0.55, 1.0)
        v.meshes[name].set_colors(v.families[name].box_colors_to_vertex(rgba), notify=notify)
