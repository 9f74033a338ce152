"""The event adapter of the 3D view: Qt mouse / wheel / key events -> camera moves (scene/navigation.py),
hover, click and layer steps on the SceneView. It holds only the state of a gesture (where a press started,
whether it became a drag, orbit or pan)."""
from __future__ import annotations

from PySide6.QtCore import QPointF, Qt

from scene import navigation as nav

CLICK_SLOP = 4  # px a press may move and still be a click

_KEY_ACTIONS = {Qt.Key.Key_Left: "left", Qt.Key.Key_Right: "right", Qt.Key.Key_Up: "up", Qt.Key.Key_Down: "down",
                Qt.Key.Key_Plus: "in", Qt.Key.Key_Equal: "in", Qt.Key.Key_Minus: "out"}


class InputAdapter:
    """Feeds one SceneView from the events of its GL widget (which forwards them here)."""

    def __init__(self, view):
        self.view = view
        self.press_pos: QPointF | None = None
        self.last_pos: QPointF | None = None
        self.dragged = False
        self.pan_mode = False

    def _take_camera(self):
        """The user moves the camera: any animation stops where it is and the framing stops following resizes."""
        v = self.view
        v.camera.stop()
        v.camera.refit = None
        return v.cam

    def press(self, ev) -> None:
        self.press_pos = ev.position()
        self.last_pos = ev.position()
        self.dragged = False
        # pan when the middle button or Shift(+left) starts the drag (decided once, at the press)
        self.pan_mode = bool(ev.button() == Qt.MouseButton.MiddleButton or
                             ev.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        self._take_camera()
        self.view.gl.setFocus()

    def move(self, ev) -> None:
        pos = ev.position()
        buttons = ev.buttons()
        if buttons == Qt.MouseButton.NoButton:
            self.view.pointer.hover(pos, ev.globalPosition().toPoint())
            return
        if self.last_pos is None:
            self.last_pos = pos
        d = pos - self.last_pos
        self.last_pos = pos
        if self.press_pos is not None and (pos - self.press_pos).manhattanLength() > CLICK_SLOP:
            self.dragged = True
        if not self.dragged:
            return
        pan = bool(buttons & Qt.MouseButton.MiddleButton) or self.pan_mode or bool(
            ev.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        cam = self.view.cam
        if pan:
            cam = nav.pan(cam, d.x(), d.y(), self.view.gl.width())
        elif buttons & Qt.MouseButton.LeftButton:
            cam = nav.orbit(cam, d.x(), d.y())
        self.view.camera.apply(cam)

    def release(self, ev) -> None:
        if self.press_pos is not None and not self.dragged and ev.button() == Qt.MouseButton.LeftButton:
            self.view.pointer.click(ev.position())
        self.press_pos = None
        self.dragged = False

    def double_click(self, ev) -> None:
        """The second press of a double-click: frame the block under the cursor (left button)."""
        if ev.button() == Qt.MouseButton.LeftButton:
            self.press_pos = None  # its release is not another click
            self.view.pointer.double_click(ev.position())

    def wheel(self, ev) -> None:
        delta = ev.angleDelta().y() or ev.angleDelta().x()
        self.view.camera.apply(nav.wheel_zoom(self._take_camera(), delta))

    def key(self, ev) -> None:
        v = self.view
        k = ev.key()
        if k in (Qt.Key.Key_PageUp, Qt.Key.Key_PageDown):
            new = v.layer0 + (1 if k == Qt.Key.Key_PageUp else -1)
            new = min(max(new, 0), v.layout.dims.n_layers - 1)
            if new != v.layer0:
                v.set_layer(new)
                v.layer_clicked.emit(new)
            ev.accept()
        elif k == Qt.Key.Key_Home:
            v.set_camera_preset("reset")
        elif k in _KEY_ACTIONS:
            v.camera.apply(nav.key_move(self._take_camera(), _KEY_ACTIONS[k]))
            ev.accept()
        else:
            ev.ignore()

    def leave(self) -> None:
        self.view.pointer.leave()
