"""Attention variants in the app: GQA/RoPE/ALiBi/sinks from a settings file reach the trace
(state log), the controls show the Variants section with the RoPE decay plot, the grid
names each head's K/V group, and the sinks keep key 0 visible on screen beyond the causal
window (checked by pixels). The KV-cache stepper (F5): keys step, play and jump; the state
log's step and the drawn row follow; evicted keys are grey under sinks + window; the cache
bytes equal 2 * B * entries * d * 4 per head group (times G per layer)."""
import time
import unittest

import guitest as g


class VariantsGuiTest(g.AppTestCase):
    SCRATCH = "variants-gui-"

    def test_llama_style_settings_reach_trace_and_screen(self):
        _, log, window, state = self.start("llama", heads=4, head_dim=8, kv_heads=2, rope=True, alibi=True,
                                           mask="causal-window:3+sinks:1")
        self.assertEqual(state["error"], "")
        self.assertEqual(state["G"], 2)
        self.assertEqual(state["variants"], ["gqa", "rope", "alibi", "sinks"])
        self.assertIn("causal-window:3 | sinks:1", state["components"])
        rects = state["rects"]
        for name in ("variants_header", "kv_heads_slider", "rope_checkbox", "rope_decay_plot", "alibi_checkbox",
                     "mask_sinks"):
            self.assertIn(name, rects)
            self.assertGreater(rects[name][2], 10, name)

        L, S = state["L"], state["S"]
        self.assertGreaterEqual(L, 8)
        _, _, rows = self.capture(window, "llama.png")
        probs = rects["focus_probs"]
        last = L - 1
        for j in range(S):
            x, y = g.cell_pixel(probs, L, S, last, j)
            visible = j == 0 or last - 3 <= j <= last  # the sink, then the window
            if visible:
                self.assertNotIn(rows[y][x], g.MASKED, (last, j))
            else:
                self.assertIn(rows[y][x], g.MASKED, (last, j))

    def test_plain_settings_keep_variants_folded(self):
        _, log, _, state = self.start("plain", heads=2, head_dim=8)
        self.assertEqual(state["variants"], [])
        self.assertEqual(state["G"], 2)
        self.assertIn("variants_header", state["rects"])
        self.assertNotIn("kv_heads_slider", state["rects"])

    def test_kv_heads_that_no_longer_divide_heads_snap_to_the_nearest_divisor_below(self):
        # G = 4 does not divide H = 6 (H changed under it): G becomes 3, not back to MHA.
        _, log, _, state = self.start("snap", heads=6, head_dim=8, kv_heads=4)
        self.assertEqual((state["error"], state["G"]), ("", 3))

    def test_bad_variant_settings_show_one_line_error(self):
        _, log, _, state = self.start("oddrope", ready=lambda s: s["error"] != "" or s["generation"] > 0,
                                      heads=2, head_dim=7, rope=True)
        self.assertIn("RoPE needs an even head size d, got d=7", state["error"])


EVICTED = (64, 64, 70)  # kEvictedColor in app/gui/stepper_panel.cpp


