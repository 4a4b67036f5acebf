"""Issue 22 item 18: shortcuts while a text box has the keyboard. F1, Ctrl+S and Ctrl+Q work
from the model's text box, Escape closes the help and leaves the text box keeping what was
typed, the arrow keys stay with the text box, and the status bar says the text box has the
keys."""
import os
import time
import unittest

import guitest as g

TEXT = "def f(x):\n    return x\n"


model_settled = g.model_settled


class TextBoxKeysTest(g.AppTestCase):
    SCRATCH = "text-box-keys-"

    def into_text_box(self, window, log, state):
        """Clicks below the last line of the text box (the cursor goes to the end)."""
        x, y, w, h = state["rects"]["text_box"]
        seen = len(g.read_state_log(log))
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h - 6))
        self.x.xdotool("click", 1)
        return g.wait_for_new_state(log, seen, lambda s: s["item_active"]
                                    and s["texts"]["status_hint"].startswith("text box has the keys"))

    def hold(self, key):
        """A key held for a few frames (ImGui 1.86 misses a press and release in one frame)."""
        self.x.xdotool("keydown", key)
        time.sleep(0.15)
        self.x.xdotool("keyup", key)

    def test_keys_from_the_text_box(self):
        folder = os.path.join(self.dir, "exports")
        app, log, window, state = self.start("keys", ready=model_settled, source="model", model="python-code",
                                             model_text=TEXT, export_dir=folder)
        self.assertEqual(state["texts"]["status_hint"], "F1: shortcuts")
        state = self.into_text_box(window, log, state)
        self.x.xdotool("type", "--delay", "60", "y")
        focus = (state["focused_layer"], state["focused_head"])
        # Left belongs to the text box (the cursor moves, the focused head stays).
        self.hold("Left")
        self.x.xdotool("type", "--delay", "60", "zz")
        state = g.wait_for_state(log, lambda s: s["model_text"] == TEXT + "zzy")
        self.assertEqual((state["focused_layer"], state["focused_head"]), focus)

        # F1 opens the help, Escape closes it and leaves the text box; the text stays.
        self.press(window, "F1")
        state = g.wait_for_state(log, lambda s: s["help_open"])
        self.press(window, "Escape")
        state = g.wait_for_state(log, lambda s: not s["help_open"] and not s["item_active"])
        time.sleep(0.5)
        state = g.read_state_log(log)[-1]
        self.assertEqual(state["model_text"], TEXT + "zzy")
        self.assertEqual(state["texts"]["status_hint"], "F1: shortcuts")

        # Ctrl+S exports from the text box.
        state = self.into_text_box(window, log, state)
        self.press(window, "ctrl+s")
        state = g.wait_for_state(log, lambda s: s["export_count"] >= 1, timeout=60)
        self.assertEqual(state["last_export"]["error"], "")
        self.assertTrue(all(os.path.exists(p) for p in state["last_export"]["paths"]))
        self.assertTrue(state["item_active"])

        # Ctrl+Q quits from the text box.
        self.press(window, "ctrl+q")
        _, stderr = app.communicate(timeout=20)
        self.assertEqual(app.returncode, 0, stderr)

    def test_a_long_line_keeps_the_typed_end_in_view(self):
        """Issue 35: a line longer than the box scrolls so that the cursor being typed at stays
        in view (Dear ImGui 1.86 does not wrap)."""
        line = " ".join("word%d" % i for i in range(18))  # 120 characters: python-code's context is 128
        _, log, window, state = self.start("long-line", ready=model_settled, source="model", model="python-code",
                                           model_text=line)
        box = state["rects"]["text_box"]
        state = self.into_text_box(window, log, state)
        self.x.xdotool("type", "--delay", "60", "ZZ")
        state = g.wait_for_state(log, lambda s: s["model_text"] == line + "ZZ" and "text_box_cursor_x" in s["texts"])
        cursor_x, scroll_x = int(state["texts"]["text_box_cursor_x"]), int(state["texts"]["text_box_scroll_x"])
        self.assertGreater(scroll_x, 0)  # the line is wider than the box ...
        self.assertTrue(0 <= cursor_x <= box[2], (cursor_x, box))  # ... and the cursor at its end is drawn inside it
        self.screenshot(window, "long_line_end.png")


if __name__ == "__main__":
    unittest.main()
