"""Issue 37, the app: every head tile and head-table row has an ablate toggle (on -> zero ->
mean -> on); an ablated head's tile is struck through and a knocked-out cell of the focused
map is crossed, both in the intervention colour, on screen and in the state log
(ablated_heads, rects grid_struck_* and knocked_cell_*); the toggled ablation is a setting,
so it survives closing and reopening the app."""
import json
import os
import unittest

import guitest as g

TEXT = "def f(x):\n    return f(x)\n"
ORANGE = (255, 140, 89)  # kInterventionColor (1.0, 0.55, 0.35)


def ran(state):
    return g.model_settled(state) and state["error"] == ""


class InterventionMarksTest(g.AppTestCase):
    SCRATCH = "intervention-marks-"

    def orange_in(self, shot, rect):
        return g.pixels_near(shot, rect, ORANGE, tol=30)

    def test_toggles_strike_and_cross(self):
        app, log, window, state = self.start("marks", ready=ran, source="model", model="python-code", model_text=TEXT,
                                             focused_layer=1, focused_head=3, model_knockout="L1H3:5-2")
        self.assertEqual(state["ablated_heads"], [])
        # The knocked-out cell (query 5, key 2) of the focused L1H3 is crossed.
        self.assertIn("knocked_cell_5_2", state["rects"])
        shot = self.capture(window, "crossed.png")
        self.assertGreater(self.orange_in(shot, state["rects"]["knocked_cell_5_2"]), 4)

        # The toggle on tile L0H1: ablate (zero), the tile struck through; then (mean).
        state = self.click_until(window, log, state["rects"]["grid_ablate_0_1"],
                                 lambda s: ran(s) and s["ablated_heads"] == ["L0H1 zero"] and "grid_struck_0_1" in s["rects"])
        self.assertEqual(state["model_ablate"], "L0H1")
        self.assertEqual(state["focused_head"], 3)  # a click on the toggle does not focus the tile
        shot = self.capture(window, "struck.png")
        struck, plain = state["rects"]["grid_struck_0_1"], state["rects"]["grid_tile_0_0"]
        self.assertGreater(self.orange_in(shot, struck), 2 * min(struck[2], struck[3]))  # two diagonals
        self.assertEqual(self.orange_in(shot, [plain[0] + 4, plain[1] + 4, plain[2] - 8, plain[3] - 8]), 0)
        state = self.click_until(window, log, state["rects"]["grid_ablate_0_1"],
                                 lambda s: ran(s) and s["ablated_heads"] == ["L0H1 mean"])
        self.assertEqual(state["model_ablate"], "L0H1:mean")

        # The head table's toggle of the row showing L1H0: ablate (zero).
        row = state["head_table"]["visible"].index([1, 0])
        state = self.click_until(window, log, state["rects"]["metrics_ablate_%d" % row],
                                 lambda s: ran(s) and s["ablated_heads"] == ["L0H1 mean", "L1H0 zero"])
        self.assertEqual(state["model_ablate"], "L0H1:mean,L1H0")
        self.assertEqual(state["interventions"], "ablate L0H1:mean,L1H0; knockout L1H3:5-2")

        # Closed and reopened from the saved settings: the same interventions, drawn again.
        self.stop(app)
        with open(os.path.join(self.x.env["XDG_CONFIG_HOME"], "attnscope", "settings.json")) as f:
            saved = json.load(f)
        self.assertEqual((saved["model_ablate"], saved["model_knockout"]), ("L0H1:mean,L1H0", "L1H3:5-2"))
        log2 = os.path.join(self.dir, "reopened.log")
        app2 = self.x.start("--state-log", log2)
        self.addCleanup(self.stop, app2)
        state = g.wait_for_state(log2, lambda s: ran(s) and "grid_struck_1_0" in s["rects"] and "knocked_cell_5_2" in s["rects"],
                                 timeout=60)
        self.assertEqual(state["ablated_heads"], ["L0H1 mean", "L1H0 zero"])
        self.screenshot(self.find_window(), "reopened.png")


if __name__ == "__main__":
    unittest.main()
