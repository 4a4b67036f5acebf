"""Soak (issue 12): the real window driven by xdotool for a bounded time with a seeded random
mix of clicks, slider drags to both extremes, combo changes, typed UTF-8 (empty, one token,
500 tokens, emoji, CJK, right-to-left, control characters), head switching and exports.

At the end the app must be alive and answer a key press (F1 opens the help), it must have
logged no OpenGL error (--check-gl exits 3 on the first one), and its resident memory must be
within a bound of the resident memory after the warm-up: RSS at the end <= RSS after warm-up
* RSS_FACTOR + RSS_SLACK_MIB, both measured on the same reference input (500 tokens, 16
heads, no mistake, recomputed and drawn): nothing may grow without bound. The synthetic source
is left out (see act_source).

ATTNSCOPE_SOAK_SECONDS (default 120) and ATTNSCOPE_SOAK_SEED (default 12) change the run."""
import os
import random
import subprocess
import time
import unittest

import guitest

SECONDS = float(os.environ.get("ATTNSCOPE_SOAK_SECONDS", "120"))
SEED = int(os.environ.get("ATTNSCOPE_SOAK_SEED", "12"))
# End RSS <= warm-up RSS * RSS_FACTOR + RSS_SLACK_MIB.
RSS_FACTOR, RSS_SLACK_MIB = 1.5, 100

TEXTS = [
    "",
    "one",
    " ".join(chr(ord("a") + i % 26) for i in range(500)),  # 500 tokens
    "smile \U0001F600 party \U0001F389 thumbs \U0001F44D",
    "\u6ce8\u610f\u529b \u673a\u5236 \u53ef\u89c6\u5316 \u5de5\u5177",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd \u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "tab\there\nnew line\r\nbell\x07 nul? \x1b[31m esc",
    "the cat sat on the mat\nthe dog ran",
]


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS for %d" % pid)


