"""Issue 22 item 2: sandbox padding follows the texts. Two lines of 10 and 6 tokens with
padding ticked made both valid lengths 7 (item 0's words masked, item 1's <pad> keys
visible). Now each item's valid length is its line's token count and follows edits until
its slider sets it by hand; "follow the lines" makes it follow again; with padding off and
<pad> keys present, the mask panel says so."""
import unittest

import guitest as g

TEXT = "a b c d e f g h i j\nk l m n o p"  # 10 and 6 tokens: S = 10


def settled_with(predicate):
    return lambda s: g.settled(s) and s["error"] == "" and predicate(s)


class PaddingFollowsTextTest(g.AppTestCase):
    SCRATCH = "padding-follows-"

    def test_valid_lengths_follow_the_lines(self):
        _, log, window, state = self.start("follow", text=TEXT, mask="none", heads=2, head_dim=8)
        self.assertEqual(state["allowed_cells_by_item"], [100, 100])
        # padding off, item 1 padded with 4 <pad> keys: said next to the mask
        self.assertEqual(state["texts"]["pad_note"], "<pad> keys are attended (4 in item 1): tick padding to mask them")
        self.assertIn("pad_note", state["rects"])
        self.screenshot(window, "pad_note.png")

        # Tick padding: each item's valid length is its line's token count.
        state = self.click_until(window, log, state["rects"]["mask_padding"], lambda s: s["mask"] == "padding", dx=8)
        state = g.wait_for_state(log, settled_with(lambda s: s["mask"] == "padding"
                                                   and s.get("allowed_cells_by_item") == [100, 60]), timeout=30)
        self.assertEqual((state["valid_lens"], state["valid_lens_shown"]), ([], [10, 6]))
        self.assertNotIn("pad_note", state["texts"])
        self.assertNotIn("valid_lens_follow", state["rects"])

        # Typing at the end of line 1 (7 tokens): its valid length follows.
        count = g.line_count(log)
        self.type_at_text_end(window, state, " q")
        state = g.wait_after(log, count, settled_with(lambda s: s["valid_lens_shown"] == [10, 7]
                                                      and s.get("allowed_cells_by_item") == [100, 70]), timeout=30)

        # Item 0 set by hand (4): item 1 still follows its line.
        count = g.line_count(log)
        self.type_into_slider(window, state["rects"]["valid_len_0"], "4")
        state = g.wait_after(log, count, settled_with(lambda s: s["valid_lens"] == [4, -1]
                                                      and s.get("allowed_cells_by_item") == [40, 70]), timeout=30)
        self.assertEqual(state["valid_lens_shown"], [4, 7])
        shot = self.screenshot(window, "by_hand.png")
        count = g.line_count(log)
        self.type_at_text_end(window, state, " r")
        state = g.wait_after(log, count, settled_with(lambda s: s["valid_lens_shown"] == [4, 8]
                                                      and s.get("allowed_cells_by_item") == [40, 80]), timeout=30)
        self.assertEqual(state["valid_lens"], [4, -1])

        # "follow the lines": item 0 follows again.
        state = self.click_until(window, log, state["rects"]["valid_lens_follow"], lambda s: s["valid_lens"] == [])
        state = g.wait_for_state(log, settled_with(lambda s: s["valid_lens"] == []
                                                   and s.get("allowed_cells_by_item") == [100, 80]), timeout=30)
        self.assertEqual(state["valid_lens_shown"], [10, 8])
        self.assertTrue(shot)

    def test_loaded_lengths_count_as_set_by_hand(self):
        # A settings file's valid_lens: -1 follows the line, a number is set by hand.
        _, log, window, state = self.start("loaded", ready=settled_with(lambda s: "allowed_cells_by_item" in s),
                                           text=TEXT, mask="padding", valid_lens=[-1, 3], heads=2, head_dim=8)
        self.assertEqual((state["valid_lens_shown"], state["allowed_cells_by_item"]), ([10, 3], [100, 30]))
        self.assertIn("valid_lens_follow", state["rects"])


if __name__ == "__main__":
    unittest.main()
