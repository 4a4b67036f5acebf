"""Generation in the app (issue 21): the Generate control on a shipped model writes 10
tokens one at a time (the state log's L grows row by row, 10 rows in all, the grid and the
focus view with it); the predictions panel marks the chosen token at the newest step (and
its rank when sampling picked another); Ctrl+S writes the generation as an attention bundle
that `attnscope export` reads back equal to `attnscope model generate` of the same prompt;
Stop, and editing the text box, halt a long generation on a random Hugging Face folder; the
cache window (sinks + W) evicts in the stepper's counts and the generation shares the maps'
weights."""
import glob
import json
import os
import subprocess
import sys
import time
import unittest

import numpy as np

import guitest as g

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
import hf_reference as hf  # noqa: E402  (the CLI tests' random-folder writer)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROMPT = "def area(w, h):\n    return "
wait_after = g.wait_after
line_count = g.line_count


BAR = (76, 139, 230)     # predictions_panel.cpp kBarColor: a guess's bar
CHOSEN = (70, 200, 100)  # kActualColor: the bar of the token the generation chose
HIT = (115, 230, 128)    # kHit (0.45, 0.9, 0.5): "chosen ...: the top guess"
MISS = (255, 158, 46)    # kMiss (1.0, 0.62, 0.18): "chosen ...: sampled at rank N"


def pixels_near(shot, rect, colour, tol=12):
    """Pixels within tol (each channel) of colour inside rect [x, y, w, h] of a capture."""
    _, _, rows = shot
    x, y, w, h = (int(round(v)) for v in rect)
    return sum(1 for yy in range(max(0, y), min(len(rows), y + h)) for xx in range(max(0, x), min(len(rows[0]), x + w))
               if all(abs(a - b) <= tol for a, b in zip(rows[yy][xx], colour)))


def generated(state):
    gen = state.get("generate")
    return gen is not None and not gen["running"] and gen["stop"] != ""