class StepperGuiTest(g.AppTestCase):
    SCRATCH = "stepper-gui-"

    def row_pixels(self, window, state, name):
        """Centre pixel of every key cell of the stepper's row."""
        _, _, rows = self.capture(window, name)
        x, y, w, h = state["rects"]["stepper_row"]
        L = state["stepper"]["L"]
        return [rows[int(y + h / 2)][int(x + (j + 0.5) * w / L)] for j in range(L)]

    def test_keys_step_play_and_evict(self):
        _, log, window, _ = self.start("stepper", heads=4, head_dim=8, kv_heads=2, rope=True,
                                       mask="causal-window:3+sinks:2")
        self.press(window, "F5")
        state = g.wait_for_state(log, lambda s: s.get("stepper") and "L" in s["stepper"]
                                 and "stepper_row" in s["rects"])
        st = state["stepper"]
        L, k, W = st["L"], 2, 3
        self.assertGreaterEqual(L, 9)
        self.assertEqual(st["error"], "")
        self.assertEqual(st["step"], 0)
        self.assertEqual((st["sinks"], st["window"], st["capacity"], st["G"]), (k, W, k + W, 2))
        before = self.row_pixels(window, state, "step0.png")
        self.assertNotEqual(before[0], g.BACKGROUND)                 # key 0 fed
        self.assertTrue(all(p == g.BACKGROUND for p in before[1:]))  # nothing else yet

        # period steps forward: the state log's step and the drawn row follow.
        for t in range(1, 4):
            self.press(window, "period")
            state = g.wait_for_state(log, lambda s, t=t: s.get("stepper", {}) and s["stepper"]["step"] == t)
        pixels = self.row_pixels(window, state, "step3.png")
        self.assertNotEqual(pixels, before)
        self.assertTrue(all(p != g.BACKGROUND for p in pixels[:4]))
        self.assertTrue(all(p == g.BACKGROUND for p in pixels[4:]))
        self.press(window, "comma")
        state = g.wait_for_state(log, lambda s: s.get("stepper", {}) and s["stepper"]["step"] == 2)

        # End: the last step; keys older than the window and not sinks are evicted, grey.
        self.press(window, "End")
        state = g.wait_for_state(log, lambda s: s.get("stepper", {}) and s["stepper"]["step"] == L - 1)
        st = state["stepper"]
        t = L - 1
        want_evicted = [j for j in range(t + 1) if k <= j < t + 1 - W]
        self.assertEqual(st["evicted"], want_evicted)
        self.assertEqual(st["cached"], [j for j in range(t + 1) if j < k or j >= t - W])
        self.assertEqual(st["entries_after"], k + W)
        d, B, G, entries = st["d"], st["B"], st["G"], st["entries"]
        self.assertEqual(d, 8)
        self.assertEqual(st["bytes_per_group"], 2 * B * entries * d * 4)
        self.assertEqual(st["bytes_per_layer"], 2 * B * entries * d * 4 * G)
        self.assertLess(st["row_diff"], 1e-5)
        pixels = self.row_pixels(window, state, "last.png")
        for j in range(L):
            if j in want_evicted:
                self.assertEqual(pixels[j], EVICTED, j)
            else:
                self.assertNotIn(pixels[j], (EVICTED, g.BACKGROUND) + tuple(g.MASKED), j)

        # Home, then P plays to the end and stops there.
        self.press(window, "Home")
        g.wait_for_state(log, lambda s: s.get("stepper", {}) and s["stepper"]["step"] == 0)
        logged = len(g.read_state_log(log))
        started = time.time()
        self.press(window, "p")
        done = None
        while done is None and time.time() - started < 30:  # only lines logged after P
            done = next((s for s in g.read_state_log(log)[logged:] if s.get("stepper") and
                         s["stepper"]["step"] == L - 1 and not s["stepper"]["playing"]), None)
            time.sleep(0.1)
        self.assertIsNotNone(done, "play did not reach the last step")
        self.assertGreater(time.time() - started, 0.3 * (L - 2))  # one step per interval, not a jump
        self.assertEqual(done["stepper"]["step"], L - 1)
        played = [s["stepper"]["step"] for s in g.read_state_log(log)[logged:]
                  if s.get("stepper") and s["stepper"]["playing"]]
        self.assertEqual(sorted(set(played)), list(range(L - 1)))  # every step shown on the way

        # F5 closes the panel.
        self.press(window, "F5")
        g.wait_for_state(log, lambda s: s.get("stepper") is None and "stepper_row" not in s["rects"])

    def test_not_causal_says_why(self):
        _, log, window, _ = self.start("bidir", heads=2, head_dim=8, mask="window:2")
        self.press(window, "F5")
        state = g.wait_for_state(log, lambda s: s.get("stepper") and s["stepper"]["error"] != "")
        self.assertIn("decodes causally", state["stepper"]["error"])
        self.assertEqual(state["error"], "")  # the maps themselves are fine

    def test_model_run_shows_its_cache(self):
        """On a model run the stepper shows the runner's cache per layer and in all (issue 21):
        python-code has 2 layers of 4 K/V heads of 24; step t holds t + 1 entries per layer."""
        _, log, window, _ = self.start("model", source="model", model="python-code", model_text="def f(x):")
        self.press(window, "F5")
        state = g.wait_for_state(log, lambda s: s.get("stepper") and "model_cache" in s["stepper"])
        cache = state["stepper"]["model_cache"]
        self.assertEqual((state["stepper"]["error"], state["error"], cache["L"]), ("", "", 9))
        self.assertEqual(state["stepper"]["step"], 0)
        self.press(window, "End")
        state = g.wait_for_state(log, lambda s: s.get("stepper") and s["stepper"]["step"] == 8)
        cache = state["stepper"]["model_cache"]
        self.assertEqual([(l["entries"], l["kv_heads"], l["head_dim"]) for l in cache["layers"]], [(9, 4, 24)] * 2)
        self.assertEqual([l["bytes"] for l in cache["layers"]], [2 * 9 * 4 * 24 * 4] * 2)
        self.assertEqual((cache["entries"], cache["bytes"]), (18, 2 * 2 * 9 * 4 * 24 * 4))
        self.assertIn("stepper_model_cache", state["rects"])
        self.screenshot(window, "model_cache.png")


if __name__ == "__main__":
    unittest.main()
