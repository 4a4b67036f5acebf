"""Drive the real window with xdotool as a user would: drag the heads slider, tick the
causal mask, move the focus with the arrow keys, quit with Ctrl+Q; check the state log and
the screenshot pixels."""
import os
import time
import unittest

import guitest as g


class InteractionTest(g.AppTestCase):
    SCRATCH = "interact-"

    def test_drag_heads_slider_and_tick_causal(self):
        shot = os.path.join(self.dir, "final.png")
        app, log, window, state = self.start("interact", "--screenshot", shot, heads=2, head_dim=8, mask="none",
                                             ready=lambda s: s.get("heads") == 2 and "heads_slider" in s["rects"])
        self.assertEqual(sum(k.startswith("grid_tile_") for k in state["rects"]), 2)

        # Drag the heads slider (range 1..16) from its grab to about the middle.
        x, y, w, h = state["rects"]["heads_slider"]
        cy = int(y + h / 2)
        self.x.xdotool("mousemove", "--window", window, int(x + w * 1 / 15 + 4), cy)
        self.x.xdotool("mousedown", 1)
        for f in (0.2, 0.3, 0.4, 0.5):
            self.x.xdotool("mousemove", "--window", window, int(x + w * f), cy)
            time.sleep(0.05)
        self.x.xdotool("mouseup", 1)
        # Released: the slider no longer holds the mouse (else the next click would drag it).
        state = g.wait_for_state(log, lambda s: s.get("heads", 2) > 4 and not s["pending"]
                                 and s["settings_heads"] == s["heads"] and not s["item_active"])
        heads = state["heads"]
        self.assertTrue(4 < heads <= 16, heads)  # the drag moved well right of H=2
        state = g.wait_for_state(log, lambda s: sum(k.startswith("grid_tile_") for k in s["rects"]) == heads)
        self.assertEqual(state["D"], heads * 8)

        # Tick the causal checkbox (its box is at the left of the item).
        x, y, w, h = state["rects"]["mask_causal"]
        self.x.xdotool("mousemove", "--window", window, int(x + h / 2), int(y + h / 2))
        self.x.xdotool("click", 1)
        state = g.wait_for_state(log, lambda s: s["mask"] == "causal" and not s["pending"]
                                 and s.get("components") == ["causal"])
        L = state["L"]
        self.assertEqual(state["allowed_cells"], L * (L + 1) // 2)

        # Arrow keys move the focused head (keyboard focus follows the pointer).
        self.press(window, "Right")
        g.wait_for_state(log, lambda s: s["focused_head"] == 1)

        self.press(window, "ctrl+q")
        _, stderr = app.communicate(timeout=20)
        self.assertEqual(app.returncode, 0, stderr)

        # The final frame shows the causal pattern for the new head count.
        state = g.read_state_log(log)[-1]
        _, _, rows = g.read_png(shot)
        L, S = state["L"], state["S"]
        rect = state["rects"]["focus_probs"]
        for i in range(L):
            for j in range(S):
                px, py = g.cell_pixel(rect, L, S, i, j)
                self.assertEqual(rows[py][px] in g.MASKED, j > i, (i, j))
        tiles = [k for k in state["rects"] if k.startswith("grid_tile_")]
        self.assertEqual(len(tiles), state["heads"])
        # Settings were saved to the private config dir on exit.
        saved = os.path.join(self.x.env["XDG_CONFIG_HOME"], "attnscope", "settings.json")
        self.assertTrue(os.path.exists(saved))
        with open(saved) as f:
            text = f.read()
        self.assertIn('"causal"', text)


if __name__ == "__main__":
    unittest.main()
