"""A model run beyond the full path's budget (issue 20): ATTNSCOPE_FULL_PATH_BYTES=1 sends
every model run of this X server down the tiled path (docs/models.md, "Hugging Face model folders",
"Past the full path's budget"). A random GPT-2-style folder (the test writes it, byte-level
BPE: one token per character) on a 300-token text opens with every layer's overview in the
layer x head grid; focusing a head of the last layer and zooming computes that window's
exact cells from the kept Q, K and normalisers: the tooltip's numbers equal `attnscope model
run`'s attentions.npy (run on the full path) for that layer and head;
typing one more character recomputes only the last 64-row block, still in tiles."""
import os
import subprocess
import sys
import unittest

import numpy as np

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402  (the CLI tests' random-folder writer)

N_LAYERS, HEADS = 3, 4
TEXT = "".join("abcdefghij klmnop\n"[(7 * i) % 18] for i in range(300))  # 300 bytes: 300 tokens


def tiled_model_settled(state):
    """The folder's run is drawn in tiles, nothing pending or failing."""
    return g.model_settled(state) and state.get("model_name") == "tiny-gpt2" and state.get("tiled") is not None


class TiledModelGuiTest(g.TiledAppTestCase):
    SCRATCH = "tiled-model-gui-"

    def setUp(self):
        self.folder = os.path.join(self.dir, "tiny-gpt2")
        if not os.path.exists(self.folder):
            cfg, tensors = hf.make_model("gpt2", seed=21, V=256, P=320, N=N_LAYERS, H=HEADS, D=32, M=64)
            hf.write_folder(self.folder, cfg, tensors)
            hf.write_byte_level_bpe(self.folder)
        out = os.path.join(self.dir, "full")
        if not os.path.exists(out):
            # The full path's maps: without this server's ATTNSCOPE_FULL_PATH_BYTES=1.
            env = {k: v for k, v in self.x.env.items() if k != "ATTNSCOPE_FULL_PATH_BYTES"}
            result = subprocess.run([g.BIN, "model", "run", self.folder, "--text", TEXT, "--out", out], env=env,
                                    capture_output=True, text=True, timeout=120)
            self.assertNotIn("row normalisers", result.stdout)
            self.assertEqual(result.returncode, 0, result.stderr)
        self.attentions = np.load(os.path.join(out, "attentions.npy"))  # [N, 1, H, L, L]

    def test_every_layer_in_tiles_and_exact_zoom(self):
        L = self.attentions.shape[-1]
        self.assertEqual(L, 300)
        _, log, window, state = self.start("tiled-model", ready=tiled_model_settled, source="model",
                                           model=self.folder, model_text=TEXT)
        self.assertEqual(state["model"], self.folder)
        tiled = state["tiled"]
        self.assertEqual((tiled["L"], tiled["S"], tiled["rows"], tiled["cols"]), (L, L, 256, 256))
        self.assertEqual((state["layers"], state["heads"]), (N_LAYERS, HEADS))
        self.assertEqual(sorted(k for k in state["rects"] if k.startswith("grid_tile_")),
                         sorted("grid_tile_%d_%d" % (layer, head) for layer in range(N_LAYERS)
                                for head in range(HEADS)))
        self.assertEqual(len(state["predictions"]["top"]), 5)  # the model's own panels stay
        self.assertEqual(len(state["query_tokens"]), L)  # the real tokens, not the overview's blocks
        self.assertEqual((state["lens"]["layers"], state["lens"]["positions"]), (N_LAYERS + 1, L))
        self.assertIn("rollout", state["layer_maps"]["unavailable"])
        self.screenshot(window, "tiled_model_0_overview.png")

        # Focus layer 2, head 1 (a click on its tile), then zoom into the diagonal.
        state = self.click_until(window, log, state["rects"]["grid_tile_2_1"],
                                 lambda s: (s["focused_layer"], s["focused_head"]) == (2, 1))
        rect = state["rects"]["focus_probs"]
        self.move_to_cell(window, rect, (0, L, 0, L), 150, 150)
        state = self.zoom_to_exact_tile(log)
        win = state["zoom_window"]
        for i, j in ((win[0] + win[1] - 4, win[2] + 3), (win[0] + 3, win[2] + win[3] - 4)):
            seen = len(g.read_state_log(log))
            self.move_to_cell(window, state["rects"]["focus_probs"], win, i, j)
            near = lambda s, i=i, j=j: abs(s["map_hover"][0] - i) <= 1 and abs(s["map_hover"][1] - j) <= 1
            hovered = g.wait_for_new_state(log, seen, lambda s: near(s) and s["hover_exact"], timeout=30)
            i, j = hovered["map_hover"]
            exact = hovered["hover_exact"]
            self.assertAlmostEqual(exact["prob"], float(self.attentions[2, 0, 1, i, j]), delta=1e-6)
            self.assertEqual(exact["allowed"], j <= i)
            # The predictions panel follows the real row under the pointer, not its overview block.
            self.assertEqual((hovered["predictions"]["position"], hovered["predictions"]["why"]), (i, "hovered"))
        self.screenshot(window, "tiled_model_1_zoom.png")

        # One character typed at the end: the model computes the new token's row only (Q, K
        # and the normalisers of the rows before it kept), and the maps stay in tiles.
        seen = len(g.read_state_log(log))
        x, y, w, h = state["rects"]["text_box"]
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        self.x.xdotool("click", 1)
        self.press(window, "ctrl+End")  # the text is longer than the box: its end is out of sight
        self.x.xdotool("type", "x")
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        state = g.wait_for_new_state(log, seen, lambda s: tiled_model_settled(s) and s["tiled"]["L"] == L + 1,
                                     timeout=30)
        self.assertEqual((state["first_computed_position"], state["rows_computed"]), (L, 1))
        self.assertEqual(state["text_tokens"][0], L + 1)


if __name__ == "__main__":
    unittest.main()
