"""Incremental recomputes (issue 9): moving the focus (head, zoom) recomputes nothing, and a
mask change reruns attention reusing the projections. The state log's compute_runs counts the
worker's attention runs and projections_reused says how the latest one ran."""
import time
import unittest

import guitest as g


class IncrementalTest(g.AppTestCase):
    SCRATCH = "incremental-"

    def test_focus_and_zoom_recompute_nothing_and_a_mask_change_reuses_projections(self):
        _, log, window, state = self.start("incremental", source="synthetic", synthetic_L=48, synthetic_S=48,
                                           heads=4, head_dim=8, mask="none")
        runs, generation = state["compute_runs"], state["generation"]
        self.assertEqual(runs, 1)

        # Another head, then a zoom: views change, the worker runs nothing.
        self.press(window, "Right")
        self.press(window, "Right")
        g.wait_for_state(log, lambda s: s["focused_head"] == 2)
        x, y, w, h = state["rects"]["focus_probs"]
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        self.x.xdotool("click", 4)
        g.wait_for_state(log, lambda s: s["zoomed"])
        time.sleep(1.0)
        state = g.read_state_log(log)[-1]
        self.assertEqual((state["compute_runs"], state["generation"], state["pending"]), (runs, generation, False))

        # The causal mask: one run, on the projections of the previous one.
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        x, y, w, h = state["rects"]["mask_causal"]
        self.x.xdotool("mousemove", "--window", window, int(x + h / 2), int(y + h / 2))
        self.x.xdotool("click", 1)
        state = g.wait_for_state(log, lambda s: s["mask"] == "causal" and not s["pending"]
                                 and s["generation"] > generation)
        self.assertEqual(state["compute_runs"], runs + 1)
        self.assertTrue(state["projections_reused"])
        self.assertEqual(state["focused_head"], 2)  # the focus stays


if __name__ == "__main__":
    unittest.main()
