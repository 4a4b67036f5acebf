"""The Open dialog's "On this machine" (issue 36), on the real app under Xvfb: with HOME holding a
Hugging Face cache (a random Llama folder) and an Ollama store (the same model converted to Q8_0 by
llama.cpp's converter, as a manifest and its sha256 blob), Ctrl+O lists both first, with their
source, architecture, size and quantization; a click on the Ollama model opens its blob, and the
model runs."""
import os
import sys
import unittest

import guitest as g
from guitest import line_count, wait_after

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402
from test_gguf_model import make_gguf, with_byte_vocabulary  # noqa: E402
from test_models import hub_repo, ollama_model  # noqa: E402


class OnThisMachineGuiTest(g.AppTestCase):
    SCRATCH = "on-this-machine-gui-"

    def make_home(self):
        folder = os.path.join(self.dir, "tiny-llama")
        cfg, tensors = hf.make_model("llama", seed=45, V=257, P=256, G=2, N=2, H=4, D=32)
        hf.write_folder(folder, cfg, tensors)
        hf.write_byte_level_bpe(folder)
        plain = os.path.join(self.dir, "plain.gguf")
        make_gguf(folder, plain, "q8_0")
        gguf = os.path.join(self.dir, "tiny.gguf")
        with_byte_vocabulary(plain, gguf)
        home = os.path.join(self.dir, "home")
        snapshot = hub_repo(os.path.join(home, ".cache", "huggingface", "hub"), "tiny-org/tiny-llama",
                            {n: os.path.join(folder, n) for n in ("config.json", "model.safetensors", "tokenizer.json")})
        blob = ollama_model(os.path.join(home, ".ollama", "models"), "library", "tiny", "latest", gguf)
        return home, snapshot, blob

    def test_listed_first_and_opened_with_a_click(self):
        home, snapshot, blob = self.make_home()
        self.x.env["HOME"] = home
        _, log, window, state = self.start("machine", source="text", heads=2, head_dim=8)
        for attempt in range(3):  # a key sent while the first frames settle can be missed
            n = line_count(log)
            self.press(window, "ctrl+o")
            try:
                state = wait_after(log, n, lambda s: s["modal_open"] and s["item_active"],
                                   timeout=8)
                break
            except AssertionError:
                if attempt == 2:
                    raise
        listed = state["open_browser"]["on_machine"]
        self.assertEqual([(m["name"], m["source"], m["path"], m["format"], m["architecture"]) for m in listed],
                         [("tiny-org/tiny-llama", "hf", snapshot, "hf", "llama"),
                          ("tiny:latest", "ollama", blob, "gguf", "llama")])
        rects = state["rects"]
        # First in the dialog: above the path box and the folder list.
        self.assertLess(rects["open_local:tiny:latest"][1], rects["open_path_box"][1])
        self.assertLess(rects["open_local:tiny-org/tiny-llama"][1], rects["open_local:tiny:latest"][1])
        self.screenshot(window, "on_this_machine.png")
        n = line_count(log)
        self.click_until(window, log, rects["open_local:tiny:latest"], lambda s: not s["modal_open"])
        state = wait_after(log, n, lambda s: g.model_settled(s) and s.get("model") == blob, timeout=30)
        self.assertEqual(state["open_error"], "")
        self.assertEqual((state["layers"], state["heads"]), (2, 4))
        self.screenshot(window, "opened.png")


if __name__ == "__main__":
    unittest.main()
