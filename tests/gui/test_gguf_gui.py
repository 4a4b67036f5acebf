"""A GGUF file in the app (issue 36): a random Llama-style model converted by llama.cpp's own
convert_hf_to_gguf.py to Q8_0, a vocabulary of bytes (tokenizer.ggml.model "gpt2") written
into its metadata, opens with Ctrl+O; the caption names the model, the
architecture and the quantization mix by bytes; every head has its tile; typing reruns the
model on the new token (live typing through the file's own tokenizer)."""
import os
import re
import sys
import time
import unittest

import guitest as g
from guitest import line_count, wait_after

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402
import llama_cpp_reference as ref  # noqa: E402
from test_gguf_model import make_gguf, with_byte_vocabulary  # noqa: E402


class GgufGuiTest(g.AppTestCase):
    SCRATCH = "gguf-gui-"

    def write_gguf(self):
        folder = os.path.join(self.dir, "tiny-llama")
        cfg, tensors = hf.make_model("llama", seed=44, V=257, P=256, G=2, N=2, H=4, D=32)
        hf.write_folder(folder, cfg, tensors)
        plain = os.path.join(self.dir, "plain.gguf")
        make_gguf(folder, plain, "q8_0")
        path = os.path.join(self.dir, "tiny.gguf")
        with_byte_vocabulary(plain, path, {"general.name": ("Tiny GGUF", ref.gguf().GGUFValueType.STRING, None)})
        return path

    def open_file(self, window, log, path):
        for attempt in range(3):  # a key sent while the first frames settle can be missed
            n = line_count(log)
            self.press(window, "ctrl+o")
            try:
                wait_after(log, n, lambda s: s["modal_open"] and s["item_active"], timeout=8)
                break
            except AssertionError:
                if attempt == 2:
                    raise
        self.x.xdotool("type", "--delay", "20", path)
        time.sleep(0.3)
        n = line_count(log)
        self.x.xdotool("keydown", "Return")  # held for a few frames (ImGui 1.86)
        time.sleep(0.2)
        self.x.xdotool("keyup", "Return")
        return wait_after(log, n, lambda s: s["open_error"] or not s["modal_open"] and self.ready(s, path),
                          timeout=30)

    @staticmethod
    def ready(state, path):
        return g.model_settled(state) and state.get("model") == path

    def test_open_caption_and_typing(self):
        path = self.write_gguf()
        _, log, window, state = self.start("open", source="text", heads=2, head_dim=8)
        state = self.open_file(window, log, path)
        self.assertEqual(state["open_error"], "")
        self.assertEqual((state["source"], state["layers"], state["heads"]), ("model", 2, 4))
        self.assertEqual(sorted(k for k in state["rects"] if k.startswith("grid_tile_")),
                         ["grid_tile_%d_%d" % (layer, head) for layer in range(2) for head in range(4)])
        caption = state["caption"]
        self.assertIn("GGUF llama model Tiny GGUF (", caption)
        mix = re.search(r"\((.*)\)", caption).group(1).split(", ")
        self.assertEqual([m.split()[0] for m in mix], ["Q8_0", "F32"])  # the matrices, then the norms
        self.assertEqual(sum(int(m.split()[1].rstrip("%")) for m in mix), 100)
        self.assertIn("model_caption", state["rects"])
        self.assertEqual(state["texts"]["models_combo"], "file: tiny.gguf")
        self.screenshot(window, "gguf-open.png")

        start_text = state["model_text"]
        n = line_count(log)
        self.type_at_text_end(window, state, "ab", delay=40)
        state = wait_after(log, n, lambda s: self.ready(s, path) and s["model_text"] == start_text + "ab")
        self.assertEqual(state["query_tokens"][-2:], ["a", "b"])  # one byte token each
        self.screenshot(window, "gguf-typed.png")


if __name__ == "__main__":
    unittest.main()
