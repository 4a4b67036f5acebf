"""Nothing lost (issue 12): the app's own settings file, signals and quitting.
- a settings file with a value nlohmann cannot hold (1e400), or one bad value, does not stop
  the app: the file is moved aside to settings.json.bad-DATE (byte for byte), the valid keys
  are kept, and the notice says so;
- SIGTERM or SIGINT a moment after a change: exit 0 with the change saved;
- quitting with nothing changed does not rewrite (or create) the settings file."""
import glob
import json
import os
import signal
import subprocess
import time
import unittest

import guitest


class NothingLost(guitest.AppTestCase):
    SCRATCH = "gui-robust-"

    def start_persistent(self, name, settings_text=None):
        """The app as a user starts it: no --settings, its own settings file in a fresh
        XDG_CONFIG_HOME (holding settings_text if given). Returns (app, log, config dir)."""
        config = os.path.join(self.dir, name, "config")
        folder = os.path.join(config, "attnscope")
        os.makedirs(folder)
        if settings_text is not None:
            with open(os.path.join(folder, "settings.json"), "w") as f:
                f.write(settings_text)
        env = dict(self.x.env, XDG_CONFIG_HOME=config)
        log = os.path.join(self.dir, name + ".log")
        app = subprocess.Popen([guitest.BIN, "--state-log", log], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.stop, app)
        return app, log, folder

    def finish(self, app, sig):
        app.send_signal(sig)
        _, err = app.communicate(timeout=30)
        return app.returncode, err

    def test_bad_settings_file_is_moved_aside_and_valid_keys_kept(self):
        cases = {
            "overflow": ('{"heads": 2, "text": "kept words here", "zzz": {"deep": [1e400]}}', "1e400 is too large"),
            "bad_dropout": ('{"heads": 2, "text": "kept words here", "dropout": 1.5}', "'dropout' must be in [0, 1)"),
        }
        for name, (text, problem) in cases.items():
            with self.subTest(name):
                app, log, folder = self.start_persistent(name, text)
                state = guitest.wait_for_state(log, guitest.settled)
                self.assertEqual(state["settings_heads"], 2, "a valid key was lost")
                self.assertIn(problem, state["notice"])
                moved = glob.glob(os.path.join(folder, "settings.json.bad-*"))
                self.assertEqual(len(moved), 1, os.listdir(folder))
                self.assertIn(os.path.basename(moved[0]), state["notice"])
                with open(moved[0]) as f:
                    self.assertEqual(f.read(), text, "the bad file must be kept byte for byte")
                # The notice wraps inside the window and goes when dismissed.
                notice = state["rects"]["notice"]
                width, height = state["window"]
                self.assertGreaterEqual(notice[0], 0)
                self.assertLessEqual(notice[0] + notice[2], width)
                self.assertLessEqual(notice[1] + notice[3], height)
                window = self.find_window()
                self.screenshot(window, name + "_notice.png")
                button = state["rects"]["notice_dismiss"]
                self.x.xdotool("mousemove", "--window", window, int(button[0] + button[2] / 2), int(button[1] + button[3] / 2))
                self.x.xdotool("click", "1")
                guitest.wait_for_state(log, lambda s: s["notice"] == "" and "notice" not in s["rects"])
                code, err = self.finish(app, signal.SIGTERM)
                self.assertEqual(code, 0, err)
                # Nothing was changed: the defaults are not written over anything.
                self.assertFalse(os.path.exists(os.path.join(folder, "settings.json")))
                self.assertEqual(len(glob.glob(os.path.join(folder, "settings.json.bad-*"))), 1)

    def test_signal_right_after_a_change_saves_it_and_exits_0(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(sig.name):
                app, log, folder = self.start_persistent("change_" + sig.name, '{"heads": 4, "focused_head": 0}')
                guitest.wait_for_state(log, guitest.settled)
                window = self.find_window()
                self.x.xdotool("mousemove", "--window", window, 120, 6)
                self.press(window, "Right")
                guitest.wait_for_state(log, lambda s: s["focused_head"] == 1)
                code, err = self.finish(app, sig)  # well inside the 1 s save delay
                self.assertEqual(code, 0, err)
                with open(os.path.join(folder, "settings.json")) as f:
                    self.assertEqual(json.load(f)["focused_head"], 1, "the last change was lost")

    def test_quit_without_changes_does_not_rewrite_the_file(self):
        text = '{"heads": 3, "text": "my own words"}'
        app, log, folder = self.start_persistent("unchanged", text)
        guitest.wait_for_state(log, guitest.settled)
        path = os.path.join(folder, "settings.json")
        before = os.stat(path).st_mtime_ns
        time.sleep(1.5)  # past the save delay
        code, err = self.finish(app, signal.SIGTERM)
        self.assertEqual(code, 0, err)
        with open(path) as f:
            self.assertEqual(f.read(), text)
        self.assertEqual(os.stat(path).st_mtime_ns, before)


class FirstWindow(unittest.TestCase):
    def test_first_window_fits_a_1280x800_screen(self):
        x = guitest.XServer(screen="-screen 0 1280x800x24 -noreset")
        self.addCleanup(x.close)
        log = os.path.join(x.dir, "fit.log")
        env = dict(x.env, XDG_CONFIG_HOME=os.path.join(x.dir, "fit-config"))
        app = subprocess.Popen([guitest.BIN, "--state-log", log], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        state = guitest.wait_for_state(log, guitest.settled)
        app.send_signal(signal.SIGTERM)
        _, err = app.communicate(timeout=30)
        self.assertEqual(app.returncode, 0, err)
        width, height = state["window"]
        self.assertLessEqual(width, 1280)
        self.assertLessEqual(height, 800)


if __name__ == "__main__":
    unittest.main()
