"""Issue 21, the logit lens in the app: the predictions panel's "Logit lens" tab shows a
layers x positions table of the top-1 token (n_layers + 1 rows for a shipped model, whose
top-1 tokens are those of `attnscope model run --lens`); hovering a cell shows its top 5;
clicking a cell focuses its layer and pins its position as the query row (outlined in the
focus view's maps). Nothing of the table is cut off at the default 1440 x 900 window."""
import json
import os
import sys
import time
import unittest

import numpy as np

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402  (the CLI tests' random-folder writer)

TEXT = "def f(x):\n    return x + 1\n"
MODEL = os.path.join(os.path.dirname(__file__), "..", "..", "assets", "models", "python-code")


def plain(s):
    return len(s) == 1 and "!" <= s <= "~" and s != "\\"


def inside(inner, outer):
    x, y, w, h = inner
    X, Y, W, H = outer
    return x >= X - 0.5 and y >= Y - 0.5 and x + w <= X + W + 0.5 and y + h <= Y + H + 0.5


def pin_pixels(shot, rect, L, row):
    """Pixels of the pin colour (255, 204, 51) along the top edge of query row `row` of a
    map in rect (the map's own border excluded)."""
    _, _, pixels = shot
    x, y, w, h = rect
    top = int(y + row * h / L)
    return sum(1 for yy in range(top - 2, top + 3) for xx in range(int(x) + 4, int(x + w) - 4)
               if pixels[yy][xx][0] >= 245 and 190 <= pixels[yy][xx][1] <= 215 and 35 <= pixels[yy][xx][2] <= 70)


class LensGuiTest(g.AppTestCase):
    SCRATCH = "lens-gui-"

    def cli_lens(self, text=TEXT):
        """`attnscope model run --lens` on text: (lens_ids.npy, lens_probs.npy, the vocabulary)."""
        out = os.path.join(self.dir, "cli-lens-%d" % len(text))
        text_file = out + ".txt"
        with open(text_file, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        result = self.x.run("model", "run", MODEL, "--text-file", text_file, "--lens", "--out", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(MODEL, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        return np.load(os.path.join(out, "lens_ids.npy")), np.load(os.path.join(out, "lens_probs.npy")), vocab

    def cli_top1(self, text=TEXT):
        """Top-1 labels [layers][positions] of `attnscope model run --lens` on text, None where
        the vocabulary entry is not plain printable ASCII (its label is escaped)."""
        ids, _, vocab = self.cli_lens(text)
        return [[vocab[i] if plain(vocab[i]) else None for i in row] for row in ids[..., 0].tolist()]

    def check_tooltip_top5(self, hovered, text=TEXT):
        """The hovered cell's top 5 are lens_probs.npy's and lens_ids.npy's at its layer and position:
        probabilities within 1e-6, labels equal where the vocabulary entry is plain ASCII."""
        ids, probs, vocab = self.cli_lens(text)
        layer, position = hovered["layer"], hovered["position"]
        self.assertEqual(len(hovered["top"]), 5)
        np.testing.assert_allclose([t["prob"] for t in hovered["top"]], probs[layer, position, :5], rtol=0, atol=1e-6,
                                   err_msg=f"tooltip top 5 at layer {layer}, position {position} vs lens_probs.npy")
        for rank, (shown, want) in enumerate(zip(hovered["top"], ids[layer, position, :5].tolist())):
            if plain(vocab[want]):
                self.assertEqual(shown["label"], vocab[want], f"rank {rank + 1} at layer {layer}, position {position}")

    def test_lens_table(self):
        _, log, window, state = self.start("lens", ready=g.model_settled, source="model", model="python-code",
                                           model_text=TEXT)
        lens = state["lens"]
        self.assertEqual((lens["layers"], lens["positions"], lens["shown"]), (3, len(TEXT), False))
        for want, got in zip(sum(self.cli_top1(), []), sum(lens["top1"], [])):
            if want is not None:
                self.assertEqual(got, want)

        # A new tab bar lays its tabs out a frame after it first shows.
        state = g.wait_for_state(log, lambda s: s["rects"].get("lens_tab", [0, 0, 0, 0])[2] > 0)
        probs_rect = state["rects"]["focus_probs"]
        self.assertEqual(pin_pixels(self.capture(window, "lens-next-token-tab.png"), probs_rect, len(TEXT), 3), 0)
        state = self.click_until(window, log, state["rects"]["lens_tab"],
                                 lambda s: s["lens"]["shown"] and "lens_row_0" in s["rects"])
        rows = sorted(k for k in state["rects"] if k.startswith("lens_row_"))
        self.assertEqual(rows, ["lens_row_0", "lens_row_1", "lens_row_2"])  # n_layers + 1
        table = state["rects"]["lens_table"]
        width, height = state["window"]
        self.assertEqual((width, height), (1440, 900))
        self.assertTrue(inside(table, state["rects"]["predictions_panel"]), table)
        for name, rect in state["rects"].items():
            if name.startswith("lens_row_") or name.startswith("lens_cell_"):
                self.assertTrue(inside(rect, table), (name, rect, table))
        self.assertIn("lens_cell_2_0", state["rects"])  # the last row is drawn whole

        # Hover: the cell's top 5 in the tooltip (state log), best first, its top-1 as in the table.
        x, y, w, h = state["rects"]["lens_cell_1_2"]
        seen = g.line_count(log)
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        hovered = g.wait_for_new_state(log, seen, lambda s: s["lens"]["hovered"] is not None)["lens"]
        self.assertEqual((hovered["hovered"]["layer"], hovered["hovered"]["position"]), (1, 2))
        probs = [t["prob"] for t in hovered["hovered"]["top"]]
        self.assertEqual(len(probs), 5)
        self.assertEqual(probs, sorted(probs, reverse=True))
        self.assertLessEqual(sum(probs), 1.0 + 1e-6)
        self.assertEqual(hovered["hovered"]["top"][0]["label"], hovered["top1"][1][2])
        self.check_tooltip_top5(hovered["hovered"])
        self.screenshot(window, "lens-hover.png")

        # Click: layer 2's row focuses map layer 1 and pins query row 4.
        state = self.click_until(window, log, state["rects"]["lens_cell_2_4"],
                                 lambda s: s["lens"]["clicked"] == {"layer": 2, "position": 4})
        self.assertEqual((state["focused_layer"], state["predictions_pin"]), (1, 4))
        state = self.click_until(window, log, state["rects"]["lens_cell_0_3"],
                                 lambda s: s["lens"]["clicked"] == {"layer": 0, "position": 3})
        self.assertEqual((state["focused_layer"], state["predictions_pin"]), (0, 3))
        # The pinned query row is outlined in the focus view's maps.
        self.assertGreater(pin_pixels(self.capture(window, "lens-clicked.png"), probs_rect, len(TEXT), 3),
                           probs_rect[2] / 2)

        # The next-token tab shows the pinned position, its last line still inside the panel.
        state = self.click_until(window, log, state["rects"]["predictions_tab"],
                                 lambda s: not s["lens"]["shown"] and "predictions_unpin" in s["rects"])
        self.assertEqual(state["predictions"]["position"], 3)
        self.assertTrue(inside(state["rects"]["predictions_actual"], state["rects"]["predictions_panel"]))
        self.screenshot(window, "lens-pinned-next-token.png")

    def test_enlarged_lens_of_a_twelve_layer_model(self):
        """Issue 35: a 12-layer model's lens in the predictions panel shows a few columns of a few
        rows; "enlarge" draws it over the focus view at 1440 x 900: all 13 rows and at least 7
        whole columns of 104 px, the focus view back with one click; the tooltip prints each probability
        with three significant digits (0.391%, not 0.4%)."""
        folder = os.path.join(self.dir, "gpt2-12")
        cfg, tensors = hf.make_model("gpt2", seed=5, V=256, P=64, N=12, H=4, D=32)
        hf.write_folder(folder, cfg, tensors)
        hf.write_byte_level_bpe(folder)
        text = "def undo(self, steps):\n    return steps"
        _, log, window, state = self.start("lens-large", ready=g.model_settled, source="model", model=folder,
                                           model_text=text)
        state = g.wait_for_state(log, lambda s: s["rects"].get("lens_tab", [0, 0, 0, 0])[2] > 0)
        state = self.click_until(window, log, state["rects"]["lens_tab"],
                                 lambda s: s["lens"]["shown"] and "lens_enlarge" in s["rects"])
        self.assertEqual(state["lens"]["layers"], 13)
        rows = lambda s: {int(k.split("_")[2]) for k in s["rects"] if k.startswith("lens_cell_")}  # noqa: E731
        columns = lambda s: {int(k.split("_")[3]) for k in s["rects"] if k.startswith("lens_cell_")}  # noqa: E731
        self.assertLess(len(rows(state)), 13)  # in the panel: a few rows and columns only
        panel_columns = len(columns(state))
        state = self.click_until(window, log, state["rects"]["lens_enlarge"],
                                 lambda s: s["lens"]["enlarged"] and "lens_large" in s["rects"] and rows(s))
        self.assertEqual(state["window"], [1440, 900])
        large = state["rects"]["lens_large"]
        focus = state["panels"]["focus"]
        self.assertEqual([round(v) for v in large], [round(v) for v in focus])  # the focus view's space
        self.assertEqual(rows(state), set(range(13)))
        self.assertGreaterEqual(len(columns(state)), max(7, panel_columns + 2))  # 104-px cells: 12 characters whole
        for name, rect in state["rects"].items():
            if name.startswith("lens_cell_"):
                self.assertTrue(inside(rect, large), (name, rect, large))
                self.assertFalse(state["texts"][name].endswith(".."), (name, state["texts"][name]))
        # The tooltip: three significant digits, the state log's probabilities written as such.
        x, y, w, h = state["rects"]["lens_cell_12_3"]
        seen = g.line_count(log)
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        state = g.wait_for_new_state(log, seen, lambda s: s["lens"]["hovered"] is not None and
                                     "lens_tooltip_4" in s["texts"])
        top = state["lens"]["hovered"]["top"]
        for rank, guess in enumerate(top):
            percent = 100 * guess["prob"]
            digits = min(12, max(0, 2 - int(("%.2e" % percent).split("e")[1])))
            self.assertTrue(state["texts"]["lens_tooltip_%d" % rank].endswith(" %.*f%%" % (digits, percent)),
                            (state["texts"]["lens_tooltip_%d" % rank], guess["prob"]))
        self.assertLess(top[-1]["prob"], 0.01)  # a random model: small probabilities, printed as 0.xyz%
        self.screenshot(window, "lens-enlarged.png")
        # Back: the focus view's maps again, the table in the tab.
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        state = self.click_until(window, log, state["rects"]["lens_shrink"], lambda s: not s["lens"]["enlarged"])
        state = g.wait_for_state(log, lambda s: "lens_large" not in s["rects"] and "focus_probs" in s["rects"])
        self.assertLess(len(rows(state)), 13)

    def test_lens_column_by_column_past_its_budget(self):
        """A text past the lens budget (here forced to under one position's cost) has no lens
        until the tab opens; then the run keeps its residuals and the columns in view are
        computed one block at a time, equal to `model run --lens`'s; a cell still computing
        is drawn grey with "computing this column..." in its tooltip."""
        self.x.env["ATTNSCOPE_TEST_LENS_BUDGET"] = "1"
        self.addCleanup(self.x.env.pop, "ATTNSCOPE_TEST_LENS_BUDGET")
        _, log, window, state = self.start("lens-later", ready=g.model_settled, source="model", model="python-code",
                                           model_text=TEXT)
        lens = state["lens"]
        self.assertEqual((lens["layers"], lens["on_demand"], lens["shown"]), (0, False, False))
        self.assertIn("open the Logit lens tab", lens["off_reason"])
        generation = state["generation"]
        state = g.wait_for_state(log, lambda s: s["rects"].get("lens_tab", [0, 0, 0, 0])[2] > 0)
        state = self.click_until(window, log, state["rects"]["lens_tab"], lambda s: s["lens"]["shown"])
        visible = lambda s: sorted({int(k.split("_")[3]) for k in s["rects"] if k.startswith("lens_cell_")})  # noqa: E731
        state = g.wait_for_state(log, lambda s: s["lens"] and s["lens"]["on_demand"] and visible(s) and
                                 all(s["lens"]["top1"][0][t] is not None for t in visible(s)), timeout=30)
        lens = state["lens"]
        self.assertEqual((lens["layers"], lens["positions"], lens["off_reason"]), (3, len(TEXT), ""))
        self.assertGreater(state["generation"], generation)  # the tab asked for a run that keeps the residuals
        shown = visible(state)
        self.assertGreaterEqual(len(shown), 3)
        self.assertLess(lens["columns_known"], len(TEXT))  # only what was looked at
        self.assertGreaterEqual(lens["columns_known"], len(shown))
        self.assertIn("columns computed as they come into view", state["texts"]["lens_on_demand"])
        want = self.cli_top1()
        for layer in range(3):
            for t in range(len(TEXT)):
                got = lens["top1"][layer][t]
                if got is not None and want[layer][t] is not None:
                    self.assertEqual(got, want[layer][t], (layer, t))
        self.assertTrue(all(lens["top1"][layer][t] is not None for layer in range(3) for t in shown))
        x, y, w, h = state["rects"]["lens_cell_2_%d" % shown[1]]
        seen = g.line_count(log)
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        hovered = g.wait_for_new_state(log, seen, lambda s: s["lens"]["hovered"] is not None)["lens"]["hovered"]
        self.assertEqual((hovered["layer"], hovered["position"], len(hovered["top"])), (2, shown[1], 5))
        self.check_tooltip_top5(hovered)
        self.screenshot(window, "lens-later.png")

    def test_a_column_still_computing_is_grey_with_a_note(self):
        """Past the budget, a column still being computed (held for COLUMN_DELAY_MS by the core's
        test hook) is drawn grey (60, 60, 64) with dots, and its tooltip says "computing this
        column..." (drawn in the disabled text colour); once computed the cell has its colour."""
        delay_ms = 8000
        for name, value in (("ATTNSCOPE_TEST_LENS_BUDGET", "1"), ("ATTNSCOPE_TEST_LENS_COLUMN_DELAY_MS", str(delay_ms))):
            self.x.env[name] = value
            self.addCleanup(self.x.env.pop, name)
        _, log, window, state = self.start("lens-computing", ready=g.model_settled, source="model",
                                           model="python-code", model_text=TEXT)
        state = g.wait_for_state(log, lambda s: s["rects"].get("lens_tab", [0, 0, 0, 0])[2] > 0)
        state = self.click_until(window, log, state["rects"]["lens_tab"], lambda s: s["lens"]["shown"])
        cells = lambda s: sorted(k for k in s["rects"] if k.startswith("lens_cell_2_"))  # noqa: E731
        state = g.wait_for_state(log, lambda s: s["lens"] and s["lens"]["on_demand"] and cells(s), timeout=30)
        name = cells(state)[1]
        t = int(name.split("_")[3])
        self.assertIsNone(state["lens"]["top1"][2][t], "the column was computed before the delay ended")
        rect = state["rects"][name]
        grey = g.pixels_near(self.capture(window, "lens-computing.png"), rect, (60, 60, 64), tol=3)
        self.assertGreater(grey, 0.7 * rect[2] * rect[3], f"{name}, still computing, is not drawn grey")
        x, y, w, h = rect
        seen = g.line_count(log)
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        state = g.wait_for_new_state(log, seen, lambda s: s["lens"]["hovered"] is not None)
        self.assertEqual((state["lens"]["hovered"]["position"], state["lens"]["hovered"]["top"]), (t, None))
        time.sleep(0.3)  # the tooltip is placed a frame after it appears
        shot = self.capture(window, "lens-computing-tooltip.png")
        state = g.read_state_log(log)[-1]
        self.assertIsNone(state["lens"]["top1"][2][t], "the column was computed before the tooltip was seen")
        self.assertEqual(state["texts"].get("lens_tooltip_note"), "computing this column...")
        note = state["rects"]["lens_tooltip_note"]
        self.assertGreater(g.pixels_near(shot, note, (128, 128, 128), tol=20), 20,
                           "the tooltip's 'computing this column...' is not drawn")
        # The column arrives: the cell is drawn in its colour.
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        state = g.wait_for_state(log, lambda s: s["lens"] and len(s["lens"]["top1"]) == 3 and name in s["rects"]
                                 and s["lens"]["top1"][2][t] is not None, timeout=30 + delay_ms / 1000)
        time.sleep(0.3)
        grey = g.pixels_near(self.capture(window, "lens-computed.png"), state["rects"][name], (60, 60, 64), tol=3)
        self.assertLess(grey, 0.1 * rect[2] * rect[3], f"{name}, computed, is still drawn grey")

    def generate_with_the_lens_open(self, name):
        """Opens the Logit lens tab, generates (20 tokens, greedy) and returns the final state."""
        _, log, window, state = self.start(name, ready=g.model_settled, source="model", model="python-code",
                                           model_text=TEXT)
        state = g.wait_for_state(log, lambda s: s["rects"].get("lens_tab", [0, 0, 0, 0])[2] > 0)
        state = self.click_until(window, log, state["rects"]["lens_tab"], lambda s: s["lens"]["shown"])
        state = g.wait_for_state(log, lambda s: "generate_button" in s["rects"])
        n = g.line_count(log)
        # Clicked until its job starts (a busy frame can miss a click).
        self.click_until(window, log, state["rects"]["generate_button"],
                         lambda s: s.get("generate") and (s["generate"]["running"] or s["generate"]["steps"] > 0))
        state = g.wait_after(log, n, lambda s: s.get("generate") and not s["generate"]["running"]
                             and s["generate"]["stop"] != "" and s["lens"] and s["lens"]["positions"] == s["L"], timeout=60)
        self.screenshot(window, name + ".png")
        return state

    def test_lens_follows_a_generation(self):
        """With the tab open, a generation's views carry the lens of each step's new position
        (and of the prompt, whose whole lens fits the budget): at the end every column is
        known and its top-1 tokens are `model run --lens`'s on the final text."""
        state = self.generate_with_the_lens_open("lens-generate")
        L = state["L"]
        self.assertGreater(L, len(TEXT))
        lens = state["lens"]
        self.assertEqual((lens["layers"], lens["positions"], lens["columns_known"]), (3, L, L))
        final = TEXT + state["generate"]["text"]
        self.assertEqual(len(final), L)  # one token per character
        want = self.cli_top1(final)
        compared = 0
        for layer in range(3):
            for t in range(L):
                if want[layer][t] is not None:
                    self.assertEqual(lens["top1"][layer][t], want[layer][t], (layer, t))
                    compared += 1
        self.assertGreater(compared, L)

    def test_generation_past_the_lens_budget_has_its_steps_columns(self):
        """Past the budget (forced here), the prompt keeps only its last column: the columns of
        the generated positions are there, the prompt's others are not computed (null)."""
        self.x.env["ATTNSCOPE_TEST_LENS_BUDGET"] = "1"
        self.addCleanup(self.x.env.pop, "ATTNSCOPE_TEST_LENS_BUDGET")
        state = self.generate_with_the_lens_open("lens-generate-past-budget")
        L, P = state["L"], len(TEXT)
        top1 = state["lens"]["top1"]
        self.assertEqual(state["lens"]["columns_known"], L - P + 1)
        for layer in range(3):
            self.assertTrue(all(top1[layer][t] is None for t in range(P - 1)))
            self.assertTrue(all(top1[layer][t] is not None for t in range(P - 1, L)))


if __name__ == "__main__":
    unittest.main()
