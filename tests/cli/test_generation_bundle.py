"""A generation as an attention bundle (issue 21): the folder `attnscope model generate`
writes reopens as an attention bundle (tokens.txt's labels, the `generated` column), and
`attnscope analyze` on it prints the two generation columns: per head, the mean over the
generated steps of the mass on the first token (gen_sink_mass) and on the last W tokens
(gen_recent_mass, --recent W), against a NumPy reference over attentions.npy. Other
bundles print no such columns; a bad --recent is a usage error."""
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

import reference as ref

MODEL = os.path.join(os.path.dirname(__file__), "..", "..", "assets", "models", "python-code")
PROMPT = "def f(x):\n    return "


def run(args):
    return subprocess.run([ref.BIN] + args, capture_output=True, text=True, timeout=120)


def reference_mass(maps, first, window):
    """[layers, H] means over rows t >= first of p[t, 0] and sum_{t-W < j <= t} p[t, j]."""
    layers, _, H, L, _ = maps.shape
    sink, recent = np.zeros((layers, H)), np.zeros((layers, H))
    for t in range(first, L):
        rows = maps[:, 0, :, t, :].astype(np.float64)
        sink += rows[:, :, 0]
        recent += rows[:, :, max(0, t - window + 1):t + 1].sum(axis=2)
    steps = L - first
    return sink / steps, recent / steps


class GenerationBundleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="generation-bundle-")
        cls.bundle = os.path.join(cls.tmp.name, "gen")
        result = run(["model", "generate", MODEL, "--text", PROMPT, "--tokens", "12", "--greedy", "--out", cls.bundle])
        assert result.returncode == 0, result.stderr
        cls.maps = np.load(os.path.join(cls.bundle, "attentions.npy"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_analyze_prints_the_generation_columns(self):
        first = len(PROMPT)
        for window in (1, 8, 30):
            result = run(["analyze", self.bundle, "--json", "--recent", str(window)])
            self.assertEqual(result.returncode, 0, result.stderr)
            rows = json.loads(result.stdout)
            sink, recent = reference_mass(self.maps, first, window)
            self.assertEqual(len(rows), self.maps.shape[0] * self.maps.shape[2])
            for row in rows:
                self.assertAlmostEqual(row["gen_sink_mass"], sink[row["layer"], row["head"]], delta=1e-6)
                self.assertAlmostEqual(row["gen_recent_mass"], recent[row["layer"], row["head"]], delta=1e-6)
        table = run(["analyze", self.bundle]).stdout
        self.assertIn("gen sink", table)
        self.assertIn("gen last W", table)

    def test_the_bundle_reopens_with_its_labels(self):
        result = run(["analyze", self.bundle, "--json"])
        self.assertEqual(result.returncode, 0, result.stderr)
        figures = os.path.join(self.tmp.name, "figures")
        result = run(["export", self.bundle, "--format", "npy", "--what", "probs", "--layers", "0", "--heads", "0",
                      "--out", figures])
        self.assertEqual(result.returncode, 0, result.stderr)
        (name,) = [f for f in os.listdir(figures) if f.endswith(".json")]
        with open(os.path.join(figures, name)) as f:
            settings = json.load(f)
        self.assertEqual(settings.get("bundle_path", settings.get("bundle")), os.path.abspath(self.bundle))
        with open(os.path.join(self.bundle, "tokens.txt")) as f:
            lines = f.read().splitlines()
        self.assertEqual(sum(line.endswith("\tgenerated") for line in lines), 12)

    def test_other_bundles_have_no_generation_columns(self):
        plain = os.path.join(self.tmp.name, "plain")
        os.makedirs(plain)
        np.save(os.path.join(plain, "attentions.npy"), self.maps)
        rows = json.loads(run(["analyze", plain, "--json"]).stdout)
        self.assertNotIn("gen_sink_mass", rows[0])
        self.assertNotIn("gen last W", run(["analyze", plain]).stdout)

    def test_a_bad_steps_json_names_the_file_and_step(self):
        """steps.json (read when the bundle reopens: the predictions at the generated steps) that
        is not a list of steps, or puts a step outside the generated positions: one line, exit 1."""
        import shutil
        for name, steps, says in (("not-json", "{", "not valid JSON"),
                                  ("no-top", json.dumps([{"position": len(PROMPT), "token": "x", "prob": 0.5,
                                                          "rank": 1}]), "step 0: expected {position"),
                                  ("prompt-step", json.dumps([{"position": 2, "token": "x", "prob": 0.5, "rank": 1,
                                                               "top": []}]), "step 0: position 2 is not a generated")):
            bundle = os.path.join(self.tmp.name, name)
            shutil.copytree(self.bundle, bundle)
            with open(os.path.join(bundle, "steps.json"), "w") as f:
                f.write(steps)
            result = run(["analyze", bundle])
            self.assertEqual(result.returncode, 1, name)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
            self.assertIn(os.path.join(bundle, "steps.json"), result.stderr)
            self.assertIn(says, result.stderr)

    def test_bad_recent_is_a_usage_error(self):
        result = run(["analyze", self.bundle, "--recent", "0"])
        self.assertEqual(result.returncode, 2)
        self.assertIn("--recent", result.stderr)


if __name__ == "__main__":
    unittest.main()
