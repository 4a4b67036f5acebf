"""Issue 35 in the app: a Llama-style folder (SentencePiece byte fallback) labels "世界" and "ü"
as 世 · · 界 · · ü · on the axes (state log `query_tokens`, glyphs in the atlas), the tooltip of
a "·" gives its raw piece and id; BERT's unknown token reads "[UNK]" and its tooltip the word
it stands for; an emptied text box counts 0 tokens."""
import os
import sys
import time
import unittest

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402  (the CLI tests' random-folder writer)

DOT, SPACE = "\u00b7", "\u2423"


def model_run(s):
    return g.settled(s) and s.get("view_source") == "model run"


class TokenLabelsTest(g.AppTestCase):
    SCRATCH = "token-labels-"

    def test_byte_fallback_labels_on_the_axes(self):
        folder = os.path.join(self.dir, "tiny-llama")
        cfg, tensors = hf.make_model("llama", seed=62, V=300, P=64, G=2, N=1)
        hf.write_folder(folder, cfg, tensors)
        hf.write_sentencepiece_bpe(folder)
        _, log, window, state = self.start("llama", source="model", model=folder,
                                           model_text="hi \u4e16\u754c \u00fc", ready=model_run)
        labels = ["<s>", SPACE + "hi", SPACE, "\u4e16", DOT, DOT, "\u754c", DOT, DOT, SPACE, "\u00fc", DOT]
        self.assertEqual(state["query_tokens"], labels)
        self.assertEqual(state["label_glyphs_missing"], [])
        L = len(labels)
        rect = state["rects"]["focus_probs"]
        seen = g.line_count(log)
        self.move_to_cell(window, rect, [0, L, 0, L], 5, 3)
        state = g.wait_for_new_state(log, seen, lambda s: s["hover"] == [5, 3])
        self.assertEqual(state["hover_tokens"], [DOT, "\u4e16"])
        self.assertEqual(state["hover_pieces"], ['piece "<0x96>"  id %d' % (3 + 0x96), 'piece "<0xE4>"  id %d' % (3 + 0xE4)])
        time.sleep(0.5)  # the tooltip's frame is on screen
        self.screenshot(window, "byte-fallback-labels.png")

    def test_unknown_token_reads_as_its_name(self):
        folder = os.path.join(self.dir, "tiny-bert")
        cfg, tensors = hf.make_model("bert", seed=63, V=16, P=16, N=1)
        hf.write_folder(folder, cfg, tensors)
        hf.write_wordpiece(folder)
        _, log, window, state = self.start("bert", source="model", model=folder, model_text="the \u2603 head",
                                           ready=model_run)
        self.assertEqual(state["query_tokens"], ["[CLS]", "the", "[UNK]", "head", "[SEP]"])
        rect = state["rects"]["focus_probs"]
        seen = g.line_count(log)
        self.move_to_cell(window, rect, [0, 5, 0, 5], 2, 1)
        state = g.wait_for_new_state(log, seen, lambda s: s["hover"] == [2, 1])
        self.assertEqual(state["hover_pieces"], ['piece "[UNK]"  id 1  for "\u2603"', 'piece "the"  id 5'])
        time.sleep(0.5)
        self.screenshot(window, "unknown-token.png")

    def test_an_empty_text_counts_nothing(self):
        _, log, window, state = self.start("empty", source="model", model="python-code", model_text="def f(x):")
        self.assertEqual(state["text_tokens"], [9, 128])
        self.assertEqual(state["texts"]["text_count"], "9 of 128 characters (context)")
        x, y, w, h = state["rects"]["text_box"]
        seen = g.line_count(log)
        for _ in range(4):  # a busy frame can miss the click that gives the box the keys
            self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
            self.x.xdotool("click", 1)
            time.sleep(0.3)
            self.press(window, "ctrl+a")
            self.press(window, "BackSpace")
            self.x.xdotool("mousemove", "--window", window, 120, 6)
            try:
                state = g.wait_for_new_state(log, seen, lambda s: s["model_text"] == "" and not s["pending"], timeout=8)
                break
            except AssertionError:
                pass
        self.assertEqual(state["model_text"], "")
        self.assertEqual(state["text_tokens"], [0, 128])
        self.assertEqual(state["texts"]["text_count"], "0 of 128 characters (context)")


if __name__ == "__main__":
    unittest.main()
