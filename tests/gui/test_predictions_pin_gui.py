"""Issue 22 item 4: a click on a map pins the predictions to that query row (shown as a pin
with an "unpin" button); typing into the text drops the pin, so the predictions follow the
end of the text again, and "unpin" clears it too."""
import time
import unittest

import guitest as g

TEXT = "def f(x):\n    return x\n"


model_settled = g.model_settled


class PredictionsPinTest(g.AppTestCase):
    SCRATCH = "predictions-pin-"

    def pin_row(self, window, log, state, row):
        """Clicks query row `row` of the focused probabilities; returns the state once pinned."""
        x, y, w, h = state["rects"]["focus_probs"]
        rect = [x, y + row * h / state["L"], 4, h / state["L"]]
        state = self.click_until(window, log, rect, lambda s: s["predictions_pin"] == row
                                 and s["hover"] == [-1, -1] and "predictions_unpin" in s["rects"], dx=2)
        self.assertEqual((state["predictions"]["position"], state["predictions"]["why"]), (row, "clicked"))
        return state

    def test_typing_unpins_and_unpin_clears(self):
        _, log, window, state = self.start("pin", ready=model_settled, source="model", model="python-code",
                                           model_text=TEXT)
        self.assertIsNone(state["predictions_pin"])
        self.assertNotIn("predictions_unpin", state["rects"])
        self.assertEqual(state["predictions"]["why"], "last position")
        state = self.pin_row(window, log, state, 5)

        # Type at the end of the text: the predictions follow the new last position.
        seen = len(g.read_state_log(log))
        self.type_at_text_end(window, state, "y")
        typed = TEXT + "y"
        state = g.wait_for_new_state(log, seen, lambda s: model_settled(s) and s["model_text"] == typed
                                     and s["L"] == len(typed) and s["hover"] == [-1, -1], timeout=30)
        self.assertIsNone(state["predictions_pin"])
        self.assertNotIn("predictions_unpin", state["rects"])
        self.assertEqual((state["predictions"]["position"], state["predictions"]["why"]),
                         (len(typed) - 1, "last position"))

        # Pin again, then "unpin": back to the last position without typing.
        state = self.pin_row(window, log, state, 3)
        state = self.click_until(window, log, state["rects"]["predictions_unpin"],
                                 lambda s: s["predictions_pin"] is None and "predictions_unpin" not in s["rects"])
        self.assertEqual((state["predictions"]["position"], state["predictions"]["why"]),
                         (len(typed) - 1, "last position"))
        self.assertNotIn("predictions_unpin", state["rects"])


if __name__ == "__main__":
    unittest.main()
