"""Issue 22 item 3: typing a model's text past its context. The count under the text box is
the real one ("137 of 128 characters"), one message says so there (no config path), and
nothing else repeats it: not the top of the control panel, not the maps (which keep the last
text that fit, dimmed and marked out of date), not the status bar. Deleting back under the
context clears it."""
import unittest

import guitest as g

TEXT = "x = 1 + 2\n" * 12 + "abcdefgh"  # 128 characters: python-code's whole context
MORE = "ijklmnopq"                      # 9 more: none of the texts typed on the way fits


class TextTooLongTest(g.AppTestCase):
    SCRATCH = "text-too-long-"

    def test_one_message_real_count_stale_maps(self):
        _, log, window, state = self.start("long", source="model", model="python-code", model_text=TEXT)
        self.assertEqual((state["L"], state["text_tokens"], state["text_too_long"]), (128, [128, 128], False))
        before = self.capture(window, "fits.png")[2]
        rect = state["rects"]["focus_probs"]

        # Type 9 more characters at the end: 137 of 128.
        x, y, w, h = state["rects"]["text_box"]
        seen = len(g.read_state_log(log))
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h - 6))
        self.x.xdotool("click", 1)
        self.x.xdotool("type", "--delay", "40", MORE)
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        state = g.wait_for_new_state(log, seen, lambda s: s["text_tokens"] == [137, 128] and not s["pending"]
                                     and "text_too_long" in s["rects"], timeout=30)
        self.assertTrue(state["text_too_long"])
        self.assertIn("text has 137 characters but python-code's context is 128", state["error"])
        message = state["text_too_long_message"]
        self.assertEqual(message, "The model reads at most 128 characters: shorten the text by 9, or use its first or "
                                  "last 128. The dimmed maps show the last text that fit.")
        self.assertNotIn("config.json", message)
        # The count and the message sit right under the text box.
        box, count, note = state["rects"]["text_box"], state["rects"]["text_count"], state["rects"]["text_too_long"]
        self.assertLess(abs(count[1] - (box[1] + box[3])), 12, (box, count))
        self.assertLess(note[1] - (count[1] + count[3]), 12, (count, note))
        # Not repeated: no error above the controls, none in the status bar.
        self.assertNotIn("control_error", state["rects"])
        self.assertNotIn("status_note", state["rects"])
        # The last good maps stay (128 tokens), dimmed as out of date.
        self.assertTrue(state["maps_stale"])
        self.assertEqual(state["L"], 128)
        after = self.capture(window, "too_long.png")[2]
        px, py = g.cell_pixel(rect, 128, 128, 120, 2)
        self.assertLess(sum(after[py][px]), 0.6 * sum(before[py][px]) + 30, (before[py][px], after[py][px]))

        # Delete back to 128: the message goes, the maps are current again.
        seen = len(g.read_state_log(log))
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h - 6))
        for _ in range(9):
            self.x.xdotool("key", "--delay", "40", "BackSpace")
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        state = g.wait_for_new_state(log, seen, lambda s: s["text_tokens"] == [128, 128] and not s["pending"]
                                     and s["L"] == 128, timeout=30)
        self.assertEqual((state["error"], state["text_too_long"], state["maps_stale"]), ("", False, False))
        self.assertEqual(state["text_too_long_message"], "")
        self.assertNotIn("text_too_long", state["rects"])

    def test_too_long_from_the_start(self):
        """No maps yet: the count and the message, without the dimmed-maps sentence."""
        _, log, window, state = self.start("long_start", ready=lambda s: s["generation"] > 0 and not s["pending"]
                                           and "text_too_long" in s["rects"],
                                           source="model", model="python-code", model_text=TEXT + MORE)
        self.assertEqual((state["text_tokens"], state["text_too_long"]), ([137, 128], True))
        self.assertEqual(state["text_too_long_message"],
                         "The model reads at most 128 characters: shorten the text by 9, or use its first or last 128.")
        self.assertNotIn("control_error", state["rects"])
        self.assertNotIn("status_note", state["rects"])


    def test_use_the_first_or_last_tokens(self):
        """The buttons under the message set model_truncate (the text stays as typed): the maps
        read the first 128 characters, then the last 128; "read all" refuses the text again."""
        text = TEXT + MORE
        _, log, window, state = self.start("truncate", ready=lambda s: s["generation"] > 0 and not s["pending"]
                                           and "truncate_end" in s["rects"],
                                           source="model", model="python-code", model_text=text)
        self.assertEqual(state["model_truncate"], "none")
        for button, how, kept in (("truncate_end", "end", text[:128]), ("truncate_start", "start", text[-128:])):
            with self.subTest(how=how):
                state = self.click_until(window, log, state["rects"][button],
                                         lambda s, how=how: s["model_truncate"] == how and not s["pending"]
                                         and s["text_cut"] and s["L"] == 128 and not s["maps_stale"])
                self.assertEqual(state["model_text"], text)  # not rewritten
                self.assertEqual("".join(state["query_tokens"]), kept.replace("\n", "\\n"))
                self.assertEqual((state["error"], state["text_too_long"]), ("", False))
                self.assertEqual(state["text_tokens"], [137, 128])
                self.assertEqual(state["texts"]["text_count"], "137 characters: the maps read the %s 128"
                                 % ("first" if how == "end" else "last"))
                self.screenshot(window, "truncate-%s.png" % how)
                if how == "end":  # back to refusing, then the other end
                    state = self.click_until(window, log, state["rects"]["truncate_off"],
                                             lambda s: s["model_truncate"] == "none" and s["text_too_long"]
                                             and "truncate_start" in s["rects"])
                    self.assertTrue(state["maps_stale"])


if __name__ == "__main__":
    unittest.main()
