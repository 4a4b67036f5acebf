"""View controls: the colour-map combo offers every map of the colour-map table."""
import time
import unittest

import guitest as g


class ViewControlsTest(g.AppTestCase):
    SCRATCH = "view-controls-"

    def test_colormap_combo_lists_every_colormap(self):
        app, log, window, state = self.start("colours", heads=2)
        x, y, w, h = state["rects"]["colormap_combo"]
        self.x.xdotool("mousemove", "--window", window, int(x + 20), int(y + h / 2))  # the frame, not the label
        self.x.xdotool("click", 1)
        g.wait_for_state(log, lambda s: "colormap_item_diverging" in s["rects"])
        time.sleep(0.5)  # the popup is placed a frame after it appears
        state = g.read_state_log(log)[-1]
        names = sorted(k[len("colormap_item_"):] for k in state["rects"] if k.startswith("colormap_item_"))
        self.assertEqual(names, ["cividis", "diverging", "magma", "viridis"])
        x, y, w, h = state["rects"]["colormap_item_magma"]
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        self.x.xdotool("click", 1)
        g.wait_for_state(log, lambda s: s["colormap"] == "magma" and "colormap_item_magma" not in s["rects"])


if __name__ == "__main__":
    unittest.main()
