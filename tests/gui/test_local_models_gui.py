"""Issue 36 in the app, on the real app under Xvfb, in one session:
- the Open dialog's "On this machine": with HOME holding a Hugging Face cache (a random Llama
  folder) and an Ollama store (a manifest and its sha256 blob, a GGUF file written by gguf-py),
  Ctrl+O lists both first, with source and architecture; a click opens the cached folder.
- Compare A / B's "another file of this model": B on a copy of the folder with perturbed
  weights; the drift overview's every head (max |A - B| and the mean Jensen-Shannon divergence
  per row) equals a float64 NumPy reference on `attnscope model run` of each folder, and A, B
  and A - B are drawn side by side."""
import os
import subprocess
import sys
import time
import unittest

import numpy as np

import guitest as g
from guitest import line_count, wait_after

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402
import llama_cpp_reference as ref  # noqa: E402
import model_reference as mref  # noqa: E402
from test_diff import js_rows  # noqa: E402
from test_models import hub_repo, ollama_model  # noqa: E402

TEXT = "the heads attend"


class LocalModelsGuiTest(g.AppTestCase):
    SCRATCH = "local-models-gui-"

    def make_home(self):
        cfg, tensors = hf.make_model("llama", seed=45, V=256, G=2, N=2, H=4, D=32)
        folder, other = os.path.join(self.dir, "tiny-llama"), os.path.join(self.dir, "perturbed")
        hf.write_folder(folder, cfg, tensors)
        r = hf.Rand(46)
        hf.write_folder(other, cfg, {n: t + r(*t.shape, std=0.05) if n.endswith("proj.weight") else t
                                     for n, t in tensors.items()})
        for f in (folder, other):
            hf.write_byte_level_bpe(f)
        gguf = os.path.join(self.dir, "header-only.gguf")
        writer = ref.gguf().GGUFWriter(gguf, "llama")
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        home = os.path.join(self.dir, "home")
        snapshot = hub_repo(os.path.join(home, ".cache", "huggingface", "hub"), "tiny-org/tiny-llama",
                            {n: os.path.join(folder, n) for n in ("config.json", "model.safetensors", "tokenizer.json")})
        blob = ollama_model(os.path.join(home, ".ollama", "models"), "library", "tiny", "latest", gguf)
        return home, snapshot, blob, other

    def reference_drift(self, a, b):
        maps = []
        for model in (a, b):
            out = os.path.join(self.dir, "run-" + os.path.basename(model))
            done = subprocess.run([mref.BIN, "model", "run", model, "--text", TEXT, "--out", out], capture_output=True,
                                  text=True, timeout=60)
            self.assertEqual(done.returncode, 0, done.stderr)
            maps.append(np.load(os.path.join(out, "attentions.npy"))[:, 0].astype(np.float64))
        return np.abs(maps[0] - maps[1]).max(axis=(2, 3)), js_rows(maps[0], maps[1]).mean(-1)

    def open_on_this_machine(self, window, log, snapshot, blob):
        for attempt in range(3):  # a key sent while the first frames settle can be missed
            n = line_count(log)
            self.press(window, "ctrl+o")
            try:
                state = wait_after(log, n, lambda s: s["modal_open"] and s["item_active"], timeout=8)
                break
            except AssertionError:
                if attempt == 2:
                    raise
        listed = state["open_browser"]["on_machine"]
        self.assertEqual([(m["name"], m["source"], m["path"], m["format"], m["architecture"]) for m in listed],
                         [("tiny-org/tiny-llama", "hf", snapshot, "hf", "llama"),
                          ("tiny:latest", "ollama", blob, "gguf", "llama")])
        rects = state["rects"]  # first in the dialog: above the path box
        self.assertLess(rects["open_local:tiny:latest"][1], rects["open_path_box"][1])
        self.assertLess(rects["open_local:tiny-org/tiny-llama"][1], rects["open_local:tiny:latest"][1])
        self.screenshot(window, "on_this_machine.png")
        n = line_count(log)
        self.click_until(window, log, rects["open_local:tiny-org/tiny-llama"], lambda s: not s["modal_open"])
        return wait_after(log, n, lambda s: g.model_settled(s) and s.get("model") == snapshot, timeout=30)

    def test_on_this_machine_then_another_file(self):
        home, snapshot, blob, other = self.make_home()
        self.x.env["HOME"] = home
        _, log, window, state = self.start("machine", source="model", model=other, model_text=TEXT,
                                           ready=g.model_settled)
        state = self.open_on_this_machine(window, log, snapshot, blob)
        self.assertEqual(state["open_error"], "")
        self.assertEqual(state["model_name"], "tiny-org/tiny-llama")  # the cache's repo, not the snapshot's rev
        # Compare A / B: B on the perturbed copy, typed into "another file of this model".
        self.click(window, state["rects"]["focus_tab_compare"])
        state = wait_after(log, 0, lambda s: s["focus_tab"] == "compare" and "compare_other_path" in s["rects"])
        self.click(window, state["rects"]["compare_other_path"])
        time.sleep(0.3)
        self.x.xdotool("type", "--delay", "10", other)
        time.sleep(0.3)
        self.click(window, state["rects"]["compare_other_use"])
        state = wait_after(log, 0, lambda s: s["compare"] and s["compare"]["b"]["run"] == "other_file" and
                           s["compare_other"]["drift"] and "compare_diff" in s["rects"], timeout=30)
        max_abs, js = self.reference_drift(snapshot, other)
        self.assertEqual(state["compare_other"]["path"], other)
        self.assertEqual(state["compare"]["error"], "")
        np.testing.assert_allclose(state["compare_other"]["drift"], max_abs, atol=1e-5, rtol=0)
        self.assertGreater(max_abs.min(), 1e-3)  # every head moved: the overview measures something
        f = (state["compare"]["a"]["layer"], state["compare"]["a"]["head"])
        self.assertEqual(state["compare"]["b"], {"layer": f[0], "head": f[1], "run": "other_file"})
        self.assertAlmostEqual(state["compare"]["abs_max"], max_abs[f], delta=1e-5)
        for name in ("compare_a", "compare_b", "compare_diff"):
            self.assertIn(name, state["rects"])
        self.assertLess(state["rects"]["compare_a"][0], state["rects"]["compare_b"][0])
        self.assertLess(state["rects"]["compare_b"][0], state["rects"]["compare_diff"][0])
        self.screenshot(window, "other_file.png")
        # The overview coloured by Jensen-Shannon instead.
        state = self.click_until(window, log, state["rects"]["compare_drift_js"],
                                 lambda s: s["compare_other"]["measure"] == "js")
        np.testing.assert_allclose(state["compare_other"]["drift"], js, atol=1e-6, rtol=1e-3)


if __name__ == "__main__":
    unittest.main()
