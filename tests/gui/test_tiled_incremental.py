"""Tiled runs reuse Q and K (issue 9, incremental): on the tiled path a mask change re-scores
the previous run's projections (the state log's projections_reused) and still shows the new
mask's numbers: the hovered overview block equals the block maximum of `attnscope compute`'s
probabilities for that mask. ATTNSCOPE_FULL_PATH_BYTES=1 sends every run of this X server down
the tiled path (docs/app.md, "Long maps")."""
import os
import subprocess
import sys
import unittest

import numpy as np

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import reference as ref  # noqa: E402

N = 300  # more than the overview's 256 rows: the overview pools


class TiledIncrementalTest(g.TiledAppTestCase):
    SCRATCH = "tiled-incremental-"

    def compute(self, bundle, mask):
        out = os.path.join(self.dir, "computed-" + mask)
        result = subprocess.run([g.BIN, "compute", bundle, "--mask", mask, "--out", out], capture_output=True,
                                text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        return np.load(os.path.join(out, "probs.npy"))  # [B, H, L, S]

    def hovered_block_max(self, state, probs):
        r0, r1 = g.overview_block(N, state["hover"][0], 256)
        c0, c1 = g.overview_block(N, state["hover"][1], 256)
        return float(probs[0, state["focused_head"], r0:r1, c0:c1].max())

    def test_a_mask_change_rescores_the_previous_projections(self):
        bundle = os.path.join(self.dir, "bundle")
        ref.write_bundle(bundle, ref.make_case(5, B=1, L=N, D=8), meta=dict(heads=2, mask="causal"))
        causal, none = self.compute(bundle, "causal"), self.compute(bundle, "none")

        _, log, window, state = self.start("tiled", bundle, ready=lambda s: g.settled(s) and s.get("tiled"))
        self.assertEqual(state["error"], "")
        self.assertFalse(state["projections_reused"])  # the first run projects
        generation = state["generation"]

        # Untick causal: one run, on the first run's Q and K.
        seen = len(g.read_state_log(log))
        self.click_until(window, log, state["rects"]["mask_causal"], lambda s: s["mask"] == "none")
        state = g.wait_for_new_state(log, seen, lambda s: s["mask"] == "none" and not s["pending"]
                                     and s["generation"] > generation and s.get("tiled"), timeout=60)
        self.assertEqual(state["error"], "")
        self.assertTrue(state["projections_reused"])

        # The hovered block (above the diagonal: masked before, attended now) holds the
        # block maximum of compute's maps without the mask, not the causal ones.
        rect = state["rects"]["focus_probs"]
        seen = len(g.read_state_log(log))
        self.move_to_cell(window, rect, (0, N, 0, N), 40, 250)
        state = g.wait_for_new_state(log, seen, lambda s: s["map_hover"][0] >= 0 and s["hover"][1] > s["hover"][0])
        self.assertAlmostEqual(state["hover_prob"], self.hovered_block_max(state, none), delta=1e-6)
        self.assertEqual(self.hovered_block_max(state, causal), 0.0)  # the block is masked under causal
        self.screenshot(window, "tiled_incremental_mask_none.png")


if __name__ == "__main__":
    unittest.main()
