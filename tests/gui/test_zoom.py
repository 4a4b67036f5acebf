"""Zoom and pan in the focus view (issue 9): the wheel over a map zooms around the pointer,
a drag pans, 0 resets. The state log's zoom_window and the axis labels drawn follow the
zoomed range, the pixels show the window's cells (causal mask: masked iff key > query),
the tooltip's numbers at a hovered cell equal `attnscope compute`'s .npy for that cell,
and Ctrl+S exports the zoomed window under a name that says which window."""
import os
import subprocess
import sys
import time
import unittest

import numpy as np

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import reference as ref  # noqa: E402

N = 64
META = dict(heads=2, mask="causal")


def wait_after(log, seen, predicate, timeout=20):
    """The newest state-log line after the first `seen` lines that satisfies predicate."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for state in reversed(g.read_state_log(log)[seen:]):
            if predicate(state):
                return state
        time.sleep(0.1)
    raise AssertionError("state never matched; last line: %s" % g.read_state_log(log)[-1])


def window_of(state):
    row0, rows, col0, cols = state["zoom_window"]
    return row0, rows, col0, cols


class ZoomTest(g.AppTestCase):
    SCRATCH = "zoom-"

    def setUp(self):
        self.bundle = os.path.join(self.dir, "bundle")
        if not os.path.exists(self.bundle):
            ref.write_bundle(self.bundle, ref.make_case(9, B=1, L=N, D=8), meta=META)
            out = os.path.join(self.dir, "computed")
            result = subprocess.run([g.BIN, "compute", self.bundle, "--out", out], capture_output=True, text=True,
                                    timeout=120)
            self.assertEqual(result.returncode, 0, result.stderr)
        out = os.path.join(self.dir, "computed")
        self.probs = np.load(os.path.join(out, "probs.npy"))    # [B, H, L, S]
        self.scores = np.load(os.path.join(out, "scores.npy"))  # [B, H, L, S]

    def test_wheel_drag_reset_tooltip_and_export(self):
        folder = os.path.join(self.dir, "exports")
        _, log, window, state = self.start("zoom", self.bundle, export_dir=folder, export_formats=["png", "npy"],
                                           ready=lambda s: g.settled(s) and s.get("L") == N)
        self.assertEqual(state["error"], "")
        self.assertEqual(window_of(state), (0, N, 0, N))
        self.assertFalse(state["zoomed"])
        self.assertEqual(state["focus_axis"]["rows"][0], 0)
        rect = state["rects"]["focus_probs"]
        self.screenshot(window, "zoom_0_whole.png")

        # Wheel up three notches over cell (40, 20): the window shrinks around that cell.
        self.move_to_cell(window, rect, (0, N, 0, N), 40, 20)
        g.wait_for_state(log, lambda s: s["hover"] == [40, 20])
        for _ in range(3):
            self.x.xdotool("click", 4)
            time.sleep(0.15)
        # Three notches of 1.25: 64 -> 51 -> 40 -> 32 rows and keys; the labels drawn follow.
        state = g.wait_for_state(log, lambda s: s["zoom_window"][1] == 32 and s["focus_axis"]["rows"][0] == s["zoom_window"][0])
        row0, rows, col0, cols = win = window_of(state)
        self.assertTrue(row0 <= 40 < row0 + rows and col0 <= 20 < col0 + cols, win)
        self.assertGreater(row0, 0)
        # The cell under the pointer is still the one under the pointer.
        self.assertLessEqual(abs(state["hover"][0] - 40), 1, state["hover"])
        self.assertLessEqual(abs(state["hover"][1] - 20), 1, state["hover"])
        # Axis labels: the first drawn is the window's first row / key, none beyond its last.
        axis = state["focus_axis"]
        self.assertEqual(axis["rows"][0], row0)
        self.assertEqual(axis["cols"][0], col0)
        self.assertTrue(row0 + rows - 4 <= axis["rows"][1] <= row0 + rows - 1, (axis, win))
        self.assertTrue(col0 + cols - 4 <= axis["cols"][1] <= col0 + cols - 1, (axis, win))
        self.check_pixels_show_window(window, state["rects"]["focus_probs"], win, "zoom_1_wheel.png")

        # Drag the map 3 cells' worth to the right and 2 down: the window moves left and up.
        rect = state["rects"]["focus_probs"]
        cell_w, cell_h = rect[2] / cols, rect[3] / rows
        x, y = self.move_to_cell(window, rect, win, row0 + rows // 2, col0 + cols // 2)
        seen = len(g.read_state_log(log))
        self.x.xdotool("mousedown", 1)
        for k in range(1, 6):
            self.x.xdotool("mousemove", "--window", window, int(x + k * 3 * cell_w / 5), int(y + k * 2 * cell_h / 5))
            time.sleep(0.05)
        self.x.xdotool("mouseup", 1)
        state = wait_after(log, seen, lambda s: window_of(s)[0] != row0 and not s["item_active"])
        moved = window_of(state)
        self.assertEqual(moved[1:4:2], (rows, cols))  # a pan keeps the size
        self.assertLessEqual(abs((row0 - moved[0]) - 2), 1, (win, moved))
        self.assertLessEqual(abs((col0 - moved[2]) - 3), 1, (win, moved))
        self.assertEqual(state["focus_axis"]["rows"][0], moved[0])
        self.assertEqual(state["focus_axis"]["cols"][0], moved[2])
        win = moved

        # The tooltip's numbers at a zoomed cell are the core's (compute's .npy) for that cell.
        head = state["focused_head"]
        for i, j in ((win[0] + 2, win[2] + 1), (win[0] + win[1] - 1, win[2])):
            seen = len(g.read_state_log(log))
            self.move_to_cell(window, state["rects"]["focus_probs"], win, i, j)
            hovered = wait_after(log, seen, lambda s, i=i, j=j: s["hover"] == [i, j])
            self.assertEqual(window_of(hovered), win)
            self.assertAlmostEqual(hovered["hover_prob"], float(self.probs[0, head, i, j]), delta=1e-6)
            if j <= i:  # allowed under causal: a finite score
                self.assertAlmostEqual(hovered["hover_score"], float(self.scores[0, head, i, j]), delta=1e-5)
            else:
                self.assertIsNone(hovered["hover_score"])
        self.screenshot(window, "zoom_2_tooltip.png")

        # Ctrl+S exports the zoomed window, named after it; its matrix is compute's window.
        paths = self.export_zoomed_window(window, log, head, N, win)
        r0, nr, c0, nc = win
        exported = np.load(paths[1])
        np.testing.assert_allclose(exported, self.probs[0, head, r0:r0 + nr, c0:c0 + nc], rtol=0, atol=1e-6)

        # 0 resets to the whole map.
        seen = len(g.read_state_log(log))
        self.press(window, "0")
        state = wait_after(log, seen, lambda s: not s["zoomed"])
        self.assertEqual(window_of(state), (0, N, 0, N))

    def check_pixels_show_window(self, window, rect, win, name):
        """Causal mask: a visible cell is grey-hatched iff its key index exceeds its query index."""
        self.x.xdotool("mousemove", "--window", window, 120, 6)  # no tooltip or crosshair over the map
        time.sleep(0.5)
        _, _, pixels = self.capture(window, name)
        row0, rows, col0, cols = win
        checked = 0
        for r in range(0, rows, 3):
            for c in range(0, cols, 3):
                x, y = g.cell_pixel(rect, rows, cols, r, c)
                masked = pixels[y][x] in g.MASKED
                self.assertEqual(masked, col0 + c > row0 + r, "cell (%d, %d) at %d,%d" % (row0 + r, col0 + c, x, y))
                checked += 1
        self.assertGreater(checked, 20)


if __name__ == "__main__":
    unittest.main()
