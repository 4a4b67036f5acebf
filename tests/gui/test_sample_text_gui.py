"""Issue 22 item 16: switching models with a text that does not fit the new model (code into
reverse-digits: characters outside its vocabulary) offers the model's sample text, one click."""
import unittest

import guitest as g

CODE = "x = area(3, 4)\n"
SAMPLE = "3111445858=8585441113."  # reverse-digits' sample (core/config/model_source.cpp)


model_settled = g.model_settled


class SampleTextTest(g.AppTestCase):
    SCRATCH = "sample-text-"

    def test_restore_the_sample_after_switching(self):
        _, log, window, state = self.start("switch", ready=model_settled, source="model", model="python-code",
                                           model_text=CODE)
        self.assertEqual(state["unknown_tokens"], 0)
        self.assertNotIn("restore_sample", state["rects"])
        state = self.choose_item(window, log, "models_combo", "models_item_reverse-digits",
                                 lambda s: s["model"] == "reverse-digits")
        state = g.wait_for_state(log, lambda s: model_settled(s) and s["model_name"] == "reverse-digits"
                                 and "restore_sample" in s["rects"], timeout=30)
        self.assertEqual(state["model_text"], CODE)  # the typed text is kept
        self.assertGreater(state["unknown_tokens"], 0)
        state = self.click_until(window, log, state["rects"]["restore_sample"],
                                 lambda s: s["model_text"] == SAMPLE)
        state = g.wait_for_state(log, lambda s: model_settled(s) and s["model_text"] == SAMPLE and s["L"] == len(SAMPLE)
                                 and "restore_sample" not in s["rects"], timeout=30)
        self.assertEqual(state["unknown_tokens"], 0)


if __name__ == "__main__":
    unittest.main()
