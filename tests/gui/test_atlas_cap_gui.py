"""Issue 22 item 17: Ctrl+Shift+S on a many-head, long bundle wrote a PNG far beyond print
size (144 heads x 512 tokens: 6529 x 6656 px). The atlas' picture is now at most 4096 px on
its longer side (cells pooled beyond, named in its subtitle), unless "full resolution" is
ticked in the Export section; its .npy keeps every cell either way. (Tile titles with the
bundle's layer names: tests/figure/test_atlas_cap.cpp and tests/cli/test_import.py.)"""
import json
import os
import struct
import unittest

import numpy as np

import guitest as g

LAYERS, HEADS, L = 2, 20, 220


def png_size(path):
    with open(path, "rb") as f:
        header = f.read(24)
    return struct.unpack(">II", header[16:24])


def write_wide_bundle(folder):
    os.makedirs(folder)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(LAYERS, 1, HEADS, L, L)).astype(np.float32)
    p = np.exp(x - x.max(-1, keepdims=True))
    maps = (p / p.sum(-1, keepdims=True)).astype(np.float32)
    np.save(os.path.join(folder, "attentions.npy"), maps)
    with open(os.path.join(folder, "tokens.txt"), "w") as f:
        f.write("".join("t%d\n" % i for i in range(L)))
    with open(os.path.join(folder, "bundle.json"), "w") as f:
        json.dump({"layer_names": ["h.0", "h.1"]}, f)
    return maps


class AtlasCapTest(g.AppTestCase):
    SCRATCH = "atlas-cap-"

    def export_grid(self, window, log, count):
        self.press(window, "ctrl+shift+s")
        state = g.wait_for_state(log, lambda s: s["export_count"] >= count, timeout=120)
        self.assertEqual(state["last_export"]["error"], "")
        return state, state["last_export"]["paths"]

    def test_atlas_capped_unless_full_resolution(self):
        bundle = os.path.join(self.dir, "wide")
        maps = write_wide_bundle(bundle)
        out = os.path.join(self.dir, "exports")
        _, log, window, state = self.start("wide", bundle, export_dir=out, export_formats=["png", "npy"])
        self.assertFalse(state["export_full_resolution"])
        state, paths = self.export_grid(window, log, 1)
        name = "grid_b0_imported_L%dxS%d" % (L, L)
        self.assertEqual([os.path.basename(p) for p in paths], [name + ".png", name + ".npy", name + ".json"])
        width, height = png_size(paths[0])
        self.assertLessEqual(max(width, height), 4096)
        self.assertGreater(width, 2000)  # pooled 2 x 2, not shrunk to a thumbnail
        np.testing.assert_array_equal(np.load(paths[1]), maps[:, 0].reshape(LAYERS * HEADS, L, L))

        state = self.click_until(window, log, state["rects"]["export_full_resolution"],
                                 lambda s: s["export_full_resolution"], dx=8)
        state, paths = self.export_grid(window, log, 2)
        self.assertEqual(os.path.basename(paths[0]), name + "_1.png")
        full_width, full_height = png_size(paths[0])
        self.assertGreater(max(full_width, full_height), 4096)
        self.assertGreaterEqual(full_width, HEADS * L)  # every cell: at least a pixel each
        np.testing.assert_array_equal(np.load(paths[1]), maps[:, 0].reshape(LAYERS * HEADS, L, L))


if __name__ == "__main__":
    unittest.main()
