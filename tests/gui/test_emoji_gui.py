"""Issue 22 item 5: a typed emoji. The text box (Debian's ImGui 1.86, 16-bit characters)
holds it as U+FFFD, which is also python-code's own unknown entry: it is flagged "(unk)" and
counted like any unknown character, as the same emoji from a settings file is. Emoji and
symbols get glyphs from Symbola (fonts-symbola), merged into the font atlas."""
import unittest

import guitest as g

TEXT = "x = 1\n"


model_settled = g.model_settled


class EmojiTest(g.AppTestCase):
    SCRATCH = "emoji-gui-"

    def test_typed_emoji_is_unknown_and_counted(self):
        _, log, window, state = self.start("typed", ready=model_settled, source="model", model="python-code",
                                           model_text=TEXT)
        for mark in ("\u263a", "\u2764", "\ufffd"):
            self.assertTrue(state["font_glyphs"][mark], mark)
        self.assertEqual(state["unknown_tokens"], 0)
        seen = len(g.read_state_log(log))
        self.type_at_text_end(window, state, "a\U0001F600b", delay=100)
        state = g.wait_for_new_state(log, seen, lambda s: model_settled(s) and s["L"] == len(TEXT) + 3
                                     and s["model_text"].endswith("b"), timeout=30)
        self.assertEqual(state["model_text"], TEXT + "a\ufffdb")  # what the text box holds
        self.assertEqual(state["query_tokens"][-3:], ["a", "\ufffd (unk)", "b"])
        self.assertEqual(state["unknown_tokens"], 1)
        self.screenshot(window, "typed.png")

    def test_emoji_from_a_settings_file(self):
        _, log, window, state = self.start("file", ready=model_settled, source="model", model="python-code",
                                           model_text=TEXT + "\U0001F600\u263a\ufffd")
        self.assertEqual(state["query_tokens"][-3:], ["\U0001F600 (unk)", "\u263a (unk)", "\ufffd (unk)"])
        self.assertEqual(state["unknown_tokens"], 3)


if __name__ == "__main__":
    unittest.main()
