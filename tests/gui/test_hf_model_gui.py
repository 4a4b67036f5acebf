"""A Hugging Face model folder in the app (issue 19): a random Llama-style folder (GQA,
RoPE, a byte-level BPE tokenizer.json), written by the test, opens with Ctrl+O; the layer x
head grid shows every head; typing reruns the model on the new token; the predictions
panel and the axis labels carry the tokenizer's readable labels (a space as a leading
"␣", never GPT-2's raw "Ġ"); the Models list keeps the folder in view.json across starts."""
import json
import os
import sys
import time
import unittest

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402  (the CLI tests' random-folder writer)

TEXT = "def f(a, b): return a + b"  # typed: xdotool's quick Return can fall inside one frame


def llama_settled(state):
    """A run of the test's folder (named tiny-llama) has been drawn."""
    return g.settled(state) and state.get("view_source") == "model run" and state["error"] == "" \
        and state.get("model_name") == "tiny-llama"


def wait_after(log, count, predicate, timeout=30):  # a model folder loads on its first run
    return g.wait_after(log, count, predicate, timeout)


line_count = g.line_count


class HfModelGuiTest(g.AppTestCase):
    SCRATCH = "hf-model-gui-"

    def write_llama(self):
        folder = os.path.join(self.dir, "tiny-llama")
        cfg, tensors = hf.make_model("llama", seed=40, V=256, P=256, G=2, N=2, H=4, D=32)
        hf.write_folder(folder, cfg, tensors)
        hf.write_byte_level_bpe(folder)  # id = the byte: every character of TEXT is one token
        return folder

    def open_folder(self, window, log, folder):
        for attempt in range(3):  # a key sent while the first frames settle can be missed
            n = line_count(log)
            self.press(window, "ctrl+o")
            try:
                wait_after(log, n, lambda s: s["modal_open"] and s["item_active"], timeout=8)  # the path box has the keyboard
                break
            except AssertionError:
                if attempt == 2:
                    raise
        self.x.xdotool("type", "--delay", "20", folder)
        time.sleep(0.3)
        n = line_count(log)
        # Held for a few frames: ImGui 1.86 misses a key pressed and released within one frame.
        self.x.xdotool("keydown", "Return")
        time.sleep(0.2)
        self.x.xdotool("keyup", "Return")
        return wait_after(log, n, lambda s: s["open_error"] or not s["modal_open"] and llama_settled(s))

    def test_open_type_and_labels(self):
        folder = self.write_llama()
        _, log, window, state = self.start("open", source="text", heads=2, head_dim=8)
        state = self.open_folder(window, log, folder)
        self.assertEqual(state["open_error"], "")
        self.assertEqual((state["source"], state["model"]), ("model", folder))
        self.assertEqual((state["layers"], state["heads"], state["view_source"]), (2, 4, "model run"))
        # Every (layer, head) has its tile (4 query heads; the folder has 2 K/V heads).
        self.assertEqual(sorted(k for k in state["rects"] if k.startswith("grid_tile_")),
                         ["grid_tile_%d_%d" % (layer, head) for layer in range(2) for head in range(4)])
        # The snippet carried over from the sandbox: its newlines are "↵" labels.
        self.assertIn("\u21b5", state["query_tokens"])
        p = state["predictions"]
        self.assertEqual(len(p["top"]), 5)
        self.assertTrue(all(t["label"] and 0 < t["prob"] <= 1 for t in p["top"]))
        self.assertEqual([t["prob"] for t in p["top"]], sorted((t["prob"] for t in p["top"]), reverse=True))
        # The logit lens (docs/generation-and-lens.md, "The logit lens"): n_layers + 1 rows; its last row is the predictions.
        lens = state["lens"]
        self.assertEqual((lens["layers"], lens["positions"], lens["off_reason"]), (3, state["L"], ""))
        self.assertEqual(lens["top1"][-1][p["position"]], p["top"][0]["label"])

        # Type TEXT at the end of the text.
        start_text = state["model_text"]
        n = line_count(log)
        self.type_at_text_end(window, state, TEXT, delay=40)
        typed = start_text + TEXT
        state = wait_after(log, n, lambda s: llama_settled(s) and s["model_text"] == typed and s["L"] == len(typed))
        labels = state["query_tokens"][len(start_text):]  # byte-level BPE: one token per ASCII character
        self.assertEqual(len(labels), len(TEXT))
        # Readable labels: the space before "f" is a leading "␣"; no raw byte alphabet ("Ġ", "Ċ").
        self.assertEqual(labels[:3], ["d", "e", "f"])
        self.assertEqual(labels[3], "\u2423")
        self.assertFalse(any("\u0120" in t or "\u010a" in t for t in state["query_tokens"]))
        generation = state["generation"]

        # One more character: the model reruns with one more token, the grid follows.
        before = self.capture(window, "before.png")[2]
        n = line_count(log)
        self.x.xdotool("type", "--delay", "40", "x")
        state = wait_after(log, n, lambda s: llama_settled(s) and s["L"] == len(typed) + 1)
        self.assertEqual(state["query_tokens"][-1], "x")
        self.assertGreater(state["generation"], generation)  # a new run, not the old maps
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        time.sleep(0.5)
        after = self.capture(window, "after.png")[2]
        tile = state["rects"]["grid_tile_1_3"]
        self.assertNotEqual(g.inner_pixels(before, tile), g.inner_pixels(after, tile))

    def test_models_list_keeps_the_folder(self):
        folder = self.write_llama()
        config = g.scratch_dir("hf-config-")
        old = self.x.env["XDG_CONFIG_HOME"]
        self.x.env["XDG_CONFIG_HOME"] = config
        self.addCleanup(self.x.env.__setitem__, "XDG_CONFIG_HOME", old)
        log = os.path.join(self.dir, "recent.log")
        app = self.x.start("--state-log", log, folder)
        g.wait_for_state(log, llama_settled, timeout=30)
        window = self.find_window()
        self.press(window, "ctrl+q")
        app.wait(timeout=20)
        with open(os.path.join(config, "attnscope", "view.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["recent_models"], [folder])


class ModelControlsGuiTest(g.AppTestCase):
    """A folder's greyed sandbox controls show that model's own attention (never the
    sandbox's numbers): Gemma 2's head size (head_dim, not hidden / heads), its first layer's
    sliding window, no q/k/v bias; BERT's bidirectional mask and biases. An encoder's
    predictions panel shows masked-LM guesses at a position, checked against the token there,
    and its Generate section says why it does not generate."""
    SCRATCH = "hf-controls-gui-"

    def open(self, name, folder):
        ready = lambda s: g.model_settled(s) and s.get("model_name") == name  # noqa: E731
        return self.start(name, folder, ready=ready, source="text", heads=2, head_dim=8)[3]

    def test_gemma2_head_size_window_and_bias(self):
        folder = os.path.join(self.dir, "gemma")
        cfg, tensors = hf.make_model("gemma2", seed=42, V=256, P=256, D=48, H=4, G=2, head_dim=16, window=5)
        hf.write_folder(folder, cfg, tensors)
        hf.write_byte_level_bpe(folder)
        state = self.open("gemma", folder)
        self.assertEqual(state["controls_shown"], {"heads": 4, "head_dim": 16, "mask": "causal+causal-window:4",
                                                   "bias": False})
        self.assertEqual(state["texts"]["constraint_heads"], "D=64, H=4, d=16")  # H*d, not hidden_size 48
        self.assertEqual(state["texts"]["pipeline_shapes"].split()[-1], "d=16")
        self.assertFalse(state["predictions"]["masked_lm"])
        self.assertIn("generate_button", state["rects"])
        self.assertNotIn("generate_off", state["texts"])
        self.capture(self.find_window(), "gemma_controls.png")

    def test_bert_mask_bias_and_masked_lm_guesses(self):
        folder = os.path.join(self.dir, "bert")
        cfg, tensors = hf.make_model("bert", seed=43, V=40, P=64)
        hf.write_folder(folder, cfg, tensors)
        hf.write_wordpiece(folder)
        state = self.open("bert", folder)
        self.assertEqual(state["controls_shown"], {"heads": 4, "head_dim": 8, "mask": "none", "bias": True})
        p = state["predictions"]
        self.assertTrue(p["masked_lm"])
        # The guess at position t is checked against the token at t itself, not at t + 1.
        self.assertEqual(p["actual"], state["query_tokens"][p["position"]])
        self.assertTrue(state["texts"]["predictions_position"].startswith("at '"), state["texts"])
        self.assertTrue(all(t["label"] for t in p["top"]))  # ids past the 16-word vocabulary: "#id"
        # No Generate button that could only fail: the section says why.
        self.assertIn("is an encoder", state["texts"]["generate_off"])
        self.assertNotIn("generate_button", state["rects"])
        self.capture(self.find_window(), "bert_controls.png")


if __name__ == "__main__":
    unittest.main()
