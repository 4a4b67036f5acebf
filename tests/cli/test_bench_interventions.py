"""`attnscope bench --model FOLDER --ablate SPEC` and `--patch` (docs/performance.md, "Interventions
in the bench"): the modes run on a small random folder and print their fields, in JSON and in the
table beside the appended token's time; a bad SPEC is one line, exit 1. No timing is asserted."""
import json
import subprocess
import unittest

import hf_reference as hf
import model_reference as ref


def bench(folder, *args):
    return subprocess.run([ref.BIN, "bench", "--model", folder, *args], capture_output=True, text=True, timeout=120)


class BenchInterventions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = ref.case_dir("bench-interventions", "gpt2")
        cfg, tensors = hf.make_model("gpt2", seed=81, N=3, P=64)
        hf.write_folder(cls.folder, cfg, tensors)
        cls.layers, cls.heads = cfg["n_layer"], cfg["n_head"]

    def test_json_fields_of_both_modes(self):
        result = bench(self.folder, "--tokens", "12,20", "--ablate", "L1H2", "--patch", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = json.loads(result.stdout)
        self.assertEqual([r["L"] for r in rows], [12, 20])
        for r in rows:
            self.assertEqual(list(r), ["model", "L", "load_ms", "forward_ms", "append_ms", "ablate", "ablate_ms",
                                       "ablate_vs_append", "patched_runs", "patch_ms", "patch_run_ms", "peak_rss_mb"])
            self.assertEqual(r["ablate"], "L1H2")
            # every head, then every layer and position
            self.assertEqual(r["patched_runs"], self.layers * (self.heads + r["L"]))
            self.assertGreater(r["ablate_ms"], 0)
            self.assertGreater(r["patch_ms"], 0)
            self.assertAlmostEqual(r["ablate_vs_append"], r["ablate_ms"] / r["append_ms"], places=6)
            self.assertAlmostEqual(r["patch_run_ms"], r["patch_ms"] / r["patched_runs"], places=6)

    def test_table_prints_the_modes_beside_the_append(self):
        result = bench(self.folder, "--tokens", "16", "--ablate", "L0H*:mean", "--patch")
        self.assertEqual(result.returncode, 0, result.stderr)
        header, row = result.stdout.strip().splitlines()[1:]
        self.assertIn("append_ms", header)
        self.assertIn("ablate_ms (x append)", header)
        self.assertIn("patch_ms (runs, ms per run)", header)
        self.assertIn("(%d, " % (self.layers * (self.heads + 16)), row)
        self.assertRegex(row, r"\(\d+\.\d\dx\)")

    def test_bad_spec_is_one_line(self):
        for spec, message in [("L9H0", '--ablate: "L9H0": the model has %d layers' % self.layers),
                              ("L1X2", '--ablate: "L1X2"')]:
            result = bench(self.folder, "--tokens", "12", "--ablate", spec)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn(message, result.stderr)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
            self.assertEqual(result.stdout, "")


if __name__ == "__main__":
    unittest.main()
