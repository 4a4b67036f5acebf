"""Issue 22 item 1 (the pipeline part): the shape pipeline's constraints show the shown run's
numbers. python-code (H = 4, D = 96) opened after the sandbox had H = 8 reads "D=96, H=4,
d=24", not the sandbox's "H=8, d=12"; the sandbox still reads its own."""
import unittest

import guitest as g


def model_settled(state):
    return g.settled(state) and state.get("view_source") == "model run" and state["error"] == ""


class PipelineNumbersTest(g.AppTestCase):
    SCRATCH = "pipeline-numbers-"

    def test_constraints_are_the_runs(self):
        _, log, window, state = self.start("model", ready=lambda s: model_settled(s) and "constraint_heads" in s["texts"],
                                           source="model", model="python-code", model_text="def f(x):\n", heads=8)
        self.assertEqual((state["settings_heads"], state["heads"]), (8, 4))
        self.assertEqual(state["texts"]["constraint_heads"], "D=96, H=4, d=24")

    def test_sandbox_reads_its_own(self):
        _, log, window, state = self.start("sandbox", ready=lambda s: g.settled(s) and "constraint_heads" in s["texts"],
                                           text="one two three", heads=2, head_dim=8)
        self.assertEqual(state["texts"]["constraint_heads"], "D=16, H=2, d=8")


if __name__ == "__main__":
    unittest.main()
