"""Resizable panels (issue 22, item 12), on the real app under Xvfb: dragging the borders
between panels (xdotool) resizes them, the sizes are saved in view.json and restored by the
next start, and saved sizes that are corrupt or out of range give a sensible layout (the
automatic sizes, or clamped so every panel keeps its minimum), never a crash."""
import json
import os
import time
import unittest

import guitest as g

WINDOW = (1440, 900)


def inside(rect, width, height):
    x, y, w, h = rect
    return x >= 0 and y >= 0 and x + w <= width + 0.5 and y + h <= height + 0.5


class PanelLayoutGuiTest(g.AppTestCase):
    SCRATCH = "panel-layout-gui-"

    def view_file(self):
        return os.path.join(self.x.env["XDG_CONFIG_HOME"], "attnscope", "view.json")

    def drag(self, window, log, start, delta, predicate):
        """Presses at `start` (window pixels), moves by `delta` in steps, releases; returns the
        first state after the release that matches predicate."""
        n = g.line_count(log)
        x, y = start
        self.x.xdotool("mousemove", "--window", window, int(x), int(y))
        time.sleep(0.2)
        self.x.xdotool("mousedown", 1)
        time.sleep(0.15)
        for step in range(1, 6):
            self.x.xdotool("mousemove", "--window", window, int(x + delta[0] * step / 5), int(y + delta[1] * step / 5))
            time.sleep(0.08)
        time.sleep(0.15)
        self.x.xdotool("mouseup", 1)
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        return g.wait_after(log, n, lambda s: s["border_dragged"] == "" and predicate(s))

    def test_drag_borders_then_restart_restores_the_layout(self):
        if os.path.exists(self.view_file()):
            os.remove(self.view_file())
        app, log, window, state = self.start("drag", source="text", heads=4, head_dim=8)
        before = state["panels"]
        self.assertEqual(set(state["panel_sizes"].values()), {0}, "a first start lays out automatically")
        # The border between the controls and the centre: 80 px to the right.
        x, y, w, h = before["controls"]
        state = self.drag(window, log, (x + w, y + h / 2), (80, 0),
                          lambda s: abs(s["panels"]["controls"][2] - (w + 80)) <= 3)
        self.assertGreater(state["panel_sizes"]["left"], 0)
        self.assertAlmostEqual(state["panels"]["head_grid"][0], state["panels"]["controls"][2], delta=0.5)
        # The head grid | head metrics border: 50 px to the left (the table widens).
        tx, ty, tw, th = state["panels"]["metrics"]
        state = self.drag(window, log, (tx, ty + th / 2), (-50, 0),
                          lambda s: abs(s["panels"]["metrics"][2] - (tw + 50)) <= 3)
        self.assertGreater(state["panel_sizes"]["table"], 0)
        # The head grid / focus border: 60 px up.
        gx, gy, gw, gh = state["panels"]["head_grid"]
        state = self.drag(window, log, (gx + gw / 2, gy + gh), (0, -60),
                          lambda s: abs(s["panels"]["head_grid"][3] - (gh - 60)) <= 3)
        self.assertAlmostEqual(state["panels"]["focus"][1], gy + state["panels"]["head_grid"][3], delta=0.5)
        # The right column's border: 70 px to the left (mask and pipeline widen).
        mx, my, mw, mh = state["panels"]["mask"]
        state = self.drag(window, log, (mx, my + mh / 2), (-70, 0),
                          lambda s: abs(s["panels"]["mask"][2] - (mw + 70)) <= 3)
        self.assertEqual(state["panels"]["pipeline"][2], state["panels"]["mask"][2])
        # The mask / pipeline border: 90 px down.
        mx, my, mw, mh = state["panels"]["mask"]
        state = self.drag(window, log, (mx + mw / 2, my + mh), (0, 90),
                          lambda s: abs(s["panels"]["mask"][3] - (mh + 90)) <= 3)
        layout = state["panels"]
        self.assertNotEqual(layout, before)
        for name, rect in layout.items():
            self.assertTrue(inside(rect, *state["window"]), name)
        self.screenshot(window, "dragged.png")
        self.stop(app)  # SIGTERM: saved on the way out
        with open(self.view_file()) as f:
            saved = json.load(f)["panel_sizes"]
        self.assertEqual(sorted(saved), ["grid", "left", "mask", "predictions", "right", "table"])

        _, log, window, state = self.start("restored", source="text", heads=4, head_dim=8)
        self.assertEqual(state["panels"], layout)
        self.screenshot(window, "restored.png")

    def test_corrupt_or_out_of_range_sizes_start_sensibly(self):
        os.makedirs(os.path.dirname(self.view_file()), exist_ok=True)
        if os.path.exists(self.view_file()):
            os.remove(self.view_file())
        app, log, _, state = self.start("defaults", source="text", heads=4, head_dim=8)
        defaults = state["panels"]
        self.stop(app)  # one window at a time: the screenshots below find theirs
        cases = [
            # Not numbers, negative, infinite (1e300 is beyond float): the automatic sizes.
            ("ignored", {"left": "wide", "right": -3, "grid": 1e300, "table": None, "mask": [1], "predictions": {}},
             lambda s: self.assertEqual(s["panels"], defaults)),
            # Too large: clamped so that the centre keeps 360 px (head grid and table 180 each), each band 80.
            ("too_large", {"left": 0.99, "right": 0.99, "grid": 5, "table": 0.999, "mask": 7},
             lambda s: self.assert_minimums(s)),
            # Tiny: each panel keeps its minimum.
            ("tiny", {"left": 1e-6, "right": 1e-6, "grid": 1e-6, "table": 1e-6, "mask": 1e-6},
             lambda s: self.assert_minimums(s)),
        ]
        for name, sizes, check in cases:
            with self.subTest(name):
                with open(self.view_file(), "w") as f:
                    json.dump({"panel_sizes": sizes}, f)
                app, log, window, state = self.start(name, source="text", heads=4, head_dim=8)
                check(state)
                for panel, rect in state["panels"].items():
                    self.assertTrue(inside(rect, *state["window"]), "%s: %s" % (panel, rect))
                self.screenshot(window, name + ".png")
                self.stop(app)

    def assert_minimums(self, state):
        p = state["panels"]
        self.assertGreaterEqual(p["controls"][2], 180)
        self.assertGreaterEqual(p["mask"][2], 180)
        self.assertGreaterEqual(p["focus"][2], 360)
        self.assertGreaterEqual(p["head_grid"][2], 180)
        self.assertGreaterEqual(p["metrics"][2], 180)
        self.assertGreaterEqual(p["head_grid"][3], 80)
        self.assertGreaterEqual(p["focus"][3], 80)
        self.assertGreaterEqual(p["mask"][3], 80)
        self.assertGreaterEqual(p["pipeline"][3], 80)


if __name__ == "__main__":
    unittest.main()
