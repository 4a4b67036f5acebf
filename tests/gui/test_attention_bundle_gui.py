"""The app opens attention computed elsewhere (an attention bundle of 3 layers x 4 heads, one
written with NumPy and one by scripts/export_attention.py from a 3-layer nn.TransformerEncoder
with B=2 and key padding): the layer x head grid shows 3 rows of 4 coloured tiles (pixel check),
Down moves the focus to the next layer, and Ctrl+Shift+S writes the layer x head atlas. Before
the compute worker knew attention bundles, the app showed "no attention computed yet" for them."""
import os
import subprocess
import unittest

import numpy as np

import guitest as g


def write_attention_bundle(folder, layers=3, heads=4, L=7, seed=0):
    os.makedirs(folder)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(layers, 1, heads, L, L)) * 2
    x = np.where(np.tril(np.ones((L, L), bool)), x, -np.inf)
    p = np.exp(x - x.max(-1, keepdims=True))
    np.save(os.path.join(folder, "attentions.npy"), (p / p.sum(-1, keepdims=True)).astype(np.float32))
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write("\n".join("the cat sat on the mat .".split()[:L]) + "\n")


class AttentionBundleGuiTest(g.AppTestCase):
    SCRATCH = "attention-bundle-gui-"

    def test_layer_by_head_grid_of_imported_maps(self):
        bundle = os.path.join(self.dir, "maps")
        write_attention_bundle(bundle)
        self.check_grid_and_atlas("imported", bundle, B=1, L=7)

    def test_bundle_of_the_exporter_script(self):
        bundle = os.path.join(self.dir, "encoder")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "export_attention.py")
        proc = subprocess.run(["/usr/bin/python3", script, "demo-encoder", "--out", bundle],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.check_grid_and_atlas("encoder", bundle, B=2, L=6)

    def check_grid_and_atlas(self, name, bundle, B, L):
        folder = os.path.join(self.dir, name + "-exports")
        _, log, window, state = self.start(name, bundle, export_dir=folder)
        self.assertEqual(state["error"], "")
        self.assertEqual((state["view_source"], state["layers"], state["heads"], state["B"], state["L"]),
                         ("imported", 3, 4, B, L))
        tiles = sorted(k for k in state["rects"] if k.startswith("grid_tile_"))
        self.assertEqual(tiles, [f"grid_tile_{l}_{h}" for l in range(3) for h in range(4)])

        # Every tile is drawn: its centre pixel is a colour-map colour, not the panel background.
        width, height, rows = self.capture(window, name + "-grid.png")
        background = rows[2][width // 2]
        for name in tiles:
            x, y, w, h = state["rects"][name]
            self.assertNotEqual(rows[int(y + h / 2)][int(x + w / 2)], background, name)

        self.press(window, "Down")
        g.wait_for_state(log, lambda s: s["focused_layer"] == 1)

        self.press(window, "ctrl+shift+s")
        g.wait_for_state(log, lambda s: s["export_count"] >= 1, timeout=60)
        state = g.read_state_log(log)[-1]
        self.assertEqual(state["last_export"]["error"], "")
        atlas = state["last_export"]["paths"][0]
        self.assertTrue(os.path.basename(atlas).startswith("grid_"), atlas)
        aw, ah, _ = g.read_png(atlas)
        self.assertGreater(ah, aw / 4)  # three rows of tiles, not one


if __name__ == "__main__":
    unittest.main()
