"""Issue 37, the app: the focus panel's Interventions tab ablates the focused head (the
predictions panel then shows before -> after, on screen and in the state log), knocks out a
cell for every head of the layer, undoes one item; a right-click on a focused map's cell
knocks it out for that head; the interventions are settings, so they survive closing and
reopening the app; the status bar names them."""
import json
import os
import time
import unittest

import guitest as g

TEXT = "def f(x):\n    return f(x)\n"
model_settled = g.model_settled


def ran(state):
    """A model run is shown and nothing is pending (on any focus tab: model_settled wants the maps tab's rects)."""
    return state["generation"] > 0 and not state["pending"] and state["view_source"] == "model run" and state["error"] == ""


class InterventionsTest(g.AppTestCase):
    SCRATCH = "interventions-"

    def click_after(self, window, log, rect, predicate):
        return self.click_until(window, log, rect, lambda s: ran(s) and predicate(s))

    def test_ablate_knock_out_undo_and_reopen(self):
        _, log, window, state = self.start("interventions", ready=model_settled, source="model", model="python-code",
                                           model_text=TEXT, focused_layer=1, focused_head=3)
        plain = [guess["prob"] for guess in state["predictions"]["top"]]
        self.assertTrue(all(guess["before"] is None for guess in state["predictions"]["top"]))
        self.assertEqual(state["interventions"], "")
        state = self.click_after(window, log, state["rects"]["focus_tab_interventions"],
                                 lambda s: s["focus_tab"] == "interventions" and "interventions_ablate_zero" in s["rects"])

        # Ablate L1H3 (the induction head): the predictions change; "before" is the plain run's.
        state = self.click_after(window, log, state["rects"]["interventions_ablate_zero"],
                                 lambda s: s["model_ablate"] == "L1H3" and s["interventions"] == "ablate L1H3")
        top = state["predictions"]["top"]
        self.assertEqual(state["interventions_list"], ["ablate L1H3"])
        self.assertNotEqual([guess["prob"] for guess in top], plain)
        self.assertIn("prediction_change_0", state["rects"])  # drawn as before -> after
        before = {guess["label"]: guess["before"] for guess in top}
        for guess in top:
            self.assertIsNotNone(guess["before"])
        self.assertAlmostEqual(before[state["predictions"]["top"][0]["label"]], before[top[0]["label"]])
        self.screenshot(window, "ablated.png")

        # Knock out (last query, key 0) for every head of layer 1.
        L = state["L"]
        state = self.click_after(window, log, state["rects"]["interventions_knock_layer"],
                                 lambda s: s["model_knockout"] == "L1H*:%d-0" % (L - 1))
        self.assertEqual(state["interventions_list"], ["ablate L1H3", "knockout L1H*:%d-0" % (L - 1)])
        self.assertEqual(state["interventions"], "ablate L1H3; knockout L1H*:%d-0" % (L - 1))
        self.screenshot(window, "knocked.png")

        # Undo the ablation: the knockout stays.
        state = self.click_after(window, log, state["rects"]["interventions_undo_0"],
                                 lambda s: s["model_ablate"] == "" and s["interventions"] == "knockout L1H*:%d-0" % (L - 1))
        self.assertEqual(state["interventions_list"], ["knockout L1H*:%d-0" % (L - 1)])
        self.assertIsNotNone(state["predictions"]["top"][0]["before"])

        # Right-click a cell of the focused map (L1H3, query L - 2, key 1): knock it out for this head.
        state = self.click_after(window, log, state["rects"]["focus_tab_maps"],
                                 lambda s: s["focus_tab"] == "maps" and "focus_probs" in s["rects"])
        x, y, w, h = state["rects"]["focus_probs"]
        knocked = "L1H*:%d-0,L1H3:%d-1" % (L - 1, L - 2)
        for _try in range(4):  # a busy frame can miss the press
            seen = len(g.read_state_log(log))
            self.x.xdotool("mousemove", "--window", window, int(x + 1.5 * w / L), int(y + (L - 1.5) * h / L))
            time.sleep(0.2)
            self.x.xdotool("mousedown", 3)
            time.sleep(0.15)
            self.x.xdotool("mouseup", 3)
            try:
                state = g.wait_for_new_state(log, seen, lambda s: "knockout_head" in s["rects"], timeout=5)
                break
            except AssertionError:
                pass
        self.screenshot(window, "menu.png")
        state = self.click_after(window, log, state["rects"]["knockout_head"], lambda s: s["model_knockout"] == knocked)
        self.assertEqual(state["interventions"], "knockout " + knocked)

        # Close and reopen (the saved settings): the knockouts are back, and so is their run.
        self.stop(_)
        saved = os.path.join(self.x.env["XDG_CONFIG_HOME"], "attnscope", "settings.json")
        with open(saved) as f:
            self.assertEqual(json.load(f)["model_knockout"], knocked)
        log2 = os.path.join(self.dir, "reopened.log")
        app = self.x.start("--state-log", log2)
        self.addCleanup(self.stop, app)
        state = g.wait_for_state(log2, lambda s: ran(s) and s["interventions"] == "knockout " + knocked, timeout=60)
        self.assertEqual(state["interventions_list"], ["knockout L1H*:%d-0" % (L - 1), "knockout L1H3:%d-1" % (L - 2)])
        window = self.find_window()
        self.screenshot(window, "reopened.png")

        # Clear all: the model as trained, no "before" any more.
        state = self.click_after(window, log2, state["rects"]["focus_tab_interventions"],
                                 lambda s: "interventions_clear" in s["rects"])
        state = self.click_after(window, log2, state["rects"]["interventions_clear"],
                                 lambda s: s["interventions"] == "" and s["interventions_list"] == [])
        self.assertTrue(all(guess["before"] is None for guess in state["predictions"]["top"]))


if __name__ == "__main__":
    unittest.main()