class GenerateGuiTest(g.AppTestCase):
    SCRATCH = "generate-gui-"

    def check_chosen_mark(self, shot, state, rank, text_colour):
        """As drawn: the bar of the chosen token (rank, 1 = the top) in the chosen colour and no
        other bar in it, the others in the plain bar colour, the 'chosen' line in text_colour."""
        rects = state["rects"]
        for r in range(5):
            bar = rects["prediction_row_%d" % r]
            chosen, plain = pixels_near(shot, bar, CHOSEN), pixels_near(shot, bar, BAR)
            if r == rank - 1:
                self.assertGreater(chosen, 10, f"the chosen token's bar (rank {rank}) is not drawn in {CHOSEN}")
                self.assertEqual(plain, 0, f"the chosen token's bar (rank {rank}) is drawn in the plain {BAR}")
            else:
                self.assertEqual(chosen, 0, f"rank {r + 1}'s bar is drawn in the chosen colour, the chosen rank is {rank}")
                self.assertGreater(plain, 0, f"rank {r + 1}'s bar is not drawn in {BAR}")
        other = MISS if text_colour == HIT else HIT
        line = rects["predictions_actual"]
        self.assertGreater(pixels_near(shot, line, text_colour, tol=40), 10,
                           f"the 'chosen' line is not drawn in {text_colour}")
        self.assertEqual(pixels_near(shot, line, other, tol=20), 0, f"the 'chosen' line is drawn in {other}")

    def set_tokens(self, window, log, state, count, field="tokens", key="max_tokens"):
        """Types count into the Generate section's token count (or another number field)."""
        time.sleep(0.3)  # the section's layout settles a frame after a change above it
        n = line_count(log)
        self.click(window, g.read_state_log(log)[-1]["rects"]["generate_" + field], dx=20)
        time.sleep(0.2)
        self.press(window, "ctrl+a")
        self.x.xdotool("type", "--delay", "60", str(count))
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        return wait_after(log, n, lambda s: s["generate"][key] == count)

    def cache_at_the_last_step(self, window, log, L):
        """Opens the stepper (F5) and goes to its last step: the model cache there (state log)."""
        self.press(window, "F5")
        g.wait_for_state(log, lambda s: s.get("stepper") and "model_cache" in s["stepper"])
        self.press(window, "End")
        state = g.wait_for_state(log, lambda s: s.get("stepper") and s["stepper"].get("model_cache") and
                                 s["stepper"]["step"] == L - 1)
        return state["stepper"]["model_cache"]

    def generate(self, window, log, state, until):
        n = line_count(log)
        job = state["generate"]["job"]  # a busy frame can miss the click: clicked until a job starts
        self.click_until(window, log, state["rects"]["generate_button"], lambda s: s["generate"]["job"] != job)
        return wait_after(log, n, until, timeout=60)

    def test_generate_ten_tokens_predictions_and_bundle(self):
        export_dir = os.path.join(self.dir, "exports")
        app, log, window, state = self.start("greedy", ready=g.model_settled, source="model", model="python-code",
                                             model_text=PROMPT, export_dir=export_dir)
        L0 = state["L"]
        self.assertEqual(L0, len(PROMPT))
        state = self.set_tokens(window, log, state, 10)
        n = line_count(log)
        state = self.generate(window, log, state, generated)
        self.assertEqual((state["generate"]["stop"], state["generate"]["steps"]), ("tokens", 10))
        self.assertEqual(state["texts"]["generate_status"], "10 tokens, done")
        self.assertEqual(state["L"], L0 + 10)  # the grid and the focus view: 10 more rows
        self.assertEqual(state["generate"]["rows"], L0 + 10)
        rows = [s["L"] for s in g.read_state_log(log)[n:] if "L" in s]
        self.assertEqual(rows, sorted(rows))  # rows are only added (token by token: the long test below)
        # Each step computed one row per layer (the decode cache), never the prompt's rows again.
        stepped = [s["rows_computed"] for s in g.read_state_log(log)[n:] if s.get("L", 0) > L0 and "rows_computed" in s]
        self.assertTrue(stepped)
        self.assertEqual(set(stepped), {1})
        self.assertEqual(len(state["query_tokens"]), L0 + 10)
        labels = state["query_tokens"]
        # The predictions panel: the newest step's top-5, the chosen (greedy: the top) token marked.
        p = state["predictions"]
        last = state["generate"]["last"]
        self.assertEqual((p["position"], p["why"], p["chosen"]), (L0 + 8, "newest step", True))
        self.assertEqual((p["actual"], p["actual_rank"], p["actual_is_top"]), (last["token"], 1, True))
        self.assertEqual(p["top"][0]["label"], last["token"])
        # The Logit lens tab was closed at Generate: it says to open it first.
        self.assertEqual(state["lens"]["layers"], 0)
        self.assertIn("open the Logit lens tab before Generate", state["lens"]["off_reason"])
        # Over the generation: the focused head's mass per step, its means in the head table.
        mass = state["generate"]["mass"]
        self.assertEqual((mass["layer"], mass["head"], mass["window"]), (state["focused_layer"], state["focused_head"], 8))
        self.assertEqual((len(mass["sink"]), len(mass["recent"])), (10, 10))
        self.assertTrue(all(0 <= v <= 1 + 1e-6 for v in mass["sink"] + mass["recent"]))
        focused = state["head_table"]["order"].index([mass["layer"], mass["head"]])
        row = state["head_table"]["values"][focused]
        self.assertAlmostEqual(row["gen_sink_mass"], sum(mass["sink"]) / 10, delta=1e-6)
        self.assertAlmostEqual(row["gen_recent_mass"], sum(mass["recent"]) / 10, delta=1e-6)
        self.assertIn("generate_plot_sink", state["rects"])
        self.assertIn("generate_plot_recent", state["rects"])
        self.check_chosen_mark(self.capture(window, "generated.png"), state, 1, HIT)

        # Ctrl+S on the generation: a bundle that `attnscope export` reads back equal.
        n = line_count(log)
        self.press(window, "ctrl+s")
        state = wait_after(log, n, lambda s: s["generate"]["bundle"] and not s["generate"]["bundle_writing"])
        self.assertEqual(state["generate"]["bundle_error"], "")
        bundle = state["generate"]["bundle"]
        self.assertEqual(os.path.dirname(bundle), export_dir)
        with open(os.path.join(bundle, "tokens.txt")) as f:
            lines = f.read().splitlines()
        self.assertEqual([line.endswith("\tgenerated") for line in lines], [False] * L0 + [True] * 10)
        reference = os.path.join(self.dir, "reference")
        subprocess.run([g.BIN, "model", "generate", os.path.join(REPO, "assets", "models", "python-code"), "--text",
                        PROMPT, "--tokens", "10", "--greedy", "--out", reference],
                       capture_output=True, text=True, timeout=60, check=True)
        expected = np.load(os.path.join(reference, "attentions.npy"))
        figures = os.path.join(self.dir, "figures")
        subprocess.run([g.BIN, "export", bundle, "--format", "npy", "--what", "probs",
                        "--layers", "all", "--heads", "all", "--out", figures],
                       capture_output=True, text=True, timeout=60, check=True)
        files = sorted(glob.glob(os.path.join(figures, "probs_L*_H*_b0_*.npy")))
        self.assertEqual(len(files), expected.shape[0] * expected.shape[2])
        for layer in range(expected.shape[0]):
            for head in range(expected.shape[2]):
                (path,) = glob.glob(os.path.join(figures, "probs_L%d_H%d_b0_*.npy" % (layer, head)))
                np.testing.assert_allclose(np.load(path), expected[layer, 0, head], atol=1e-6)
        with open(os.path.join(reference, "tokens.txt")) as f:
            self.assertEqual(f.read().splitlines(), lines)

        # A second Ctrl+S never overwrites the first bundle.
        n = line_count(log)
        self.press(window, "ctrl+s")
        state = wait_after(log, n, lambda s: s["generate"]["bundle"] != bundle and not s["generate"]["bundle_writing"])
        self.assertEqual(state["generate"]["bundle_error"], "")
        self.assertTrue(os.path.isfile(os.path.join(bundle, "attentions.npy")))

        # The bundle reopens in the app: the same maps' size and token labels.
        self.stop(app)  # one window on the screen: the reopened one
        other, _, other_window, reopened = self.start("reopen", bundle,
                                                      ready=lambda s: g.settled(s) and s.get("L") == L0 + 10)
        self.assertEqual((reopened["view_source"], reopened["error"], reopened["layers"]), ("imported", "", 2))
        self.assertEqual([line.split("\t")[2] for line in lines], labels)  # the labels it reads
        # Issue 35: opened as what it is (not under the sandbox): the bundle named in Models, its
        # model and generated tokens in the facts, the newest step's predictions from steps.json.
        self.assertEqual(reopened["texts"]["models_combo"], "bundle: " + os.path.basename(bundle))
        self.assertIn("model: python-code", reopened["texts"]["source_facts"])
        self.assertEqual(reopened["texts"]["source_generated"],
                         "generated: positions %d..%d (after the prompt's %d tokens)" % (L0, L0 + 9, L0))
        with open(os.path.join(bundle, "steps.json")) as f:
            steps = json.load(f)
        p = reopened["predictions"]
        self.assertEqual((p["position"], p["why"], p["chosen"], p["pending"]), (L0 + 8, "newest step", True, False))
        self.assertEqual([(t["label"], t["prob"]) for t in p["top"]], [(t[1], t[2]) for t in steps[-1]["top"]])
        self.assertEqual((p["actual"], p["actual_rank"]), (steps[-1]["token"], steps[-1]["rank"]))
        self.check_chosen_mark(self.capture(other_window, "reopened_bundle.png"), reopened, 1, HIT)

    def test_cache_window_evicts_and_shares_the_weights(self):
        """Generate with the cache window (W = 8, sinks 2) on: the same tokens as `attnscope model
        generate --window 8 --sinks 2`, on the maps' own weights (shared, not loaded again), and
        the stepper counts only the kept keys: sinks + window + the new token per layer."""
        app, log, window, state = self.start("cache", ready=g.model_settled, source="model", model="python-code",
                                             model_text=PROMPT)
        L0 = state["L"]
        state = self.set_tokens(window, log, state, 10)
        state = self.click_until(window, log, state["rects"]["generate_cache_on"], lambda s: s["generate"]["cache_on"])
        state = self.set_tokens(window, log, state, 8, field="cache_window", key="cache_window")
        state = self.set_tokens(window, log, state, 2, field="cache_sinks", key="cache_sinks")
        state = self.generate(window, log, state, generated)
        gen = state["generate"]
        self.assertEqual((gen["stop"], gen["steps"], gen["weights_shared"], state["L"]), ("tokens", 10, True, L0 + 10))
        reference = os.path.join(self.dir, "windowed")
        subprocess.run([g.BIN, "model", "generate", os.path.join(REPO, "assets", "models", "python-code"), "--text",
                        PROMPT, "--tokens", "10", "--window", "8", "--sinks", "2", "--out", reference],
                       capture_output=True, text=True, timeout=60, check=True)
        with open(os.path.join(reference, "generated.txt")) as f:
            self.assertEqual(gen["text"], f.read())
        p = state["predictions"]
        self.assertTrue(p["chosen"])
        self.check_chosen_mark(self.capture(window, "cache_window.png"), state, p["actual_rank"],
                               HIT if p["actual_is_top"] else MISS)
        L = state["L"]
        cache = self.cache_at_the_last_step(window, log, L)
        self.assertEqual([(l["entries"], l["evicted"], l["kv_heads"], l["head_dim"], l["bytes"]) for l in cache["layers"]],
                         [(2 + 8 + 1, L - 11, 4, 24, 2 * 11 * 4 * 24 * 4)] * 2)
        self.assertEqual((cache["entries"], cache["evicted"]), (22, 2 * (L - 11)))
        self.screenshot(window, "cache_window_stepper.png")

    def test_sampling_marks_the_rank(self):
        app, log, window, state = self.start("sampling", ready=g.model_settled, source="model", model="python-code",
                                             model_text=PROMPT)
        state = self.set_tokens(window, log, state, 12)
        state = self.click_until(window, log, state["rects"]["generate_greedy"], lambda s: not s["generate"]["greedy"])
        state = self.set_tokens(window, log, state, 5, field="seed", key="seed")  # its 12th token is not the top one
        state = self.generate(window, log, state, generated)
        p, last = state["predictions"], state["generate"]["last"]
        self.assertTrue(p["chosen"])
        self.assertEqual((p["actual"], p["actual_rank"], p["actual_is_top"]), (last["token"], last["rank"], False))
        self.assertGreater(last["rank"], 1)
        # The same draw as `attnscope model generate --temperature 1 --seed 5`.
        reference = os.path.join(self.dir, "sampled")
        subprocess.run([g.BIN, "model", "generate", os.path.join(REPO, "assets", "models", "python-code"), "--text",
                        PROMPT, "--tokens", "12", "--temperature", "1", "--seed", "5", "--out", reference],
                       capture_output=True, text=True, timeout=60, check=True)
        with open(os.path.join(reference, "generated.txt")) as f:
            self.assertEqual(state["generate"]["text"], f.read())
        with open(os.path.join(reference, "steps.json")) as f:
            self.assertEqual(json.load(f)[-1]["rank"], last["rank"])
        self.assertLessEqual(last["rank"], 5)  # so its bar is among the top 5 drawn
        self.check_chosen_mark(self.capture(window, "sampled.png"), state, last["rank"], MISS)

    def test_follow_keeps_the_newest_row_in_a_zoomed_focus_view(self):
        app, log, window, state = self.start("follow", ready=g.model_settled, source="model", model="python-code",
                                             model_text=PROMPT)
        L0 = state["L"]
        rect = state["rects"]["focus_probs"]
        self.move_to_cell(window, rect, (0, L0, 0, L0), 5, 3)  # zoom in around an early cell
        g.wait_for_state(log, lambda s: s["hover"] == [5, 3])
        for _ in range(3):
            self.x.xdotool("click", 4)
            time.sleep(0.15)
        state = g.wait_for_state(log, lambda s: s["zoomed"])
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        row0, rows, col0, cols = state["zoom_window"]
        self.assertLess(row0 + rows, L0)  # the last row is out of the window
        state = self.set_tokens(window, log, state, 10)
        state = self.generate(window, log, state, generated)
        self.assertEqual(state["L"], L0 + 10)
        row0, rows_after, col0, cols_after = state["zoom_window"]
        self.assertEqual((row0 + rows_after, col0 + cols_after), (L0 + 10, L0 + 10))  # the newest row and key in view
        self.assertEqual((rows_after, cols_after), (rows, cols))  # same zoom, scrolled

    def test_stop_and_editing_halt_a_long_generation(self):
        folder = os.path.join(self.dir, "tiny-llama")
        cfg, tensors = hf.make_model("llama", seed=41, V=256, P=1024, G=2, N=2, H=4, D=32)
        hf.write_folder(folder, cfg, tensors)
        hf.write_byte_level_bpe(folder)
        app, log, window, state = self.start("stop", ready=g.model_settled, source="model", model=folder,
                                             model_text="def f(a, b): return a + b")
        L0 = state["L"]
        state = self.set_tokens(window, log, state, 900)
        state = self.generate(window, log, state, lambda s: s["generate"]["steps"] >= 2)
        n = line_count(log)
        self.click_until(window, log, state["rects"]["generate_stop"], lambda s: s["generate"]["stopped_by"] != "")
        state = wait_after(log, n, generated)
        gen = state["generate"]
        # Token by token: every line while it ran had one grid row per token so far.
        running = [s for s in g.read_state_log(log) if s.get("generate", {}).get("running") and s["generate"]["steps"]]
        self.assertTrue(all(s["L"] == L0 + s["generate"]["steps"] == s["generate"]["rows"] for s in running))
        self.assertGreater(len({s["L"] for s in running}), 1, "the rows appeared at once, not token by token")
        self.assertEqual((gen["stop"], gen["stopped_by"]), ("stopped", "stop button"))
        self.assertEqual(state["texts"]["generate_status"], "%d tokens, stopped" % gen["steps"])
        self.assertLess(gen["steps"], 900)
        self.assertEqual(state["L"], L0 + gen["steps"])
        # The stepper on the generation: the runner's cache of a GQA model (2 K/V heads of 8).
        L = state["L"]
        cache = self.cache_at_the_last_step(window, log, L)
        self.assertEqual([(l["entries"], l["kv_heads"], l["head_dim"], l["bytes"]) for l in cache["layers"]],
                         [(L, 2, 8, 2 * L * 2 * 8 * 4)] * 2)
        self.press(window, "F5")

        # Editing the text box stops it too; the text box keeps the typed character.
        state = self.generate(window, log, state, lambda s: s["generate"]["running"] and s["generate"]["steps"] >= 2)
        n = line_count(log)
        self.type_at_text_end(window, state, "!")
        state = wait_after(log, n, lambda s: generated(s) and g.model_settled(s) and s["L"] == L0 + 1, timeout=60)
        self.assertEqual(state["generate"]["stopped_by"], "text edited")
        self.assertEqual(state["texts"]["generate_status"],
                         "%d tokens, stopped: the text was edited" % state["generate"]["steps"])
        self.assertLess(state["generate"]["steps"], 900)
        self.assertTrue(state["model_text"].endswith("!"))

    def test_context_end_lens_pin_and_plot_ranges(self):
        """Issue 35: a pin made by a lens click before Generate (Follow on) is dropped, so the
        predictions show the newest step; a generation that reaches the context says so; the
        plots use their series' own range (printed beside them) and print the values."""
        prompt = PROMPT * 4  # 108 of the context's 128 characters: a short generation reaches it
        app, log, window, state = self.start("context", ready=g.model_settled, source="model", model="python-code",
                                             model_text=prompt)
        L0 = state["L"]
        state = g.wait_for_state(log, lambda s: s["rects"].get("lens_tab", [0, 0, 0, 0])[2] > 0)
        state = self.click_until(window, log, state["rects"]["lens_tab"],
                                 lambda s: s["lens"]["shown"] and "lens_cell_1_1" in s["rects"])
        state = self.click_until(window, log, state["rects"]["lens_cell_1_1"], lambda s: s["predictions_pin"] == 1)
        self.assertEqual(state["predictions"]["why"], "clicked")
        state = self.set_tokens(window, log, state, 200)  # more than the context (128) leaves
        state = self.generate(window, log, state, generated)
        gen = state["generate"]
        self.assertEqual((gen["stop"], state["L"]), ("context", 128))
        self.assertEqual(state["texts"]["generate_status"], "%d tokens, stopped: the context is full" % (128 - L0))
        self.assertIsNone(state["predictions_pin"])
        self.assertEqual((state["predictions"]["position"], state["predictions"]["why"]), (126, "newest step"))
        # The plots: each series' own range, at least 0.01 wide, within [0, 1], the values printed.
        mass = gen["mass"]
        for key, name in (("sink", "generate_plot_sink"), ("recent", "generate_plot_recent")):
            values = np.array(mass[key], dtype=np.float64)
            lo, hi = mass[key + "_range"]
            self.assertLessEqual(lo, values.min() + 1e-6)
            self.assertGreaterEqual(hi, values.max() - 1e-6)
            self.assertAlmostEqual(hi - lo, max(values.max() - values.min(), 0.01), delta=1e-5)
            self.assertTrue(0 <= lo < hi <= 1)
            text = state["texts"][name + "_values"]
            self.assertIn("now %s" % sig3(values[-1]), text)
            self.assertIn("mean %s" % sig3(values.mean()), text)
            self.assertEqual(state["texts"][name + "_axis"], "%s..%s" % (sig3(lo), sig3(hi)))
        # As drawn: each line spans as much of its plot's height as its values span of the plot's
        # range (their own: at least 0.01), not a band at the foot of 0..1.
        shot = self.capture(window, "context_plots.png")
        _, _, rows = shot
        for key, name in (("sink", "generate_plot_sink"), ("recent", "generate_plot_recent")):
            x, y, w, h = (int(round(v)) for v in state["rects"][name])
            line = [yy for yy in range(y + 2, y + h - 2) for xx in range(x + 2, x + w - 2) if rows[yy][xx][0] > 90]
            self.assertTrue(line, "no plot line drawn (ImGui's plot line colour, grey 156) in " + name)
            values = np.array(mass[key], dtype=np.float64)
            lo, hi = mass[key + "_range"]
            expected = (values.max() - values.min()) / (hi - lo) * (h - 4)
            if values.max() - values.min() >= 0.01:
                self.assertGreater(expected, 0.95 * (h - 4))  # the series' own min..max
            self.assertGreater(max(line) - min(line), 0.8 * expected - 3, name + "'s line is flat at its scale")


def sig3(v):
    """Three significant digits in plain notation (core/view/number_text.h, written again here)."""
    if v == 0:
        return "0"
    decimals = min(12, max(0, 2 - int(("%.2e" % v).split("e")[1])))
    return "%.*f" % (decimals, v)


if __name__ == "__main__":
    unittest.main()
