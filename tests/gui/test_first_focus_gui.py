"""Issue 22 item 11: a first start (no saved settings) focuses the head the caption talks
about, python-code's induction head L1H3, not L0H0; a later start keeps the saved focus."""
import os
import unittest

import guitest as g


model_settled = g.model_settled


class FirstFocusTest(g.AppTestCase):
    SCRATCH = "first-focus-"

    def start_plain(self, name):
        """The app as a user starts it: no --settings, this test's own config folder."""
        log = os.path.join(self.dir, name + ".log")
        app = self.x.start("--state-log", log)
        self.addCleanup(self.stop, app)
        state = g.wait_for_state(log, lambda s: model_settled(s) and "focus_heading" in s["texts"], timeout=30)
        window = self.find_window()
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        return app, log, window, state

    def test_first_start_focuses_the_induction_head(self):
        old = self.x.env["XDG_CONFIG_HOME"]
        self.x.env["XDG_CONFIG_HOME"] = g.scratch_dir("first-focus-config-")
        self.addCleanup(self.x.env.__setitem__, "XDG_CONFIG_HOME", old)
        app, log, window, state = self.start_plain("first")
        self.assertEqual(state["model"], "python-code")
        self.assertIn("induction L1H3", state["caption"])
        self.assertEqual((state["focused_layer"], state["focused_head"]), (1, 3))
        self.assertTrue(state["texts"]["focus_heading"].startswith("layer 1 of 2   head 3 of 4"))
        # The user moves on; the next start keeps their head, not the featured one.
        self.press(window, "Left")
        g.wait_for_state(log, lambda s: (s["focused_layer"], s["focused_head"]) == (1, 2))
        self.press(window, "ctrl+q")
        _, stderr = app.communicate(timeout=20)
        self.assertEqual(app.returncode, 0, stderr)
        _, _, _, state = self.start_plain("second")
        self.assertEqual((state["focused_layer"], state["focused_head"]), (1, 2))


if __name__ == "__main__":
    unittest.main()
