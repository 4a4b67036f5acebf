"""Issue 22 item 7: one numbering convention. Every label is 0-based, as in the files, with
"of N" counts that agree: the focus heading reads "layer 1 of 2   head 0 of 4   batch item 0
of 1", and the KV-cache stepper's last step of 10 tokens is "step 9 of 10" (not "9 / 9")."""
import unittest

import guitest as g


class NumberingTest(g.AppTestCase):
    SCRATCH = "numbering-"

    def test_focus_heading_layers(self):
        _, log, window, state = self.start("layers", source="model", model="python-code", model_text="def f(x):\n")
        self.assertTrue(state["texts"]["focus_heading"].startswith("layer 0 of 2   head 0 of 4   batch item 0 of 1"),
                        state["texts"]["focus_heading"])
        self.press(window, "Down")
        state = g.wait_for_state(log, lambda s: s["focused_layer"] == 1 and "focus_heading" in s["texts"]
                                 and s["texts"]["focus_heading"].startswith("layer 1"))
        self.assertTrue(state["texts"]["focus_heading"].startswith("layer 1 of 2   head 0 of 4   "))

    def test_stepper_counts_steps(self):
        words = "one two three four five six seven eight nine ten"
        _, log, window, state = self.start("stepper", text=words, heads=2, head_dim=8, mask="causal")
        self.assertTrue(state["texts"]["focus_heading"].startswith("head 0 of 2   batch item 0 of 1   L = 10"),
                        state["texts"]["focus_heading"])
        self.press(window, "F5")
        state = g.wait_for_state(log, lambda s: s.get("stepper") and "L" in s["stepper"]
                                 and "stepper_step" in s["texts"])
        self.assertEqual(state["stepper"]["L"], 10)
        self.assertTrue(state["texts"]["stepper_step"].startswith('step 0 of 10: token "one"'),
                        state["texts"]["stepper_step"])
        self.press(window, "End")
        state = g.wait_for_state(log, lambda s: s.get("stepper") and s["stepper"]["step"] == 9
                                 and s["texts"].get("stepper_step", "").startswith("step 9"))
        self.assertTrue(state["texts"]["stepper_step"].startswith('step 9 of 10: token "ten" fed; new row 9'),
                        state["texts"]["stepper_step"])


if __name__ == "__main__":
    unittest.main()
