"""`attnscope bench` and scripts/bench_vs_torch.py: flags and JSON fields are contracts.
Timings are never asserted; only that they exist, are positive and are consistent."""
import json
import os
import subprocess
import unittest

BIN = os.environ["ATTNSCOPE_BIN"]
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "bench_vs_torch.py")
FIELDS = ["L", "S", "D", "H", "B", "mode", "median_ms", "gflops", "gemm_peak_gflops", "peak_rss_mb"]


def bench(*args):
    return subprocess.run([BIN, "bench", *args], capture_output=True, text=True, timeout=300)


class Bench(unittest.TestCase):
    def test_json_fields_per_size(self):
        result = bench("--sizes", "64:64:32:4,40:72:48:3", "--batch", "2", "--repeat", "2", "--threads", "1",
                       "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        rows = json.loads(result.stdout)  # stdout holds only the JSON array
        self.assertEqual(len(rows), 2)
        for row, (L, S, D, H) in zip(rows, [(64, 64, 32, 4), (40, 72, 48, 3)]):
            for field in FIELDS:
                self.assertIn(field, row)
            self.assertEqual((row["L"], row["S"], row["D"], row["H"], row["B"]), (L, S, D, H, 2))
            self.assertEqual(row["mode"], "full")
            self.assertNotIn("overview_ms", row)
            self.assertNotIn("tile_ms", row)
            for field in ("median_ms", "gflops", "gemm_peak_gflops", "peak_rss_mb"):
                self.assertGreater(row[field], 0, field)
        self.assertEqual(rows[0]["gemm_peak_gflops"], rows[1]["gemm_peak_gflops"], "one GEMM peak per run")

    def test_tiled_mode_adds_overview_and_tile_times(self):
        result = bench("--sizes", "300:300:64:2", "--mode", "tiled", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        (row,) = json.loads(result.stdout)
        self.assertEqual(row["mode"], "tiled")
        self.assertGreater(row["overview_ms"], 0)
        self.assertGreater(row["tile_ms"], 0)

    def test_table_output_names_the_columns(self):
        result = bench("--sizes", "32:32:16:2", "--repeat", "1")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("GEMM peak", result.stdout)
        self.assertIn("median_ms", result.stdout)
        self.assertIn("full", result.stdout)

    def test_bad_flags_are_usage_errors(self):
        for args, words in ((["--sizes", "64:64:30:4"], "not divisible"), (["--sizes", "64x64"], "L:S:D:H"),
                            (["--batch", "0"], "--batch"), (["--repeat", "0"], "--repeat"),
                            (["--mode", "fast"], "--mode")):
            result = bench(*args)
            self.assertEqual(result.returncode, 2, args)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
            self.assertIn(words, result.stderr)

    def test_bad_mask_is_bad_input(self):
        result = bench("--sizes", "8:8:8:2", "--mask", "casual")
        self.assertEqual(result.returncode, 1)
        self.assertIn("unknown term 'casual'", result.stderr)

    def test_sizes_beyond_tiles_are_refused_with_the_estimate(self):
        result = bench("--sizes", "4000000:4000000:8192:64", "--json")
        self.assertEqual(result.returncode, 1)
        self.assertIn("GiB", result.stderr)
        self.assertIn("even in tiles", result.stderr)

    def test_help_lists_the_flags(self):
        result = bench("--help")
        self.assertEqual(result.returncode, 0)
        for flag in ("--sizes", "--batch", "--repeat", "--threads", "--json"):
            self.assertIn(flag, result.stdout)

    def test_bench_vs_torch_prints_both_and_the_ratio(self):
        result = subprocess.run(["/usr/bin/python3", SCRIPT, "--bin", BIN, "--sizes", "64:64:32:4", "--repeat", "1",
                                 "--threads", "1", "--json"], capture_output=True, text=True, timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        (row,) = json.loads(result.stdout)
        self.assertGreater(row["attnscope_ms"], 0)
        self.assertGreater(row["torch_ms"], 0)
        self.assertAlmostEqual(row["speedup"], row["torch_ms"] / row["attnscope_ms"], places=6)

    def test_bench_vs_torch_runs_both_with_the_allocator_asked_for(self):
        """--malloc reuse (the default): torch with glibc reusing freed blocks, its fastest
        configuration; --malloc default: glibc as the environment configures it."""
        env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
        for flags, tunables in [([], "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"),
                                (["--malloc", "default"], "")]:
            result = subprocess.run(["/usr/bin/python3", SCRIPT, "--bin", BIN, "--sizes", "32:32:16:2", "--repeat", "1",
                                     "--threads", "1", "--json"] + flags, capture_output=True, text=True, timeout=300,
                                    env=env)
            self.assertEqual(result.returncode, 0, result.stderr)
            (row,) = json.loads(result.stdout)
            self.assertEqual(row["torch_glibc_tunables"], tunables)
            self.assertGreater(row["torch_ms"], 0)


if __name__ == "__main__":
    unittest.main()
