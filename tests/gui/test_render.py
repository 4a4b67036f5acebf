"""The app starts on the demo and on a bundle, renders real heatmaps, writes a screenshot."""
import os
import subprocess
import unittest

import numpy as np

import guitest as g


class RenderTest(g.AppTestCase):
    SCRATCH = "render-"

    def run_app(self, name, *args):
        shot = os.path.join(self.dir, name + ".png")
        log = os.path.join(self.dir, name + ".log")
        result = self.x.run(*args, "--frames", "3", "--screenshot", shot, "--state-log", log, "--check-gl")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(os.path.exists(shot))
        states = g.read_state_log(log)
        self.assertTrue(states, "no state-log lines")
        return g.read_png(shot), states[-1]

    def test_demo_starts_and_draws_every_head(self):
        # The random-weights sandbox's demo sentence (a first start opens on a trained model:
        # test_models_gui.py).
        settings = g.write_settings(self.dir, "demo.json", source="text")
        (width, height, rows), state = self.run_app("demo", "--settings", settings)
        self.assertEqual((width, height), (1440, 900))
        self.assertEqual(state["error"], "")
        self.assertEqual((state["heads"], state["L"], state["S"]), (4, 10, 10))
        self.assertEqual(state["mask"], "none")
        # Every probability cell is drawn in colour (no masked grey, no background).
        rect = state["rects"]["focus_probs"]
        for i in range(10):
            for j in range(10):
                x, y = g.cell_pixel(rect, 10, 10, i, j)
                self.assertNotIn(rows[y][x], g.MASKED | {g.BACKGROUND}, (i, j))

    def test_causal_mask_pixels_and_head_tiles(self):
        settings = g.write_settings(self.dir, "causal.json", mask="causal", heads=6, head_dim=8,
                                    text="one two three four five six seven eight nine")
        (_, _, rows), state = self.run_app("causal", "--settings", settings)
        L, S, H = state["L"], state["S"], state["heads"]
        self.assertEqual((L, S, H), (9, 9, 6))
        self.assertEqual(state["allowed_cells"], L * (L + 1) // 2)
        hover = tuple(state["hover"])
        for name in ("focus_probs", "focus_scores"):
            rect = state["rects"][name]
            for i in range(L):
                for j in range(S):
                    if i in (hover[0],) or j in (hover[1],):
                        continue  # the crosshair follows the pointer
                    x, y = g.cell_pixel(rect, L, S, i, j)
                    if j > i:
                        self.assertIn(rows[y][x], g.MASKED, (name, i, j))
                    else:
                        self.assertNotIn(rows[y][x], g.MASKED, (name, i, j))
        # Hatching: neighbouring masked cells alternate between the two greys.
        rect = state["rects"]["focus_probs"]
        x0, y0 = g.cell_pixel(rect, L, S, 0, 7)
        x1, y1 = g.cell_pixel(rect, L, S, 0, 8)
        self.assertNotEqual(rows[y0][x0], rows[y1][x1])

        # The head grid shows H tiles: by the layout log and by counting tiles in the pixels.
        tiles = [state["rects"]["grid_tile_%d" % h] for h in range(H)]
        self.assertNotIn("grid_tile_%d" % H, state["rects"])
        found = 0
        for y in sorted({int(t[1] + t[3] / 2) for t in tiles}):
            x0 = int(min(t[0] for t in tiles)) - 3
            x1 = int(max(t[0] + t[2] for t in tiles)) + 3
            found += g.count_runs(rows[y], x0, x1)
        self.assertEqual(found, H)

    def test_bundle(self):
        bundle = os.path.join(self.dir, "bundle")
        os.makedirs(bundle, exist_ok=True)
        rng = np.random.default_rng(3)
        np.save(os.path.join(bundle, "query.npy"), rng.standard_normal((2, 4, 12)).astype(np.float32))
        np.save(os.path.join(bundle, "key.npy"), rng.standard_normal((2, 6, 10)).astype(np.float32))
        np.save(os.path.join(bundle, "value.npy"), rng.standard_normal((2, 6, 8)).astype(np.float32))
        settings = g.write_settings(self.dir, "bundle.json", heads=5, head_dim=20, mask="padding",
                                    valid_lens=[3, 2], batch_item=1)
        (_, _, rows), state = self.run_app("bundle", "gui", bundle, "--settings", settings)
        self.assertEqual(state["source"], "bundle")
        self.assertEqual(state["error"], "")
        self.assertEqual((state["B"], state["L"], state["S"], state["heads"], state["D"]), (2, 4, 6, 5, 100))
        self.assertEqual(state["batch_item"], 1)
        # Batch item 1 has valid length 2: keys 2..5 are masked for every query.
        rect = state["rects"]["focus_probs"]
        for i in range(4):
            for j in range(6):
                x, y = g.cell_pixel(rect, 4, 6, i, j)
                if tuple(state["hover"]) != (-1, -1) and (i == state["hover"][0] or j == state["hover"][1]):
                    continue
                self.assertEqual(rows[y][x] in g.MASKED, j >= 2, (i, j))

    def test_bad_flags_and_no_display(self):
        result = self.x.run("--frames", "zero")
        self.assertEqual(result.returncode, 2)
        self.assertEqual(len(result.stderr.strip().splitlines()[0].split("\n")), 1)
        self.assertIn("--frames", result.stderr)
        env = dict(self.x.env)
        env.pop("DISPLAY")
        result = subprocess.run([g.BIN, "--frames", "1"], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(result.returncode, 1)
        self.assertIn("attnscope: cannot open a window (no display?)", result.stderr)

    def test_corrupt_saved_settings_are_ignored(self):
        # Persistence is off under --frames; a bad --settings file is a one-line error.
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        result = self.x.run("--settings", bad, "--frames", "1")
        self.assertEqual(result.returncode, 1)
        self.assertIn("bad.json", result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
