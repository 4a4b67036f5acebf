"""Issue 19, readable labels in the app: an attention bundle whose tokens.json holds raw
pieces of Latin Extended, Greek, Cyrillic, Hebrew, Arabic, Devanagari and CJK text (and a
character spelled as byte-fallback pieces) shows every label's characters from the font atlas
(no glyph missing: ImGui's FindGlyphNoFallback, reported in the state log as
`label_glyphs_missing`), each batch item with its own tokens, and the tooltip gives the raw
piece and its id beside the readable label; so does a Hugging Face model run's tooltip
(GPT-2's "Ġ" for a space, id 32)."""
import json
import os
import sys
import time
import unittest

import numpy as np

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402  (the CLI tests' random-folder writer)

# (raw piece, id, readable label); "▁" is a space, drawn as "␣".
ITEMS = [
    [("\u2581\u011f\u00fc\u015f", 11, "\u2423\u011f\u00fc\u015f"),               # Latin Extended
     ("\u2581\u03ba\u03b1\u03bb\u03b7", 12, "\u2423\u03ba\u03b1\u03bb\u03b7"),   # Greek
     ("\u2581\u041f\u0440\u0438\u0432\u0435\u0442", 13, "\u2423\u041f\u0440\u0438\u0432\u0435\u0442"),  # Cyrillic
     ("\u2581\u05e9\u05dc\u05d5\u05dd", 14, "\u2423\u05e9\u05dc\u05d5\u05dd"),   # Hebrew
     ("\u2581\u0645\u0631\u062d\u0628\u0627", 15, "\u2423\u0645\u0631\u062d\u0628\u0627"),  # Arabic
     ("\u2581\u0928\u092e\u0938\u094d\u0924\u0947", 16, "\u2423\u0928\u092e\u0938\u094d\u0924\u0947"),  # Devanagari
     ("\u2581\u4f60\u597d", 17, "\u2423\u4f60\u597d")],                          # CJK
    [("\u2581\u1ea1\u01a1", 21, "\u2423\u1ea1\u01a1"),                          # Vietnamese (Latin Ext. Additional)
     ("<0xCE>", 22, "\u03b1"), ("<0xB1>", 23, "\u00b7"),                         # byte fallback: α whole on its first piece
     ("\u0444", 24, "\u0444"), ("\u05d0", 25, "\u05d0"), ("\u0628", 26, "\u0628"),
     ("\u0915", 27, "\u0915")],
]
L = 7


def write_bundle(folder, items):
    os.makedirs(folder)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, len(items), 2, L, L)) * 2
    p = np.exp(x - x.max(-1, keepdims=True))
    np.save(os.path.join(folder, "attentions.npy"), (p / p.sum(-1, keepdims=True)).astype(np.float32))
    doc = {"piece_style": "plain",
           "query": [[{"token": raw, "id": i} for raw, i, _ in item] for item in items]}
    with open(os.path.join(folder, "tokens.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


class ScriptLabelsTest(g.AppTestCase):
    SCRATCH = "script-labels-"

    def test_every_script_has_glyphs_and_the_tooltip_gives_piece_and_id(self):
        bundle = os.path.join(self.dir, "scripts")
        write_bundle(bundle, ITEMS)
        for b, item in enumerate(ITEMS):
            with self.subTest(item=b):
                app, log, window, state = self.start(f"item{b}", bundle, batch_item=b)
                self.assertEqual(state["error"], "")
                self.assertEqual(state["batch_item"], b)
                self.assertEqual(state["label_glyphs_missing"], [])
                self.assertEqual(state["font_glyphs"]["\ufffd"], True)
                width, height = state["font_atlas"]
                self.assertLessEqual(width * height, 4096 * 4096, "font atlas too large")
                # The tooltip of cell (i, j): readable labels, then the raw pieces with their ids.
                rect = state["rects"]["focus_probs"]
                for i, j in ((2, 4), (5, 1)):
                    seen = g.line_count(log)
                    self.move_to_cell(window, rect, [0, L, 0, L], i, j)
                    state = g.wait_for_new_state(log, seen, lambda s, i=i, j=j: s["hover"] == [i, j])
                    self.assertEqual(state["hover_tokens"], [item[i][2], item[j][2]])
                    self.assertEqual(state["hover_pieces"], [f'piece "{item[i][0]}"  id {item[i][1]}',
                                                             f'piece "{item[j][0]}"  id {item[j][1]}'])
                self.screenshot(window, f"labels-item{b}.png")
                self.stop(app)

    def test_model_run_tooltip_gives_piece_and_id(self):
        folder = os.path.join(self.dir, "tiny-llama")
        cfg, tensors = hf.make_model("llama", seed=41, V=256, P=64, G=2, N=1, H=4, D=16)
        hf.write_folder(folder, cfg, tensors)
        hf.write_byte_level_bpe(folder)  # no merges: token id = the byte, piece = its byte-level character
        _, log, window, state = self.start("llama", source="model", model=folder, model_text="a b\n",
                                           ready=lambda s: g.settled(s) and s.get("view_source") == "model run")
        self.assertEqual(state["query_tokens"], ["a", "\u2423", "b", "\u21b5"])
        rect = state["rects"]["focus_probs"]
        seen = g.line_count(log)
        self.move_to_cell(window, rect, [0, 4, 0, 4], 3, 1)
        state = g.wait_for_new_state(log, seen, lambda s: s["hover"] == [3, 1])
        self.assertEqual(state["hover_pieces"], ['piece "\u010a"  id 10', 'piece "\u0120"  id 32'])
        self.assertEqual(state["label_glyphs_missing"], [])
        time.sleep(0.5)  # the tooltip's frame is on screen
        self.screenshot(window, "model-run-tooltip.png")

    def test_a_character_without_glyph_is_reported(self):
        """The check is not vacuous: Thai (no font of the atlas has it) is listed, once."""
        bundle = os.path.join(self.dir, "thai")
        write_bundle(bundle, [[("\u0e01", 1, "\u0e01"), ("\u2581\u0e01\u0e02", 2, "\u2423\u0e01\u0e02")] + ITEMS[0][2:]])
        _, _, _, state = self.start("thai", bundle)
        self.assertEqual(state["label_glyphs_missing"], ["U+0E01", "U+0E02"])


if __name__ == "__main__":
    unittest.main()
