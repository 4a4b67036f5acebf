"""Issue 22 item 8: labels that read like seeds. The fill choices, the pipeline's folded-heads
toggle and the mistakes lab's note say what they are; the seed listing they come from is in
their tooltips, not next to the real "seed" field."""
import unittest

import guitest as g


class NoteLabelsTest(g.AppTestCase):
    SCRATCH = "note-labels-"

    def test_no_seed_in_labels(self):
        _, log, window, state = self.start("labels", text="one two three four", heads=2, head_dim=8,
                                           mistake="no-scale")
        texts = state["texts"]
        self.assertEqual(texts["fill_combo"], "-inf / -1e9")
        self.assertEqual(texts["folded_toggle"], "folded heads [B*H, L, d]")
        self.assertEqual(texts["mistake_note"], "scores not divided by sqrt(d): softmax saturates towards one-hot rows")
        for name, text in texts.items():
            self.assertNotIn("seed", text, name)
        for name in ("fill_combo", "folded_toggle"):
            self.assertIn(name, state["rects"])


if __name__ == "__main__":
    unittest.main()
