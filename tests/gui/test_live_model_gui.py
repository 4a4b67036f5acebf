"""A random GPT-2-like Hugging Face folder live in the app (issue 20), written by the test
(byte-level BPE without merges: one token per ASCII character):
- typing one character at the end of a 100-token text changes the maps (one more row), and
  the state log shows that only the new token's row was computed (rows_computed 1 of 101,
  first_computed_position 100), not the whole text;
- logits only where they are looked at: the run unembeds only the block of the position the
  predictions panel shows (logits_rows), and hovering another query row computes that row's
  block on demand, without rerunning the model, with the predictions of an independent
  float64 PyTorch forward pass (tests/cli/hf_reference.py)."""
import os
import sys
import unittest

import numpy as np
import torch

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402  (the CLI tests' random-folder writer and reference)

TEXT = ("def area(w, h):\n    return w * h\n\nprint(area(3, 4))\n" * 3)[:100]  # 100 tokens: blocks [0, 64), [64, 100)
NAME = "tiny-gpt2"


def gpt2_settled(L):
    """A run of the test's folder over L tokens is drawn, nothing pending."""
    return lambda s: g.model_settled(s) and s.get("model_name") == NAME and s["L"] == L


class LiveModelGuiTest(g.AppTestCase):
    SCRATCH = "live-model-gui-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.folder = os.path.join(cls.dir, NAME)
        cls.config, tensors = hf.make_model("gpt2", seed=20, V=256, P=256, N=2, H=4, D=32, M=64)
        cls.stored = hf.write_folder(cls.folder, cls.config, tensors)
        hf.write_byte_level_bpe(cls.folder)  # id = the byte

    def start_folder(self, name):
        _, log, window, state = self.start(name, self.folder, ready=gpt2_settled(len(TEXT)), source="text", heads=2,
                                           model_text=TEXT)
        self.assertEqual((state["layers"], state["heads"], state["view_source"]), (2, 4, "model run"))
        self.assertEqual(len(state["query_tokens"]), len(TEXT))  # one token per character, no special tokens
        return log, window, state

    def test_typing_one_character_computes_only_the_new_rows(self):
        log, window, state = self.start_folder("typing")
        self.assertEqual((state["first_computed_position"], state["rows_computed"]), (0, 100))  # the first run
        before = self.capture(window, "before_typing.png")[2]
        n = g.line_count(log)
        x, y, w, h = state["rects"]["text_box"]  # the text is taller than the box: Ctrl+End for its end
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        self.x.xdotool("click", 1)
        self.press(window, "ctrl+End")
        self.x.xdotool("type", "--delay", "60", "x")
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        state = g.wait_after(log, n, lambda s: gpt2_settled(len(TEXT) + 1)(s) and s["hover"] == [-1, -1], timeout=30)
        self.assertEqual(state["model_text"], TEXT + "x")
        self.assertEqual(state["query_tokens"][-1], "x")
        # Only the new token's row was computed, and unembedded (the rows before it keep theirs).
        self.assertEqual((state["first_computed_position"], state["rows_computed"]), (100, 1))
        self.assertEqual(state["logits_rows"], 1)
        after = self.capture(window, "after_typing.png")[2]
        for rect in ("focus_probs", "grid_tile_1_3"):
            self.assertNotEqual(g.inner_pixels(before, state["rects"][rect]), g.inner_pixels(after, state["rects"][rect]),
                                rect)

    def test_predictions_unembed_only_the_shown_positions(self):
        log, window, state = self.start_folder("predictions")
        p = state["predictions"]
        self.assertEqual((p["position"], p["why"], p["pending"]), (99, "last position", False))
        self.assertEqual(len(p["top"]), 5)
        # The run unembedded the last position's block [64, 100) only.
        self.assertEqual((state["logits_rows"], state["predictions_known"]), (100 - 64, 100 - 64))

        # Hover query row 10 of the focus view: its block [0, 64) is unembedded on demand.
        generation = state["generation"]
        x, y, w, h = state["rects"]["focus_probs"]
        row = 10
        self.x.xdotool("mousemove", "--window", window, int(x + 0.5 * w / 100), int(y + (row + 0.5) * h / 100))
        state = g.wait_for_state(log, lambda s: s["predictions"] and s["predictions"]["position"] == row
                                 and not s["predictions"]["pending"], timeout=20)
        self.screenshot(window, "hovered_row.png")
        p = state["predictions"]
        self.assertEqual(p["why"], "hovered")
        self.assertEqual((state["logits_rows_on_demand"], state["predictions_known"]), (64, 100))
        self.assertGreater(state["logits_on_demand_ms"], 0)
        self.assertEqual(state["generation"], generation)  # no rerun of the model
        self.assertEqual(state["logits_rows"], 100 - 64)

        # The predictions at row 10 are the reference's (float64 PyTorch forward).
        ids = list(TEXT.encode())
        logits = hf.forward(self.config, self.stored, ids)[0]
        probs = torch.softmax(torch.as_tensor(logits, dtype=torch.float64)[row], -1).numpy()
        top = np.argsort(-probs, kind="stable")[:5]
        np.testing.assert_allclose([t["prob"] for t in p["top"]], probs[top], atol=1e-4)
        for t, token in zip(p["top"], top):
            if 33 <= token <= 126:  # printable ASCII: the label is the character
                self.assertEqual(t["label"], chr(token))
        self.assertEqual(p["actual"], TEXT[row + 1].replace(" ", "\u2423"))
        self.assertAlmostEqual(p["actual_prob"], probs[ids[row + 1]], delta=1e-4)


if __name__ == "__main__":
    unittest.main()
