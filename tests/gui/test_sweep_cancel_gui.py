"""Issue 37, the app: the ablation sweep (the overview's "ablation sweep") and the patching
sweep (the focus panel's Patching tab) show their progress while they run in the background
and stop at Cancel. The model is a random attnscope-model/1 folder the test writes (8 layers
x 8 heads, D 384: large enough that each sweep takes seconds; the sweeps' numbers are checked
elsewhere: test_probe_sweep_gui.py, test_patching_gui.py).

Ablation sweep on a 400-character text: the state log's overview.sweep is running with a
progress strictly between 0 and 1 and its progress bar and "cancel sweep" are drawn; after
"cancel sweep" it is not running, cancelled, has no effect table, the overview is not coloured
by it and "sweep cancelled" is drawn; no later line has it running.
Patching on a 100-character text (opening the tab with the corrupt text and both tokens set
starts the sweep): patching.running with a progress strictly between 0 and 1, its progress bar
and Cancel drawn; after Cancel: not running, cancelled, no tables, "sweep again" drawn."""
import os
import sys
import unittest

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import model_reference as ref  # noqa: E402  (the CLI tests' random attnscope-model/1 writer)

VOCAB = "abcdefgh ()\n"
LONG = "".join(VOCAB[(7 * i + i // 5) % len(VOCAB)] for i in range(400))
SHORT = LONG[:100]


def ran(state):
    """A model run is shown and nothing is pending (on any focus tab)."""
    return state["generation"] > 0 and not state["pending"] and state["view_source"] == "model run" and state["error"] == ""


def midway(progress):
    return 0.0 < progress < 1.0


class SweepCancelTest(g.AppTestCase):
    SCRATCH = "sweep-cancel-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.folder = os.path.join(cls.dir, "wide-chars")
        ref.write_random_model(cls.folder, D=384, H=8, N=8, T=512, M=1536, vocab=VOCAB, seed=37)

    def test_ablation_sweep_progress_and_cancel(self):
        _, log, window, state = self.start("ablation", ready=g.model_settled, source="model", model=self.folder,
                                           model_text=LONG)
        self.assertEqual((state["L"], state["layers"], state["heads"]), (400, 8, 8))
        state = self.click_until(window, log, state["rects"]["overview_toggle"],
                                 lambda s: s["overview"]["shown"] and "sweep_start" in s["rects"])
        seen = g.line_count(log)
        self.click_until(window, log, state["rects"]["sweep_start"], lambda s: s["overview"]["sweep"]["running"])
        state = g.wait_after(log, seen, lambda s: s["overview"]["sweep"]["running"]
                             and midway(s["overview"]["sweep"]["progress"]) and "sweep_progress" in s["rects"]
                             and "sweep_cancel" in s["rects"], timeout=60)
        self.screenshot(window, "ablation_running.png")
        reached = state["overview"]["sweep"]["progress"]
        seen = g.line_count(log)
        state = self.click_until(window, log, state["rects"]["sweep_cancel"],
                                 lambda s: not s["overview"]["sweep"]["running"])
        sweep = state["overview"]["sweep"]
        self.assertTrue(sweep["cancelled"], sweep)
        self.assertFalse(sweep["done"])  # stopped before its last head: no effect table
        self.assertNotIn("effect", sweep)
        self.assertNotEqual(state["overview"]["metric"], "ablation_effect")
        state = g.wait_after(log, seen, lambda s: "sweep_note" in s["rects"] and "sweep_start" in s["rects"])
        self.screenshot(window, "ablation_cancelled.png")
        later = g.read_state_log(log)[seen:]
        running = [s["overview"]["sweep"]["progress"] for s in later if s["overview"]["sweep"]["running"]]
        self.assertTrue(all(reached <= p < 1.0 for p in running), running)
        after_cancel = later[next(k for k, s in enumerate(later) if s["overview"]["sweep"]["cancelled"]):]
        self.assertFalse(any(s["overview"]["sweep"]["running"] for s in after_cancel))

    def test_patching_progress_and_cancel(self):
        _, log, window, state = self.start("patching", ready=g.model_settled, source="model", model=self.folder,
                                           model_text=SHORT, patch_corrupt=SHORT[:-1] + "h", patch_answer="a",
                                           patch_wrong="b")
        self.assertEqual(state["L"], 100)
        seen = g.line_count(log)
        self.click_until(window, log, state["rects"]["focus_tab_patching"],
                         lambda s: s["focus_tab"] == "patching" and s["patching"]["running"])
        state = g.wait_after(log, seen, lambda s: s["patching"]["running"] and midway(s["patching"]["progress"])
                             and "patching_progress" in s["rects"] and "patching_cancel" in s["rects"], timeout=60)
        self.assertNotIn("sweep", state["patching"])
        self.screenshot(window, "patching_running.png")
        state = self.click_until(window, log, state["rects"]["patching_cancel"],
                                 lambda s: ran(s) and not s["patching"]["running"] and s["patching"]["cancelled"]
                                 and "patching_rerun" in s["rects"])
        self.assertNotIn("sweep", state["patching"])
        self.assertEqual(state["patching"]["progress"], -1.0)  # reported only while running
        self.screenshot(window, "patching_cancelled.png")


if __name__ == "__main__":
    unittest.main()
