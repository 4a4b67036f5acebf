"""Issue 37, the app: the induction probe and the ablation sweep on the shipped python-code model.

Probe: "repeated random tokens" (N = 50) puts a first token and 50 seeded random characters,
twice, into the text box; the head table's induction column then equals TransformerLens'
score, the mean of pattern.diagonal(offset = 1 - N) of `model run`'s maps of that text
(float64 NumPy, 1e-5).

Sweep: with the overview on, "ablation sweep" runs in the background (the state log sees it
running), then colours the overview by each head's effect: the same [layers][H] table as the
core's sweep of that text (attnscope_sweep, itself checked against a float64 forward in
tests/cli/test_ablation_sweep.py), within 1e-4.
"""
import json
import os
import subprocess
import unittest

import numpy as np

import guitest as g

TEXT = "def f(x):\n    return f(x)\n"
MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "assets", "models", "python-code")
SWEEP_BIN = os.environ.get("ATTNSCOPE_SWEEP_BIN", "")


def ran(state):
    return g.model_settled(state) and state["error"] == ""


class ProbeAndSweepTest(g.AppTestCase):
    SCRATCH = "probe-sweep-"

    def test_probe_then_sweep(self):
        _, log, window, state = self.start("probe", ready=ran, source="model", model="python-code", model_text=TEXT)
        self.assertEqual(state["induction_probe"]["n"], 50)
        state = self.click_until(window, log, state["rects"]["probe_button"],
                                 lambda s: ran(s) and s["induction_probe"]["last_n"] == 50 and s["L"] == 101
                                 and s["head_table"] is not None and s["head_table"]["values"])
        text = state["model_text"]
        self.assertEqual(text[1:51], text[51:])  # a first character, then 50 random ones twice
        self.assertGreater(len(set(text[1:51])), 15)

        out = os.path.join(self.dir, "probe-run")
        run = subprocess.run([g.BIN, "model", "run", MODEL, "--text", text, "--out", out],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        attn = np.load(os.path.join(out, "attentions.npy")).astype(np.float64)[:, 0]  # [layers, H, L, L]
        for (layer, head), values in zip(state["head_table"]["order"], state["head_table"]["values"]):
            want = np.diagonal(attn[layer, head], offset=1 - 50).mean()
            self.assertAlmostEqual(values["induction"], want, delta=1e-5, msg="L%dH%d" % (layer, head))
        self.screenshot(window, "probe.png")

        # The sweep: overview on, then "ablation sweep"; the result colours the overview.
        state = self.click_until(window, log, state["rects"]["overview_toggle"],
                                 lambda s: s["overview"]["shown"] and "sweep_start" in s["rects"])
        seen = g.line_count(log)
        state = self.click_until(window, log, state["rects"]["sweep_start"],
                                 lambda s: s["overview"]["sweep"]["done"] and s["overview"]["metric"] == "ablation_effect")
        lines = g.read_state_log(log)[seen:]
        self.assertTrue(any(s["overview"]["sweep"]["running"] for s in lines))  # in the background, then done
        sweep = state["overview"]["sweep"]
        self.assertEqual((sweep["position"], sweep["mode"], sweep["text"]), (100, "zero", text))
        with open(os.path.join(MODEL, "vocab.json")) as f:
            vocab = json.load(f)
        ids = ",".join(str(vocab.index(c)) for c in text)
        core = subprocess.run([SWEEP_BIN, MODEL, ids, "-1", "zero"], capture_output=True, text=True, timeout=60)
        self.assertEqual(core.returncode, 0, core.stderr)
        want = json.loads(core.stdout)
        self.assertEqual(sweep["top"], want["top"])
        np.testing.assert_allclose(np.array(sweep["effect"]), np.array(want["effect"]), atol=1e-4, rtol=0)
        np.testing.assert_allclose(np.array(state["overview"]["cells"], dtype=np.float64), np.array(want["effect"]),
                                   atol=1e-4, rtol=0)
        self.screenshot(window, "sweep.png")


if __name__ == "__main__":
    unittest.main()
