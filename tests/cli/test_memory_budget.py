"""The memory budget (docs/robustness.md, "Memory budget"): with ATTNSCOPE_MEMORY_BYTES set, every command
refuses a run whose estimate is beyond it: exit 1, one line naming the estimate and the
budget, nothing written, and before it allocates (the child's peak resident memory stays far
below the estimate). Runs within the budget are not affected."""
import json
import os
import subprocess
import unittest

import numpy as np

import model_reference as ref

BUDGET = 256 << 20  # what the fuzz target fuzz_cli sets
BUDGET_TEXT = "but the memory budget is 0.2 GiB (ATTNSCOPE_MEMORY_BYTES)"


def run_measured(args, budget=BUDGET):
    """(exit code, stderr, peak resident memory in bytes) of one attnscope run."""
    env = dict(os.environ, ATTNSCOPE_MEMORY_BYTES=str(budget))
    child = subprocess.Popen([ref.BIN, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    stderr = child.stderr.read()
    child.stderr.close()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, stderr, usage.ru_maxrss * 1024


class BeyondTheBudget(unittest.TestCase):
    def check_refused(self, args, needs_gib, out):
        code, stderr, peak = run_measured([*args, "--out", out])
        self.assertEqual(code, 1, stderr)
        lines = stderr.splitlines()
        self.assertEqual(len(lines), 1, stderr)
        self.assertIn("attention for these sizes needs %s GiB %s" % (needs_gib, BUDGET_TEXT), lines[0])
        self.assertFalse(os.path.exists(out), "nothing may be written")
        if os.environ.get("ATTNSCOPE_SANITIZED") != "1":  # ASan's shadow memory counts as resident
            self.assertLess(peak, BUDGET, "refused after allocating")
        return lines[0]

    def test_demo_with_641_heads_in_every_command(self):
        # D = 16 x 641 = 10256: 1.6 GiB of seeded weights (the input fuzz_cli found).
        root = ref.case_dir("memory_budget", "demo_641_heads")
        cases = [
            ("compute", ["compute", "--demo", "--heads", "641"]),
            ("export", ["export", "--demo", "--heads-count", "641"]),
            ("analyze", ["analyze", "--demo", "--heads", "641", "--mask", "window:6", "--sinks", "0",
                         "--rollout", "--flow"]),
        ]
        for name, args in cases:
            with self.subTest(command=name):
                line = self.check_refused(args, "1.6", os.path.join(root, name))
                self.assertTrue(line.startswith("attnscope %s: " % name), line)

    def test_model_position_table(self):
        # A sinusoidal [max_len, d_model] = [65536, 65536] table: 16 GiB that no file backs.
        root = ref.case_dir("memory_budget", "model")
        folder = os.path.join(root, "model")
        ref.write_random_model(folder, seed=11, T=16)
        path = os.path.join(folder, "config.json")
        with open(path) as f:
            cfg = json.load(f)
        cfg.update(d_model=65536, max_len=65536, positional="sinusoidal")
        with open(path, "w") as f:
            json.dump(cfg, f)
        os.remove(os.path.join(folder, "pos_emb.npy"))
        np.save(os.path.join(folder, "tok_emb.npy"), np.zeros((cfg["vocab_size"], 65536), np.float32))
        line = self.check_refused(["model", "run", folder, "--text", "abc"], "16.0", os.path.join(root, "out"))
        self.assertIn("config.json: sinusoidal positions [max_len, d_model]: ", line)


class WithinTheBudget(unittest.TestCase):
    def test_small_runs_are_unaffected(self):
        root = ref.case_dir("memory_budget", "within")
        for name, args in (("compute", ["compute", "--demo"]), ("analyze", ["analyze", "--demo", "--rollout"])):
            with self.subTest(command=name):
                out = os.path.join(root, name)
                code, stderr, _ = run_measured([*args, "--out", out])
                self.assertEqual(code, 0, stderr)
                self.assertTrue(os.listdir(out))


if __name__ == "__main__":
    unittest.main()