class Soak(guitest.AppTestCase):
    SCRATCH = "gui-soak-"

    def setUp(self):
        self.rng = random.Random(SEED)
        self.actions = []

    # --- driving the window -------------------------------------------------------------
    def state(self):
        lines = guitest.read_state_log(self.log)
        return lines[-1] if lines else {}

    def move(self, x, y):
        self.x.xdotool("mousemove", "--window", self.window, int(x), int(y))

    def click_at(self, x, y):
        self.move(x, y)
        time.sleep(0.05)  # a frame sees the pointer before the press (ImGui 1.86)
        self.x.xdotool("click", "1")

    def keys(self, *names):
        """Each key held for a frame or two: ImGui 1.86 misses a press and release that both
        fall between two frames (characters typed with `type` are queued and never lost)."""
        for name in names:
            self.x.xdotool("keydown", name)
            time.sleep(0.08)
            self.x.xdotool("keyup", name)
            time.sleep(0.03)

    def click_rect(self, name, dx=8):
        rect = self.state().get("rects", {}).get(name)
        if not rect:
            return False
        self.click_at(rect[0] + min(dx, rect[2] - 2), rect[1] + rect[3] / 2)
        return True

    def act_click(self):
        width, height = self.state().get("window", [1440, 900])
        self.click_at(self.rng.randrange(2, width - 2), self.rng.randrange(2, height - 2))
        self.keys("Escape")  # whatever the click opened (a popup, the bundle dialog)

    def drag_to_extremes(self, name, stops):
        """Holds the slider's grab and moves past its ends (stops: fractions, <0 or >1 beyond)."""
        x, y, w, h = self.state()["rects"][name]
        self.move(x + w / 2, y + h / 2)
        time.sleep(0.2)  # frames see the pointer over the slider before the press (ImGui 1.86)
        self.x.xdotool("mousedown", "1")
        try:
            guitest.wait_for_state(self.log, lambda s: s["item_active"], timeout=5)
        except AssertionError:
            pass  # a busy frame missed the press: the soak goes on
        for stop in stops:
            self.move(x + w * stop, y + h / 2)
            time.sleep(0.1)
        self.x.xdotool("mouseup", "1")

    def act_drag(self):
        if "heads_slider" in self.state().get("rects", {}):
            self.drag_to_extremes("heads_slider", (-2.0, 3.0, self.rng.random()))

    def act_combo(self):
        name = self.rng.choice(["colormap_combo", "mistake_combo"])
        rect = self.state().get("rects", {}).get(name)
        if not rect:
            return
        self.click_at(rect[0] + 20, rect[1] + rect[3] / 2)
        time.sleep(0.3)  # the popup is placed a frame after it opens
        self.click_at(rect[0] + 20, rect[1] + rect[3] * (1.5 + self.rng.randrange(6)))
        self.keys("Escape")

    def act_type(self, text=None):
        if not self.click_rect("source_text"):
            return
        try:
            guitest.wait_for_state(self.log, lambda s: "text_box" in s["rects"], timeout=10)
        except AssertionError:
            return  # a popup or the bundle dialog took the click
        if not self.click_rect("text_box", dx=20):
            return
        self.keys("ctrl+a", "BackSpace")
        edits = text is None and self.rng.random() < 0.3
        text = self.rng.choice(TEXTS) if text is None else text
        if text:
            # 1000 characters take a while on a busy machine: more than xdotool()'s 20 s.
            subprocess.run(["xdotool", "type", "--delay", "1", text], env=self.x.env, capture_output=True,
                           timeout=300)
        if edits:
            self.keys("Home", "Delete", "End", "BackSpace", "ctrl+z", "Tab")
        self.click_at(120, 6)  # leave the text box: the Controls title bar

    def act_source(self):
        """Text or a bundle with no folder (a failed recompute). Not synthetic: its L and B
        sliders reach inputs (4096 x 4096 x 16 heads x B) whose buffers the workspace keeps by
        design, which would make the memory bound meaningless."""
        self.click_rect(self.rng.choice(["source_text", "source_bundle"]))
        self.keys("Escape")

    def act_keys(self):
        self.move(120, 6)
        self.keys(*[self.rng.choice(["Left", "Right", "Up", "Down"]) for _ in range(self.rng.randrange(1, 6))])

    def act_export(self):
        self.move(120, 6)
        self.keys(self.rng.choice(["ctrl+s", "ctrl+shift+s", "ctrl+alt+s"]))

    def act_help(self):
        self.move(120, 6)
        self.keys("F1", "Escape")

    def choose_source(self, name):
        """Clicks the source's radio button until the app shows it (a busy frame can miss one)."""
        seen = len(guitest.read_state_log(self.log))
        for _ in range(10):
            self.click_rect("source_" + name)
            try:
                guitest.wait_for_new_state(self.log, seen, lambda s: s["source"] == name, timeout=5)
                return
            except AssertionError:
                pass
        self.fail("could not choose the %s source" % name)

    def choose_no_mistake(self):
        """Picks "none" in the mistakes lab until the app shows it: a mistake keeps a second,
        correct trace for the difference view, which the reference RSS must not count."""
        for _ in range(10):
            if self.state().get("mistake") == "none":
                return
            seen = len(guitest.read_state_log(self.log))
            rect = self.state().get("rects", {}).get("mistake_combo")
            if rect:
                self.click_at(rect[0] + 20, rect[1] + rect[3] / 2)
                time.sleep(0.3)  # the popup is placed a frame after it opens
                self.click_at(rect[0] + 20, rect[1] + rect[3] * 1.5)  # its first item: none
            try:
                guitest.wait_for_new_state(self.log, seen, lambda s: s["mistake"] == "none", timeout=5)
                return
            except AssertionError:
                self.keys("Escape")
        self.fail("could not choose no mistake")

    def reference_rss(self, app):
        """RSS on the reference input: the 500-token text at 16 heads, no mistake, recomputed
        and drawn."""
        self.choose_source("text")
        self.choose_no_mistake()
        seen = len(guitest.read_state_log(self.log))
        self.act_type(TEXTS[2])
        guitest.wait_for_new_state(self.log, seen, lambda s: s.get("L") == 500 and not s["pending"], timeout=120)
        # The text box has grown and the app was busy: drag until the heads reach 16 (a busy
        # frame can miss the press, as in choose_source).
        before_drags = len(guitest.read_state_log(self.log))
        for _ in range(10):
            seen = len(guitest.read_state_log(self.log))
            self.drag_to_extremes("heads_slider", (0.8, 1.5))
            try:
                guitest.wait_for_new_state(self.log, seen, lambda s: s["settings_heads"] == 16, timeout=5)
                break
            except AssertionError:
                pass
        guitest.wait_for_new_state(self.log, before_drags, lambda s: s["source"] == "text" and s["settings_heads"] == 16 and
                                   s.get("L") == 500 and s["mistake"] == "none" and not s["pending"], timeout=120)
        time.sleep(2)  # textures uploaded, exports finished
        return rss_mib(app.pid)

    # --- the test -------------------------------------------------------------------------
    def test_random_driving_keeps_the_app_alive_and_bounded(self):
        folder = os.path.join(self.dir, "exports")
        settings = guitest.write_settings(self.dir, "soak.json", text="the cat sat on the mat", heads=4,
                                          export_dir=folder)
        self.log = os.path.join(self.dir, "soak.log")
        err_path = os.path.join(self.dir, "soak.stderr")
        with open(err_path, "w") as err:
            app = subprocess.Popen([guitest.BIN, "--settings", settings, "--state-log", self.log, "--check-gl"],
                                   env=self.x.env, stdout=subprocess.DEVNULL, stderr=err)
        self.addCleanup(lambda: app.poll() is None and (app.kill(), app.wait()))
        guitest.wait_for_state(self.log, guitest.settled)
        self.window = self.find_window()

        # Warm-up: one export, then the reference input.
        self.act_export()
        warm = self.reference_rss(app)

        acts = [self.act_click] * 4 + [self.act_drag] * 2 + [self.act_combo] * 2 + [self.act_type] * 3 + \
               [self.act_keys] * 3 + [self.act_source, self.act_export, self.act_help]
        end = time.monotonic() + SECONDS
        while time.monotonic() < end:
            act = self.rng.choice(acts)
            act()
            self.actions.append(act.__name__)
            self.assertIsNone(app.poll(), "the app exited during %s after %d actions" % (act.__name__, len(self.actions)))
            time.sleep(self.rng.uniform(0.0, 0.15))

        # Alive and answering: Escape anything open, then F1 opens the help.
        self.assertIsNone(app.poll(), "the app exited")
        self.keys("Escape")
        self.click_at(120, 6)
        self.keys("Escape")
        guitest.wait_for_state(self.log, lambda s: not s["help_open"], timeout=60)
        self.move(120, 6)
        self.keys("F1")
        guitest.wait_for_state(self.log, lambda s: s["help_open"], timeout=30)
        self.keys("Escape")
        end_rss = self.reference_rss(app)
        bound = warm * RSS_FACTOR + RSS_SLACK_MIB
        print("soak: seed %d, %d actions in %.0f s, RSS %.0f MiB after warm-up, %.0f MiB at the end (bound %.0f)"
              % (SEED, len(self.actions), SECONDS, warm, end_rss, bound))
        self.assertLessEqual(end_rss, bound, "resident memory grew during the soak")
        app.terminate()
        self.assertEqual(app.wait(timeout=30), 0)
        with open(err_path) as f:
            err = f.read()
        self.assertNotIn("OpenGL error", err)


if __name__ == "__main__":
    unittest.main()
