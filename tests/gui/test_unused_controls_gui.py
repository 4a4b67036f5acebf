"""Greyed controls look greyed (issue 35): a sandbox control the current source does not read
is drawn in ImGui's disabled style, not only explained in a tooltip. Synthetic inputs get no
positions (positional encoding); a tensor bundle with its own weights reads neither the
bias, the seed nor the head size; rollout and flow leave "order grid by table" nothing to
order. As drawn, each is the enabled control with the same value, dimmed (guitest's
check_greyed_as_drawn, or the same control before and after in one app), and the state log
lists why (controls_unused, head_table.order_grid_unused)."""
import os
import time
import unittest

import numpy as np

import guitest as g

VALUES = dict(heads=2, head_dim=8, positional_encoding=True, bias=True, seed=7)


def write_tensor_bundle(folder, B=1, L=6, D=16, seed=2):
    """query, key, value [B, L, D] and the four weights [D, D]: inputs and weights of its own."""
    os.makedirs(folder)
    rng = np.random.default_rng(seed)
    for name in ("query", "key", "value"):
        np.save(os.path.join(folder, name + ".npy"), rng.standard_normal((B, L, D)).astype(np.float32))
    for name in ("w_q", "w_k", "w_v", "w_o"):
        np.save(os.path.join(folder, name + ".npy"), (rng.standard_normal((D, D)) / 4).astype(np.float32))


class UnusedControlsGuiTest(g.AppTestCase):
    SCRATCH = "unused-controls-"

    def test_synthetic_inputs_grey_positional_encoding(self):
        app, log, window, state = self.start("synthetic", source="synthetic", synthetic_L=8, **VALUES)
        self.assertEqual(list(state["controls_unused"]), ["positional_encoding"])
        self.assertIn("synthetic and bundle inputs are used as they are", state["controls_unused"]["positional_encoding"])
        shot = self.capture(window, "synthetic.png")
        self.stop(app)  # one app window at a time: find_window takes the first
        self.check_greyed_as_drawn(shot, state, "text-enabled-look", ["positional_encoding"], dict(source="text", **VALUES))

    def test_tensor_bundle_with_weights_greys_what_it_brings(self):
        bundle = os.path.join(self.dir, "tensors")
        write_tensor_bundle(bundle)
        app, log, window, state = self.start("bundle", source="bundle", bundle_path=bundle, **VALUES)
        self.assertEqual(state["error"], "")
        self.assertEqual(sorted(state["controls_unused"]), ["bias", "head_dim", "positional_encoding", "seed"])
        self.assertNotIn("heads_slider", state["controls_unused"])  # the heads still split the bundle's D
        shot = self.capture(window, "bundle.png")
        self.stop(app)
        self.check_greyed_as_drawn(shot, state, "bundle-enabled-look", ["bias", "seed", "head_dim"],
                                   dict(source="text", **VALUES))

    def test_text_source_greys_nothing(self):
        _, _, _, state = self.start("text", source="text", **VALUES)
        self.assertEqual(state["controls_unused"], {})

    def test_rollout_greys_order_grid_by_table(self):
        _, log, window, state = self.start("rollout", ready=g.model_settled, source="model", model="python-code")
        self.assertEqual(state["head_table"]["order_grid_unused"], "")
        rect = state["rects"]["metrics_order_grid"]
        enabled = g.crop_pixels(self.capture(window, "maps.png"), rect)
        state = self.click_until(window, log, state["rects"]["map_kind_rollout"],
                                 lambda s: s["head_table"] and s["head_table"]["order_grid_unused"])
        self.assertEqual(state["head_table"]["order_grid_unused"], "rollout and flow show one map per layer: no heads to order")
        self.assertEqual(state["rects"]["metrics_order_grid"], rect)
        time.sleep(0.5)
        drawn = g.crop_pixels(self.capture(window, "rollout.png"), rect)
        background = np.array(g.BACKGROUND, dtype=np.float64)
        dimmed = background + g.DISABLED_ALPHA * (enabled - background)
        self.assertLessEqual(np.abs(drawn - dimmed).max(), 25)
        self.assertGreater(np.abs(drawn - enabled).max(axis=-1).mean(), 6)


if __name__ == "__main__":
    unittest.main()
