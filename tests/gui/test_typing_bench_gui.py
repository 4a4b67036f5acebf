"""Issue 35, live at length: the app's own measurement of a keystroke. The state log's
`edit_to_maps_ms` runs from the frame that read an edit to the end of the first frame drawing
its maps, with the job's stages beside it; `--bench-typing N` types into the real app (N
characters at the end, N edits at the start, 3 pastes) and prints one JSON line with each
phase's median and worst beside the engine's time. No timing is asserted, only that the
figures exist, are consistent and come from the runs they name."""
import json
import os
import unittest

import guitest as g

TEXT = "def f(x):\n    return x + 1\n"  # python-code: one token a character
STAGES = {"engine", "view", "head_table", "upload", "other"}


class TypingBenchTest(g.AppTestCase):
    SCRATCH = "typing-bench-"

    def bench(self, name, *flags, **settings):
        path = g.write_settings(self.dir, name + ".json", **settings)
        return self.x.run("--settings", path, "--size", "1280x800", *flags, timeout=240)

    def test_bench_typing_prints_each_phase(self):
        run = self.bench("bench", "--bench-typing", "4", source="model", model="python-code", model_text=TEXT)
        self.assertEqual(run.returncode, 0, run.stderr)
        lines = run.stdout.strip().splitlines()
        self.assertEqual(len(lines), 1, run.stdout)
        report = json.loads(lines[0])["bench_typing"]
        self.assertEqual((report["tokens"], report["context"], report["edits"]), (len(TEXT), 128, 4))
        for phase, count in (("end", 4), ("start", 4), ("paste", 3)):
            p = report[phase]
            self.assertEqual(p["count"], count, phase)
            self.assertEqual(set(p["stages_median_ms"]), STAGES, phase)
            self.assertGreater(p["median_ms"], 0.0, phase)
            self.assertGreaterEqual(p["max_ms"], p["median_ms"], phase)
            self.assertGreater(p["engine_median_ms"], 0.0, phase)
            self.assertAlmostEqual(p["ratio"], p["median_ms"] / p["engine_median_ms"], places=6)
            # Edit to maps holds the engine's part: the whole is never faster than it.
            self.assertGreaterEqual(p["median_ms"], p["engine_median_ms"], phase)
        # One progress line per measured edit on stderr, phase by phase.
        progress = [l for l in run.stderr.splitlines() if l.startswith("attnscope: --bench-typing: ")]
        self.assertEqual(len(progress), 11, run.stderr)
        self.assertTrue(progress[0].startswith("attnscope: --bench-typing: end 1: "), progress[0])
        self.assertTrue(progress[-1].startswith("attnscope: --bench-typing: paste 3: "), progress[-1])

    def test_bench_typing_refusals(self):
        run = self.bench("sandbox", "--bench-typing", "2", source="text", text="the cat sat")
        self.assertEqual(run.returncode, 1)
        self.assertIn("attnscope: --bench-typing: the settings' source must be a model", run.stderr)
        run = self.bench("full", "--bench-typing", "10", source="model", model="python-code", model_text="x" * 125)
        self.assertEqual(run.returncode, 1)
        self.assertIn("125 tokens + 10 typed would pass the context of 128; use a shorter text", run.stderr)
        self.assertEqual(run.stdout, "")
        run = self.x.run("--bench-typing", "zero")
        self.assertEqual(run.returncode, 2)
        self.assertIn("--bench-typing: expected a positive integer, got 'zero'", run.stderr)

    def test_edit_to_maps_in_the_state_log(self):
        _, log, window, state = self.start("typed", ready=g.model_settled, source="model", model="python-code",
                                           model_text=TEXT)
        self.assertEqual(state["maps_generation"], state["generation"])
        self.assertGreater(state["edit_to_maps_ms"], 0.0)
        seen = len(g.read_state_log(log))
        self.type_at_text_end(window, state, "y")
        state = g.wait_for_new_state(log, seen, lambda s: s["text_tokens"][0] == len(TEXT) + 1 and not s["pending"]
                                     and s["maps_generation"] == s["generation"], timeout=30)
        stages = state["stages"]
        self.assertEqual(set(stages), {"engine_ms", "view_ms", "head_table_ms", "upload_ms"})
        self.assertGreater(stages["engine_ms"], 0.0)
        # The typed character's maps: from its frame to the frame that drew them, which holds
        # the job (engine, view, head table) and the upload.
        self.assertGreaterEqual(state["edit_to_maps_ms"],
                                stages["engine_ms"] + stages["view_ms"] + stages["head_table_ms"] + stages["upload_ms"])
        self.assertLessEqual(state["compute_ms"], state["edit_to_maps_ms"])


if __name__ == "__main__":
    unittest.main()
