"""Issue 22 item 1: every number on screen is the shown run's. The shape pipeline's
constraints under python-code (H = 4, D = 96) opened after the sandbox had H = 8 read "D=96,
H=4, d=24", not the sandbox's "H=8, d=12"; under reverse-digits (H = 2, d = 32, causal) the
greyed sandbox controls show those values, not "heads 8", "head size 16" and padding; the
user's sandbox settings are kept; the sandbox still reads its own."""
import unittest

import guitest as g


model_settled = g.model_settled


class PipelineNumbersTest(g.AppTestCase):
    SCRATCH = "pipeline-numbers-"

    def test_constraints_are_the_runs(self):
        _, log, window, state = self.start("model", ready=lambda s: model_settled(s) and "constraint_heads" in s["texts"],
                                           source="model", model="python-code", model_text="def f(x):\n", heads=8)
        self.assertEqual((state["settings_heads"], state["heads"]), (8, 4))
        self.assertEqual(state["texts"]["constraint_heads"], "D=96, H=4, d=24")

    def test_greyed_controls_show_the_models_values(self):
        app, log, window, state = self.start("greyed", ready=model_settled, source="model", model="reverse-digits",
                                             model_text="12=21.", heads=8, head_dim=16, mask="padding", valid_lens=[5])
        self.assertEqual(state["controls_shown"], {"heads": 2, "head_dim": 32, "mask": "causal", "bias": True})
        self.assertEqual((state["settings_heads"], state["mask"]), (8, "padding"))  # the user's, kept
        self.assertIn("imported_reason", state["rects"])
        # As drawn: greyed, with the model's 2 heads and causal mask, not the user's 8 and padding.
        shot = self.capture(window, "greyed.png")
        self.stop(app)
        self.check_greyed_as_drawn(shot, state, "greyed-enabled-look", g.GREYED_CONTROLS, g.REVERSE_DIGITS_VALUES)

    def test_sandbox_reads_its_own(self):
        _, log, window, state = self.start("sandbox", ready=lambda s: g.settled(s) and "constraint_heads" in s["texts"],
                                           text="one two three", heads=2, head_dim=8)
        self.assertEqual(state["texts"]["constraint_heads"], "D=16, H=2, d=8")
        self.assertEqual(state["controls_shown"], {"heads": 2, "head_dim": 8, "mask": "none", "bias": True})


if __name__ == "__main__":
    unittest.main()
