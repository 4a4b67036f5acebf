"""The head table's order beyond one click (issue 10), on the real app under Xvfb:
- with "order grid by table", the arrow keys move through the heads in the table's order
  (Left/Right one head, Up/Down one grid row of the wrapped grid), stopping at the ends;
- the table's sort column and direction, "order grid by table" and the compare view's picks are
  saved in view.json beside settings.json and restored by the next start (the ImGui table
  shows the restored sort)."""
import json
import os
import shutil
import time
import unittest

import numpy as np

import guitest as g

SHARPNESS = [1.0, 4.0, 0.3, 2.5, 0.1, 8.0]  # per head: scales the logits, so the metrics differ


def write_bundle(folder, layers=2, L=8, seed=4):
    os.makedirs(folder)
    H = len(SHARPNESS)
    x = np.random.default_rng(seed).normal(size=(layers, 1, H, L, L)) * np.array(SHARPNESS)[None, None, :, None, None]
    p = np.exp(x - x.max(-1, keepdims=True))
    np.save(os.path.join(folder, "attentions.npy"), (p / p.sum(-1, keepdims=True)).astype(np.float32))


class TableOrderGuiTest(g.AppTestCase):
    SCRATCH = "table-order-gui-"

    def key_until(self, window, log, key, predicate):
        seen = len(g.read_state_log(log))
        for _ in range(3):
            self.press(window, key)
            try:
                return g.wait_for_new_state(log, seen, predicate, timeout=4)
            except AssertionError:
                pass
        return g.wait_for_new_state(log, seen, predicate, timeout=1)

    def sorted_by_entropy(self, window, log, state):
        """order grid by table, then sort by entropy (largest first)."""
        state = self.click_until(window, log, state["rects"]["metrics_order_grid"],
                                 lambda s: s["head_table"] and s["head_table"]["order_grid"], dx=8)
        return self.click_until(window, log, state["rects"]["metrics_header_entropy_bits"],
                                lambda s: s["head_table"]["sort_column"] == "entropy_bits" and
                                s["head_table"]["descending"] and "grid_tile_0_0" in s["rects"])

    def setUp(self):
        # Every test starts on a fresh config folder (no view.json, no imgui.ini).
        shutil.rmtree(os.path.join(self.x.env["XDG_CONFIG_HOME"], "attnscope"), ignore_errors=True)

    def test_arrow_keys_follow_the_table_order(self):
        bundle = os.path.join(self.dir, "keys")
        write_bundle(bundle)
        _, log, window, state = self.start("keys", bundle)
        state = self.sorted_by_entropy(window, log, state)
        order = [tuple(o) for o in state["head_table"]["order"]]
        self.assertEqual(len(order), 12)
        self.assertNotEqual(order, sorted(order), "the sort moved some heads")
        # Focus the table's first head by its row, then walk with the keys.
        state = self.click_until(window, log, state["rects"]["metrics_row_0"],
                                 lambda s: (s["focused_layer"], s["focused_head"]) == order[0], dx=12)
        cols = state["grid_columns"]
        self.assertGreater(cols, 1)
        self.assertLess(cols, 12)
        k = 0
        for key, step in [("Right", 1), ("Right", 1), ("Left", -1), ("Down", cols), ("Up", -cols)]:
            k += step
            state = self.key_until(window, log, key, lambda s: (s["focused_layer"], s["focused_head"]) == order[k])
        # At the ends it stays: Left and Up from the first head (Up from the second row's
        # first head is past the start too).
        state = self.key_until(window, log, "Left", lambda s: (s["focused_layer"], s["focused_head"]) == order[0])
        self.press(window, "Left")
        self.press(window, "Up")
        time.sleep(1.0)
        last = g.read_state_log(log)[-1]
        self.assertEqual((last["focused_layer"], last["focused_head"]), order[0])
        # Without the table order, Down moves one layer again.
        state = self.click_until(window, log, state["rects"]["metrics_order_grid"],
                                 lambda s: not s["head_table"]["order_grid"], dx=8)
        layer, head = order[0]
        if layer == 0:
            self.key_until(window, log, "Down", lambda s: (s["focused_layer"], s["focused_head"]) == (1, head))
        else:
            self.key_until(window, log, "Up", lambda s: (s["focused_layer"], s["focused_head"]) == (0, head))

    def test_sort_order_grid_and_compare_picks_survive_a_restart(self):
        view_file = os.path.join(self.x.env["XDG_CONFIG_HOME"], "attnscope", "view.json")
        bundle = os.path.join(self.dir, "persist")
        write_bundle(bundle)
        app, log, window, state = self.start("persist1", bundle)
        state = self.sorted_by_entropy(window, log, state)
        order = state["head_table"]["order"]
        # Compare: B := layer 1 through its combo (A stays the focused head).
        state = self.click_until(window, log, state["rects"]["focus_tab_compare"],
                                 lambda s: s["focus_tab"] == "compare" and s["compare"] and "compare_b_layer" in s["rects"])
        state = self.choose_item(window, log, "compare_b_layer", "compare_b_layer_item_1",
                                 lambda s: s["compare"] and s["compare"]["b"]["layer"] == 1)
        picks = (state["compare"]["a"], state["compare"]["b"])
        self.stop(app)  # SIGTERM: saved on the way out
        with open(view_file) as f:
            saved = json.load(f)
        self.assertEqual(saved["table"], {"sort_column": "entropy_bits", "descending": True, "order_grid": True})
        self.assertEqual((saved["compare"]["a"], saved["compare"]["b"]), picks)

        _, log, window, state = self.start("persist2", bundle,
                                           ready=lambda s: g.settled(s) and s["head_table"] is not None)
        state = g.wait_for_state(log, lambda s: s["head_table"] and s["head_table"]["order"] == order)
        self.assertEqual((state["head_table"]["sort_column"], state["head_table"]["descending"],
                          state["head_table"]["order_grid"]), ("entropy_bits", True, True))
        self.assertIn("grid_tile_%d_%d" % tuple(order[0]), state["rects"])
        state = self.click_until(window, log, state["rects"]["focus_tab_compare"],
                                 lambda s: s["focus_tab"] == "compare" and s["compare"])
        self.assertEqual((state["compare"]["a"], state["compare"]["b"]), picks)
        self.screenshot(window, "restored.png")

    def test_bad_view_files_start_on_defaults(self):
        config = os.path.join(self.x.env["XDG_CONFIG_HOME"], "attnscope")
        view_file = os.path.join(config, "view.json")
        bundle = os.path.join(self.dir, "bad")
        write_bundle(bundle)
        cases = [
            ("not_json", "{ not json", True),
            ("bad_keys", json.dumps({"table": {"sort_column": "no_such_metric", "descending": "yes", "order_grid": 3},
                                     "compare": {"a": {"layer": -1, "head": 0, "run": "this"},
                                                 "b": {"layer": 0, "head": 1, "run": "with:bogus"}}}), False),
        ]
        for name, text, moved in cases:
            with self.subTest(name):
                os.makedirs(config, exist_ok=True)
                with open(view_file, "w") as f:
                    f.write(text)
                app, log, window, state = self.start(name, bundle,
                                                     ready=lambda s: g.settled(s) and s["head_table"] is not None)
                self.assertEqual((state["head_table"]["sort_column"], state["head_table"]["descending"],
                                  state["head_table"]["order_grid"]), ("head", False, False))
                self.assertEqual(os.path.exists(view_file + ".bad"), moved)
                if moved:
                    self.assertIn("view.json is not a JSON object", state["notice"])
                    os.remove(view_file + ".bad")
                state = self.click_until(window, log, state["rects"]["focus_tab_compare"],
                                         lambda s: s["focus_tab"] == "compare" and s["compare"])
                self.assertEqual((state["compare"]["a"]["run"], state["compare"]["b"]["run"]), ("this", "this"))
                self.assertEqual(state["compare"]["b"]["head"], 1, "the default B: the next head")
                self.stop(app)


if __name__ == "__main__":
    unittest.main()
