"""Issue 36 in the app, on the real app under Xvfb, in one session:
- the Open dialog's "On this machine": with HOME holding a Hugging Face cache (a random Llama
  folder) and an Ollama store (a manifest and its sha256 blob, a GGUF file converted by llama.cpp's
  convert_hf_to_gguf.py), Ctrl+O lists both first, with source and architecture; a click opens
  the cached folder as hf:ORG/NAME.
- an Ollama model opened from that list opens by its name, ollama:NAME:TAG: the Models box, the
  window title and the caption read it (never the blob's sha256-... file name), the settings
  saved on quit keep it and the next session resolves it again; an unknown ollama: name in the
  saved settings is one line in the app, which keeps running.
- Compare A / B's "another file of this model": B on a copy of the folder with perturbed
  weights; the drift overview's every head (max |A - B| and the mean Jensen-Shannon divergence
  per row) equals a float64 NumPy reference on `attnscope model run` of each folder, and A, B
  and A - B are drawn side by side."""
import json
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
import model_reference as mref  # noqa: E402
from test_diff import js_rows  # noqa: E402
from test_gguf_model import make_gguf, with_byte_vocabulary  # noqa: E402
from test_models import hub_repo, ollama_model  # noqa: E402

TEXT = "the heads attend"


class LocalModelsGuiTest(g.AppTestCase):
    SCRATCH = "local-models-gui-"

    def make_home(self):
        """(HOME, the snapshot, the Ollama blob, the perturbed folder): made once for the class."""
        if "home" not in vars(type(self)):
            type(self).home = self.write_home()
        return type(self).home

    def write_home(self):
        cfg, tensors = hf.make_model("llama", seed=45, V=256, G=2, N=2, H=4, D=32)
        folder, other = os.path.join(self.dir, "tiny-llama"), os.path.join(self.dir, "perturbed")
        hf.write_folder(folder, cfg, tensors)
        r = hf.Rand(46)
        hf.write_folder(other, cfg, {n: t + r(*t.shape, std=0.05) if n.endswith("proj.weight") else t
                                     for n, t in tensors.items()})
        for f in (folder, other):
            hf.write_byte_level_bpe(f)
        small = os.path.join(self.dir, "small-llama")  # a vocabulary of bytes for the GGUF file (V 257)
        hf.write_folder(small, *hf.make_model("llama", seed=47, V=257, P=256, G=2, N=2, H=4, D=32))
        plain, gguf = os.path.join(self.dir, "plain.gguf"), os.path.join(self.dir, "tiny.gguf")
        make_gguf(small, plain, "f32")
        with_byte_vocabulary(plain, gguf)
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

    def open_on_this_machine(self, window, log, snapshot, blob, entry="tiny-org/tiny-llama"):
        """Ctrl+O, the listed stores checked, then a click on `entry`: the first state that runs
        it by its store name."""
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
        self.click_until(window, log, rects["open_local:" + entry], lambda s: not s["modal_open"])
        name = ("ollama:" if entry == "tiny:latest" else "hf:") + entry
        return wait_after(log, n, lambda s: g.model_settled(s) and s.get("model") == name, timeout=30)

    def test_on_this_machine_then_another_file(self):
        home, snapshot, blob, other = self.make_home()
        self.x.env["HOME"] = home
        _, log, window, state = self.start("machine", source="model", model=other, model_text=TEXT,
                                           ready=g.model_settled)
        state = self.open_on_this_machine(window, log, snapshot, blob)
        self.assertEqual(state["open_error"], "")
        self.assertEqual(state["model_name"], "tiny-org/tiny-llama")  # the cache's repo, not the snapshot's rev
        self.assertEqual(state["texts"]["models_combo"], "hf: tiny-org/tiny-llama")
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

    def test_ollama_model_by_its_name(self):
        home, snapshot, blob, _ = self.make_home()
        self.x.env["HOME"] = home
        app, log, window, _ = self.start("ollama", source="text", heads=2, head_dim=8)
        state = self.open_on_this_machine(window, log, snapshot, blob, "tiny:latest")
        self.assertEqual((state["open_error"], state["model"]), ("", "ollama:tiny:latest"))
        self.assertEqual(state["texts"]["models_combo"], "ollama: tiny:latest")
        self.assertEqual(state["model_name"], "tiny:latest")
        self.assertTrue(state["caption"].startswith("GGUF llama model tiny:latest (F32 100%)"), state["caption"])
        title = self.x.xdotool("getwindowname", window)
        self.assertIn("model ollama: tiny:latest", title)
        self.assertNotIn("sha256", title + state["caption"] + state["texts"]["models_combo"])
        self.screenshot(window, "ollama_by_name.png")
        self.press(window, "ctrl+q")
        app.wait(timeout=20)
        config = os.path.join(self.x.env["XDG_CONFIG_HOME"], "attnscope")
        with open(os.path.join(config, "settings.json"), encoding="utf-8") as f:
            saved = json.load(f)
        self.assertEqual(saved["model"], "ollama:tiny:latest")
        with open(os.path.join(config, "view.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["recent_models"][0], "ollama:tiny:latest")
        # The next session (no --settings: the saved ones) resolves the name again.
        state = self.session("restored", lambda s: g.model_settled(s) and s.get("model") == "ollama:tiny:latest")
        self.assertEqual(state["texts"]["models_combo"], "ollama: tiny:latest")
        # An unknown name in the saved settings: one line naming it and the nearest, no crash.
        with open(os.path.join(config, "settings.json"), "w", encoding="utf-8") as f:
            json.dump(dict(saved, model="ollama:nosuch:latest"), f)
        state = self.session("unknown", lambda s: s["error"] != "")
        self.assertEqual(state["error"].count("\n"), 0, state["error"])
        self.assertIn("ollama:nosuch:latest: no such model", state["error"])
        self.assertIn("nearest: ollama:tiny:latest", state["error"])
        time.sleep(1.0)
        self.assertIsNone(self.sessions[-1].poll())  # still running
        self.screenshot(self.find_window(), "unknown_name.png")
        # Opened by its blob's path on the command line, it reads (and is kept) as its name.
        state = self.session("blob", lambda s: g.model_settled(s) and s.get("model") == "ollama:tiny:latest", blob)
        self.assertEqual(state["texts"]["models_combo"], "ollama: tiny:latest")
        self.assertEqual(state["error"], "")

    def session(self, name, ready, *args):
        """The app started without --settings (the saved session, or args); the first state where ready."""
        log = os.path.join(self.dir, name + ".log")
        if getattr(self, "sessions", None):
            self.stop(self.sessions[-1])
        self.sessions = getattr(self, "sessions", []) + [self.x.start(*args, "--state-log", log)]
        self.addCleanup(self.stop, self.sessions[-1])
        return g.wait_for_state(log, ready, timeout=60)


if __name__ == "__main__":
    unittest.main()
