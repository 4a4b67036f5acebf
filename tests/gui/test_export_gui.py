"""Figure export from the running app (issue 4), driven with xdotool under Xvfb:
Ctrl+S writes the selected heatmap (PNG + settings JSON) into the export folder and shows a
toast; the PNG is byte-identical to `attnscope export --settings <that JSON>`; Ctrl+Shift+S
writes the head grid; Ctrl+Alt+S a window screenshot; clicking a map selects what Ctrl+S
exports; an unwritable folder gives a red error toast and no file."""
import json
import os
import subprocess
import time
import unittest

import guitest as g


def is_red(p):
    return p[0] > 120 and p[0] > 2 * p[1] and p[0] > 2 * p[2]


def is_toast_green(p):
    # Toast background (0.12, 0.20, 0.16) blended at 0.97 over the panels, or its green border.
    return p[1] > p[0] + 10 and p[1] > p[2] + 3


# What a model run's export settings hold (tests/cli/test_model_export.py checks the same).
RUN_SETTINGS_KEYS = ("source", "model", "model_text", "model_truncate", "model_ablate", "model_knockout", "focused_layer",
                     "focused_head", "batch_item", "prob_colormap", "log_scale", "folded_layout", "export_dir", "cell_px",
                     "export_formats", "run")


class ExportGuiTest(g.AppTestCase):
    SCRATCH = "export-gui-"

    def wait_export(self, log, count):
        g.wait_for_state(log, lambda s: s["export_count"] >= count and s["toast"] is not None, timeout=60)
        time.sleep(0.4)  # the toast window fits its text a frame later; take the settled line
        state = g.read_state_log(log)[-1]
        self.assertIsNotNone(state["toast"])
        return state

    def cli_export(self, settings_json, *extra):
        out = g.scratch_dir("cli-export-")
        result = subprocess.run([g.BIN, "export", "--settings", settings_json, "--out", out, *extra],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout.split()

    def test_ctrl_s_writes_probs_png_json_equal_to_cli_and_shows_toast(self):
        folder = os.path.join(self.dir, "exports-ctrl-s", "nested")  # created when missing
        _, log, window, state = self.start("ctrl_s", heads=4, head_dim=8, mask="causal", export_dir=folder)
        self.assertEqual(state["selected_view"], "probs")
        self.assertEqual(state["export_dir"], folder)
        self.press(window, "ctrl+s")
        state = self.wait_export(log, 1)
        L, S = state["L"], state["S"]
        base = os.path.join(folder, "probs_L0_H0_b0_causal_L%dxS%d" % (L, S))
        self.assertEqual(state["last_export"], {"kind": "probs", "paths": [base + ".png", base + ".json"], "error": ""})
        self.assertFalse(state["toast"]["error"])
        self.assertIn(folder, state["toast"]["text"])
        self.assertIn("probs_L0_H0_b0_causal_L%dxS%d.png" % (L, S), state["toast"]["text"])
        self.assertEqual(sorted(os.listdir(folder)), sorted(os.path.basename(p) for p in state["last_export"]["paths"]))

        # The toast is on screen, bottom right, in its green style.
        _, _, rows = self.capture(window, "ctrl_s_toast.png")
        rect = state["rects"]["toast"]
        wx, wy = state["window"]
        self.assertGreater(rect[0] + rect[2] / 2, wx / 2)
        self.assertGreater(rect[1] + rect[3] / 2, wy / 2)
        pixels = g.inner_pixels(rows, rect)
        green = sum(map(is_toast_green, pixels))
        self.assertGreater(green, 0.5 * len(pixels), "toast background not found where the state log puts it")
        text = sum(1 for p in pixels if min(p) > 150)
        self.assertGreater(text, 50, "no text in the toast")

        # Same bytes as the headless exporter given the JSON written beside the PNG.
        paths = self.cli_export(base + ".json")
        self.assertEqual(os.path.basename(paths[0]), os.path.basename(base) + ".png")
        with open(base + ".png", "rb") as a, open(paths[0], "rb") as b:
            self.assertEqual(a.read(), b.read())
        w, h, png = g.read_png(base + ".png")
        self.assertGreaterEqual(max(w, h), 512)

        # The toast goes away after a few seconds.
        g.wait_for_state(log, lambda s: s["toast"] is None, timeout=20)

    def test_model_run_export_describes_the_run(self):
        """Issue 35: Ctrl+S under a trained model writes settings that describe that run (the
        model, the text as typed, the focused layer and head, "run": the model's own heads and
        mask), none of the sandbox's numbers (heads 3, mask none, seed 5 set here), and a
        figure titled with the model; the screenshot's JSON alike. The CLI redraws the same PNG."""
        folder = os.path.join(self.dir, "exports-model")
        text = "def f(x): return f(x)"
        _, log, window, state = self.start("model_export", ready=g.model_settled, source="model", model="python-code",
                                           model_text=text, heads=3, mask="none", seed=5, text="sandbox text",
                                           focused_layer=1, focused_head=3, export_dir=folder,
                                           export_formats=["png", "svg"])
        self.assertEqual((state["focused_layer"], state["focused_head"]), (1, 3))
        self.press(window, "ctrl+s")
        state = self.wait_export(log, 1)
        self.assertEqual(state["last_export"]["error"], "")
        base = os.path.join(folder, "probs_L1_H3_b0_causal_L%dxS%d" % (len(text), len(text)))
        self.assertEqual(state["last_export"]["paths"], [base + ".png", base + ".svg", base + ".json"])
        with open(base + ".json", encoding="utf-8") as f:
            settings = json.load(f)
        self.assertEqual(sorted(settings), sorted(RUN_SETTINGS_KEYS))
        self.assertEqual((settings["source"], settings["model"], settings["model_text"]), ("model", "python-code", text))
        self.assertEqual((settings["focused_layer"], settings["focused_head"]), (1, 3))
        self.assertEqual(settings["run"], {"model": "python-code", "layers": 2, "heads": 4, "tokens": len(text),
                                           "mask": "causal"})
        with open(base + ".svg", encoding="utf-8") as f:
            self.assertIn("<title>Attention probabilities, layer 1, head 3 \u00b7 python-code</title>", f.read())
        paths = self.cli_export(base + ".json", "--layers", "1", "--heads", "3", "--format", "png")
        with open(base + ".png", "rb") as a, open(paths[0], "rb") as b:
            self.assertEqual(a.read(), b.read())  # the same title and pixels, redrawn from the JSON

        self.press(window, "ctrl+alt+s")
        state = self.wait_export(log, 2)
        _, screenshot_json = state["last_export"]["paths"]
        with open(screenshot_json, encoding="utf-8") as f:
            settings = json.load(f)
        self.assertEqual(sorted(settings), sorted(RUN_SETTINGS_KEYS))
        self.assertEqual(settings["model_text"], text)

    def test_selected_view_grid_and_screenshot(self):
        folder = os.path.join(self.dir, "exports-views")
        _, log, window, state = self.start("views", heads=3, head_dim=8, mask="causal", focused_head=2,
                                           export_dir=folder)
        L, S = state["L"], state["S"]
        suffix = "b0_causal_L%dxS%d" % (L, S)

        # Clicking the score map selects it: Ctrl+S now exports the scores of head 2.
        x, y, w, h = state["rects"]["focus_scores"]
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        self.x.xdotool("click", 1)
        g.wait_for_state(log, lambda s: s["selected_view"] == "scores")
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        self.press(window, "ctrl+s")
        state = self.wait_export(log, 1)
        scores = os.path.join(folder, "scores_L0_H2_" + suffix)
        self.assertEqual(state["last_export"]["paths"], [scores + ".png", scores + ".json"])
        with open(scores + ".png", "rb") as a, open(self.cli_export(scores + ".json", "--what", "scores")[0], "rb") as b:
            self.assertEqual(a.read(), b.read())

        # The small Export button on the probability map exports it (and selects it).
        x, y, w, h = state["rects"]["export_probs_button"]
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        self.x.xdotool("click", 1)
        state = self.wait_export(log, 2)
        self.assertEqual(state["selected_view"], "probs")
        probs = os.path.join(folder, "probs_L0_H2_" + suffix)
        self.assertEqual(state["last_export"]["paths"], [probs + ".png", probs + ".json"])
        self.x.xdotool("mousemove", "--window", window, 120, 6)

        # Pressed again: a numeric suffix, never overwriting the first export.
        self.press(window, "ctrl+s")
        state = self.wait_export(log, 3)
        self.assertEqual(state["last_export"]["paths"], [probs + "_1.png", probs + "_1.json"])

        # Ctrl+Shift+S: every head in one grid figure, same as `attnscope export --what grid`.
        self.press(window, "ctrl+shift+s")
        state = self.wait_export(log, 4)
        grid = os.path.join(folder, "grid_" + suffix)
        self.assertEqual(state["last_export"], {"kind": "grid", "paths": [grid + ".png", grid + ".json"], "error": ""})
        with open(grid + ".png", "rb") as a, open(self.cli_export(grid + ".json", "--what", "grid")[0], "rb") as b:
            self.assertEqual(a.read(), b.read())
        gw, gh, _ = g.read_png(grid + ".png")
        pw, ph, _ = g.read_png(probs + ".png")
        self.assertGreater(gw * gh, pw * ph)  # three tiles of >= 256 px and a shared colour bar

        # Ctrl+Alt+S: the window as it is on screen, at the window's size, with its settings JSON.
        self.press(window, "ctrl+alt+s")
        state = self.wait_export(log, 5)
        self.assertEqual(state["last_export"]["kind"], "screenshot")
        self.assertEqual(state["last_export"]["error"], "")
        png, js = state["last_export"]["paths"]
        self.assertTrue(os.path.basename(png).startswith("screenshot_") and png.endswith(".png"), png)
        self.assertEqual(js, png[:-4] + ".json")
        width, height, rows = g.read_png(png)
        self.assertEqual([width, height], state["window"])
        # It shows the heatmaps: the focus probability map is not background.
        x, y, w, h = state["rects"]["focus_probs"]
        px, py = g.cell_pixel(state["rects"]["focus_probs"], L, S, L - 1, 0)
        self.assertNotEqual(rows[py][px], g.BACKGROUND)
        # A masked cell (above the diagonal) has the masked style in the screenshot too.
        px, py = g.cell_pixel(state["rects"]["focus_probs"], L, S, 0, S - 1)
        self.assertIn(rows[py][px], g.MASKED)

    def test_unwritable_folder_shows_red_error_and_writes_nothing(self):
        blocker = os.path.join(self.dir, "a_regular_file")
        with open(blocker, "w") as f:
            f.write("not a folder\n")
        folder = os.path.join(blocker, "exports")  # under a regular file: not creatable, even as root
        before = sorted(os.listdir(self.dir))
        _, log, window, _ = self.start("unwritable", heads=2, head_dim=8, export_dir=folder)
        self.press(window, "ctrl+s")
        state = self.wait_export(log, 1)
        self.assertEqual(state["last_export"]["paths"], [])
        self.assertIn("not writable", state["last_export"]["error"])
        self.assertIn(folder, state["last_export"]["error"])
        self.assertTrue(state["toast"]["error"])
        self.assertIn("Export failed", state["toast"]["text"])
        _, _, rows = self.capture(window, "unwritable_toast.png")
        pixels = g.inner_pixels(rows, state["rects"]["toast"])
        self.assertGreater(sum(map(is_red, pixels)), 0.5 * len(pixels), "no red error toast")
        self.assertFalse(os.path.exists(folder))
        with open(blocker) as f:
            self.assertEqual(f.read(), "not a folder\n")

        # The screenshot fails the same way, and nothing new appears anywhere in the test folder.
        self.press(window, "ctrl+alt+s")
        state = self.wait_export(log, 2)
        self.assertEqual(state["last_export"]["kind"], "screenshot")
        self.assertIn("not writable", state["last_export"]["error"])
        after = [n for n in sorted(os.listdir(self.dir)) if n not in before]
        self.assertTrue(all(n.startswith("unwritable") for n in after), after)


if __name__ == "__main__":
    unittest.main()
