"""`attnscope export MODEL --text ...` and settings with "source": "model": every layer's
maps of a trained model folder, through the same configure-once path as the app, checked
against the independent float64 PyTorch forward pass (model_reference.py); shipped models
found by name; unknown characters labelled; the one-line errors.

Tolerance: attention probabilities 1e-5 (absolute), as in test_model.py.
"""
import csv
import glob
import json
import os
import subprocess
import unittest

import numpy as np

import model_reference as ref

ATTN_TOL = 1e-5


def export(*args, env=None):
    return subprocess.run([ref.BIN, "export", *args], capture_output=True, text=True, timeout=120, env=env)


def written(result, extension):
    return sorted(p for p in result.stdout.splitlines() if p.endswith("." + extension))


def beside(path):
    """The settings JSON written beside an exported file."""
    with open(os.path.splitext(path)[0] + ".json") as f:
        return json.load(f)


class ExportModel(unittest.TestCase):
    # name, write_random_model kwargs, text
    CASES = [
        ("two-layers", dict(seed=21), "abc (def) abc (de"),
        ("one-char", dict(seed=22, N=1), "a"),
        ("full-context", dict(seed=23, T=12), "ab(cd)ef gh\n"),
        ("attn-only-3", dict(seed=24, N=3, mlp=False, positional="sinusoidal"), "hhh ggg fff"),
    ]

    def test_every_layer_and_head_equals_pytorch(self):
        for name, kwargs, text in self.CASES:
            with self.subTest(case=name):
                root = ref.case_dir("model_export", name)
                folder = os.path.join(root, "model")
                ref.write_random_model(folder, **kwargs)
                out = os.path.join(root, "out")
                result = export(folder, "--text", text, "--layers", "all", "--heads", "all", "--format", "npy",
                                "--out", out)
                self.assertEqual(result.returncode, 0, result.stderr)
                model = ref.FolderModel(folder)
                ids, _ = model.encode(text)
                _, want = ref.forward(model, ids)
                N, H = model.cfg["n_layers"], model.cfg["n_heads"]
                paths = written(result, "npy")
                self.assertEqual(len(paths), N * H)
                seen = set()
                for path in paths:
                    self.assertIn("_causal_L%dxS%d" % (len(ids), len(ids)), os.path.basename(path))  # the model's mask
                    settings = beside(path)
                    self.assertEqual(settings["source"], "model")
                    self.assertEqual(settings["model"], os.path.abspath(folder))
                    self.assertEqual(settings["model_text"], text)
                    layer, head = settings["focused_layer"], settings["focused_head"]
                    seen.add((layer, head))
                    got = np.load(path)
                    self.assertEqual(got.shape, (len(ids), len(ids)))
                    np.testing.assert_allclose(got, np.asarray(want[layer])[head], atol=ATTN_TOL, rtol=0,
                                               err_msg=f"{path}: layer {layer} head {head}")
                self.assertEqual(seen, {(l, h) for l in range(N) for h in range(H)})

    def test_text_file_and_settings_json_reexport_the_same_map(self):
        root = ref.case_dir("model_export", "reexport")
        folder = os.path.join(root, "model")
        ref.write_random_model(folder, seed=25)
        text_file = os.path.join(root, "text.txt")
        with open(text_file, "w", encoding="utf-8", newline="") as f:
            f.write("ab\nab (")
        first = export(folder, "--text-file", text_file, "--layers", "1", "--heads", "2", "--format", "npy,csv",
                       "--out", os.path.join(root, "a"))
        self.assertEqual(first.returncode, 0, first.stderr)
        [npy] = written(first, "npy")
        settings_json = os.path.splitext(npy)[0] + ".json"
        self.assertEqual(beside(npy)["model_text"], "ab\nab (")
        again = export("--settings", settings_json, "--layers", "1", "--format", "npy", "--out", os.path.join(root, "b"))
        self.assertEqual(again.returncode, 0, again.stderr)
        [npy2] = written(again, "npy")
        np.testing.assert_array_equal(np.load(npy), np.load(npy2))
        # CSV labels: one token per character, newline escaped.
        [csv_path] = written(first, "csv")
        with open(csv_path, encoding="utf-8") as f:
            header = next(csv.reader(f))
        self.assertEqual(header[1:], ["a", "b", "\\n", "a", "b", " ", "("])

    def test_unknown_characters_are_labelled(self):
        root = ref.case_dir("model_export", "unknown")
        folder = os.path.join(root, "model")
        ref.write_random_model(folder, seed=26)
        result = export(folder, "--text", "ab?Zc", "--layers", "0", "--format", "csv", "--out", os.path.join(root, "out"))
        self.assertEqual(result.returncode, 0, result.stderr)
        [csv_path] = written(result, "csv")
        with open(csv_path, encoding="utf-8") as f:
            header = next(csv.reader(f))
        self.assertEqual(header[1:], ["a", "b", "? (unk)", "Z (unk)", "c"])

    def test_shipped_model_by_name(self):
        """settings {"source": "model", "model": "reverse-digits"}: found in assets/models beside
        the executable's build tree; the maps equal `model run`'s."""
        root = ref.case_dir("model_export", "shipped")
        text = "3111445858=8585441113."
        settings = os.path.join(root, "settings.json")
        with open(settings, "w") as f:
            json.dump({"source": "model", "model": "reverse-digits", "model_text": text}, f)
        result = export("--settings", settings, "--heads", "all", "--format", "npy", "--out", os.path.join(root, "out"))
        self.assertEqual(result.returncode, 0, result.stderr)
        attn, _, _, _ = ref.model_outputs(os.path.join(ref.SHIPPED, "reverse-digits"), text, os.path.join(root, "run"))
        paths = written(result, "npy")
        self.assertEqual(len(paths), 2)
        for path in paths:
            head = beside(path)["focused_head"]
            np.testing.assert_array_equal(np.load(path), attn[0, 0, head])

    def test_settings_json_and_title_describe_the_model_run(self):
        """Issue 35: the settings JSON beside a model run's figure names the model, the text and
        the map (layer, head) and the run's own attention, never the sandbox's heads, mask, seed
        or text; the figure's title names the model (the SVG's title, the PNG's drawn title)."""
        root = ref.case_dir("model_export", "describes_run")
        text = "def f(x): return f(x)"
        out = os.path.join(root, "out")
        result = export(os.path.join(ref.SHIPPED, "python-code"), "--text", text, "--layers", "1", "--heads", "3", "--format", "png,svg",
                        "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        [svg] = written(result, "svg")
        settings = beside(svg)
        self.assertEqual(sorted(settings), sorted(RUN_SETTINGS_KEYS))
        self.assertEqual((settings["source"], settings["model"], settings["model_text"]),
                         ("model", os.path.join(ref.SHIPPED, "python-code"), text))
        self.assertEqual((settings["focused_layer"], settings["focused_head"], settings["batch_item"]), (1, 3, 0))
        # python-code: 2 layers x 4 heads, causal; one token per character.
        self.assertEqual(settings["run"], {"model": "python-code", "layers": 2, "heads": 4, "tokens": len(text),
                                           "mask": "causal"})
        with open(svg, encoding="utf-8") as f:
            self.assertIn("<title>Attention probabilities, layer 1, head 3 \u00b7 python-code</title>", f.read())
        # Reopened, it exports the same map again.
        [png] = written(result, "png")
        again = export("--settings", os.path.splitext(png)[0] + ".json", "--layers", "1", "--heads", "3", "--format", "npy",
                       "--out", os.path.join(root, "b"))
        self.assertEqual(again.returncode, 0, again.stderr)
        [npy] = written(again, "npy")
        attn, _, _, _ = ref.model_outputs(os.path.join(ref.SHIPPED, "python-code"), text, os.path.join(root, "run"))
        np.testing.assert_array_equal(np.load(npy), attn[1, 0, 3])


# What a model run's export settings hold: the source, the model and its text, the map, the
# view and export keys, and "run" (the model's own attention).
RUN_SETTINGS_KEYS = ("source", "model", "model_text", "model_truncate", "model_ablate", "model_knockout", "focused_layer",
                     "focused_head", "batch_item", "prob_colormap", "log_scale", "folded_layout", "export_dir", "cell_px",
                     "export_formats", "run")


class ExportModelErrors(unittest.TestCase):
    def setUp(self):
        self.root = ref.case_dir("model_export_errors", self.id().split(".")[-1])
        self.folder = os.path.join(self.root, "model")
        ref.write_random_model(self.folder, seed=27, T=16)
        self.out = os.path.join(self.root, "out")

    def check(self, code, needle, *args, env=None):
        result = export(*args, "--out", self.out, env=env)
        self.assertEqual(result.returncode, code, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(needle, lines[0])
        self.assertFalse(glob.glob(os.path.join(self.out, "*")), "nothing may be written")
        return lines[0]

    def test_text_longer_than_the_context(self):
        line = self.check(1, "text has 17 characters but model's context is 16", self.folder, "--text", "a" * 17)
        self.assertIn("config.json", line)

    def test_model_needs_a_text(self):
        self.check(2, "is a model folder: give --text TEXT or --text-file FILE", self.folder)

    def test_text_needs_a_model(self):
        self.check(2, "--text/--text-file: only with a MODEL folder", "--demo", "--text", "abc")

    def test_model_fixes_heads_and_mask(self):
        self.check(2, "a trained model fixes its heads", self.folder, "--text", "abc", "--mask", "none")
        self.check(2, "a trained model fixes its heads", self.folder, "--text", "abc", "--alibi")

    def test_missing_tensor_names_the_file(self):
        os.remove(os.path.join(self.folder, "blocks.0.attn.w_v.npy"))
        self.check(1, "blocks.0.attn.w_v.npy: missing", self.folder, "--text", "abc")

    def test_missing_text_file(self):
        self.check(1, "nope.txt: cannot open (No such file or directory)", self.folder, "--text-file", os.path.join(self.root, "nope.txt"))

    def test_unknown_shipped_model(self):
        settings = os.path.join(self.root, "s.json")
        with open(settings, "w") as f:
            json.dump({"source": "model", "model": "no-such-model", "model_text": "abc"}, f)
        self.check(1, "shipped model 'no-such-model':", "--settings", settings)

    def test_assets_folder_without_models(self):
        settings = os.path.join(self.root, "s.json")
        with open(settings, "w") as f:
            json.dump({"source": "model", "model": "python-code"}, f)
        env = dict(os.environ, ATTNSCOPE_ASSETS=os.path.join(self.root, "empty-assets"))
        self.check(1, "shipped model 'python-code': ", "--settings", settings, env=env)

    def test_compute_on_a_model_folder(self):
        result = subprocess.run([ref.BIN, "compute", self.folder, "--out", self.out], capture_output=True, text=True,
                                timeout=60)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn("is a model folder", result.stderr)


if __name__ == "__main__":
    unittest.main()
