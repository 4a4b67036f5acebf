"""Incremental recomputes (issue 9): moving the focus (head, zoom) recomputes nothing, and a
mask change reruns attention reusing the projections and the raw scores Q K^T. The state log's
compute_runs counts the worker's attention runs; projections_reused and raw_scores_reused say
how the latest one ran. After each mask change the exported map equals `attnscope compute`'s."""
import os
import subprocess
import sys
import time
import unittest

import numpy as np

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import reference as ref  # noqa: E402


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


    def test_mask_changes_reuse_raw_scores_and_equal_compute(self):
        # L = S = 100: two row blocks; the first one's causal keys are 0-63, so none needs more.
        n, heads = 100, 4
        bundle = ref.write_bundle(os.path.join(self.dir, "bundle"), ref.make_case(17, B=1, L=n, D=16),
                                  meta=dict(heads=heads, mask="causal"))
        computed = {}
        for mask in ("none", "causal"):
            out = os.path.join(self.dir, "computed-" + mask)
            result = subprocess.run([g.BIN, "compute", bundle, "--mask", mask, "--out", out], capture_output=True,
                                    text=True, timeout=120)
            self.assertEqual(result.returncode, 0, result.stderr)
            computed[mask] = np.load(os.path.join(out, "probs.npy"))  # [B, H, L, S]
        folder = os.path.join(self.dir, "exports")
        _, log, window, state = self.start("raw", bundle, export_dir=folder, export_formats=["npy"],
                                           ready=lambda s: g.settled(s) and s.get("L") == n)
        self.assertEqual(state["error"], "")
        self.assertFalse(state["raw_scores_reused"])  # the first run computes them
        head = state["focused_head"]

        # none (more keys than the causal run cached), causal (inside the cached keys), none again
        # (every key cached now).
        for step, (mask, reused) in enumerate([("none", False), ("causal", True), ("none", True)]):
            runs, generation = state["compute_runs"], state["generation"]
            state = self.click_until(window, log, state["rects"]["mask_causal"],
                                     lambda s: s["mask"] == mask and not s["pending"] and s["generation"] > generation)
            self.assertEqual(state["compute_runs"], runs + 1, mask)
            self.assertTrue(state["projections_reused"], mask)
            self.assertEqual(state["raw_scores_reused"], reused, mask)
            self.screenshot(window, "raw_%d_%s.png" % (step, mask))
            # The focused map exported (Ctrl+S) equals compute's for this mask.
            exports = state["export_count"]
            self.press(window, "ctrl+s")
            state = g.wait_for_state(log, lambda s: s["export_count"] > exports and not s["exporting"], timeout=60)
            self.assertEqual(state["last_export"]["error"], "")
            npy = [p for p in state["last_export"]["paths"] if p.endswith(".npy")]
            self.assertEqual(len(npy), 1, state["last_export"]["paths"])
            np.testing.assert_allclose(np.load(npy[0]), computed[mask][0, head], rtol=0, atol=1e-6, err_msg=mask)


if __name__ == "__main__":
    unittest.main()
