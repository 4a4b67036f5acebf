"""Helpers for the GUI tests: an Xvfb display, running the app, reading PNGs and the state log.

Each test module starts its own X server with xvfb-run (Mesa llvmpipe, no GPU) and keeps
XDG_CONFIG_HOME in a temporary folder, so the user's config is never touched.
"""
import json
import os
import signal
import struct
import subprocess
import tempfile
import time
import unittest
import zlib

import numpy as np

BIN = os.environ.get("ATTNSCOPE_BIN", os.path.join(os.path.dirname(__file__), "../../build/attnscope"))
TMP_ROOT = os.environ.get("ATTNSCOPE_TEST_TMP", tempfile.gettempdir())
SCREEN = "-screen 0 1600x1000x24 -noreset"  # -noreset: keep the parked pointer between clients
MASKED = {(128, 128, 128), (160, 160, 160)}  # kMaskedColor / kMaskedHatchColor
BACKGROUND = (26, 27, 31)                     # panel background (0.10, 0.105, 0.12)
DISABLED_ALPHA = 0.6  # Dear ImGui's style.DisabledAlpha: a disabled widget is drawn at 60 % opacity
# The controls a trained model greys, and reverse-digits' values in the sandbox's settings (2 heads
# of 32, causal, bias): set in the sandbox, where the controls are enabled, they give the look the
# greyed controls must have, dimmed.
GREYED_CONTROLS = ("heads_slider", "mask_causal")
REVERSE_DIGITS_VALUES = dict(heads=2, head_dim=32, mask="causal", bias=True)


def scratch_dir(prefix):
    os.makedirs(TMP_ROOT, exist_ok=True)
    return tempfile.mkdtemp(prefix=prefix, dir=TMP_ROOT)


class XServer:
    """xvfb-run holding a display open; .env has DISPLAY, XAUTHORITY and a private XDG_CONFIG_HOME."""

    def __init__(self, screen=SCREEN):
        self.dir = scratch_dir("xvfb-")
        display_file = os.path.join(self.dir, "display")
        self.proc = subprocess.Popen(
            ["xvfb-run", "-a", "-s", screen, "sh", "-c", 'echo "$DISPLAY $XAUTHORITY" > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 3600',
             display_file],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            if os.path.exists(display_file):
                break
            time.sleep(0.05)
        else:
            self.close()
            raise RuntimeError("Xvfb did not start")
        self.env = dict(os.environ)
        with open(display_file) as f:
            display, xauthority = f.read().split()
        self.env["DISPLAY"], self.env["XAUTHORITY"] = display, xauthority
        self.env["XDG_CONFIG_HOME"] = os.path.join(self.dir, "config")
        # Xvfb puts the pointer mid-screen, over the focus view; park it in a corner so
        # no tooltip or crosshair covers the cells a test inspects.
        width, height = (int(v) for v in screen.split()[2].split("x")[:2])
        self.xdotool("mousemove", width - 10, height - 10)

    def run(self, *args, timeout=60):
        return subprocess.run([BIN, *args], env=self.env, capture_output=True, text=True, timeout=timeout)

    def start(self, *args):
        return subprocess.Popen([BIN, *args], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)

    def xdotool(self, *args):
        return subprocess.run(["xdotool", *map(str, args)], env=self.env, capture_output=True, text=True,
                              timeout=20).stdout.strip()

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)


def settled(state):
    """The first result is drawn and nothing is recomputing."""
    return state["generation"] > 0 and not state["pending"] and "focus_probs" in state["rects"]


class AppTestCase(unittest.TestCase):
    """One X server per test class and a scratch folder (named SCRATCH...) for its files."""
    SCRATCH = "gui-"

    @classmethod
    def setUpClass(cls):
        cls.x = XServer()
        cls.dir = scratch_dir(cls.SCRATCH)

    @classmethod
    def tearDownClass(cls):
        cls.x.close()

    def find_window(self):
        deadline = time.time() + 15
        while time.time() < deadline:
            ids = self.x.xdotool("search", "--name", "attnscope").split()
            if ids:
                return ids[0]
            time.sleep(0.1)
        self.fail("no window named attnscope")

    def start(self, name, *flags, ready=settled, **settings):
        """Starts the app on these settings (written to <name>.json, state log <name>.log) plus
        flags; stopped at cleanup. Returns (process, state log, window, first state where ready)."""
        log = os.path.join(self.dir, name + ".log")
        path = write_settings(self.dir, name + ".json", **settings)
        app = self.x.start("--settings", path, "--state-log", log, *flags)
        self.addCleanup(self.stop, app)
        state = wait_for_state(log, ready, timeout=60)  # a first result on a busy machine
        window = self.find_window()
        # Keyboard focus follows the pointer: park it on the Controls title bar (no tooltip there).
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        return app, log, window, state

    def stop(self, app):
        if app.poll() is None:
            app.terminate()
            try:
                app.wait(timeout=30)
            except subprocess.TimeoutExpired:
                app.kill()
        if not app.stderr.closed:  # stop() may run twice (explicitly, then as cleanup)
            app.communicate()

    def screenshot(self, window, name):
        """Grabs the window into <name> in the scratch folder; returns its path."""
        shot = os.path.join(self.dir, name)
        subprocess.run(["import", "-window", window, "PNG24:" + shot], env=self.x.env, check=True, timeout=30)
        return shot

    def capture(self, window, name):
        return read_png(self.screenshot(window, name))

    def check_greyed_as_drawn(self, shot, state, name, names, values):
        """The controls `names` as drawn in shot are the sandbox's enabled controls with `values`,
        dimmed as a disabled widget is: each pixel background + DISABLED_ALPHA x (enabled -
        background) within 25 per channel (stacked layers blend a little differently: up to 12
        seen), and on average more than 6 away from the enabled look itself. The same value drawn
        is needed for that: another value's digits, grab or an unticked box leave pixels off by
        far more. Starts the sandbox app itself: stop the app that drew shot first (find_window
        takes the first window)."""
        app, log, window, enabled = self.start(name, **values)
        for _ in range(50):  # the first frames may not be on screen yet
            enabled_shot = self.capture(window, name + ".png")
            if crop_pixels(enabled_shot, enabled["rects"]["heads_slider"]).max() > 100:
                break
            time.sleep(0.1)
        enabled = read_state_log(log)[-1]
        self.stop(app)
        background = np.array(BACKGROUND, dtype=np.float64)
        for control in names:
            with self.subTest(control=control):
                drawn, look = crop_pixels(shot, state["rects"][control]), crop_pixels(enabled_shot, enabled["rects"][control])
                self.assertEqual(drawn.shape, look.shape, control)
                dimmed = background + DISABLED_ALPHA * (look - background)
                off = np.abs(drawn - dimmed).max(axis=-1)
                from_enabled = np.abs(drawn - look).max(axis=-1)
                self.assertLessEqual(
                    off.max(), 25,
                    f"{control} as drawn is not the enabled control with {values} dimmed to {DISABLED_ALPHA}: "
                    f"{int((off > 25).sum())} pixels off by more than 25 (up to {off.max():.0f})")
                self.assertGreater(from_enabled.mean(), 6,
                                   f"{control} is drawn as the enabled control (mean difference {from_enabled.mean():.1f})")

    def click(self, window, rect, dx=None):
        """Clicks rect [x, y, w, h] (at dx from its left edge, else its centre). The pointer rests
        over it and the button stays down for a few frames: ImGui 1.86 loses a press and release
        that reach it in the same frame."""
        x, y, w, h = rect
        self.x.xdotool("mousemove", "--window", window, int(x + (w / 2 if dx is None else dx)), int(y + h / 2))
        time.sleep(0.2)
        self.x.xdotool("mousedown", 1)
        time.sleep(0.15)
        self.x.xdotool("mouseup", 1)

    def click_until(self, window, log, rect, predicate, dx=None, tries=6):
        """Clicks rect until a state line written after the first click matches predicate (a
        busy frame can miss a click); the pointer then rests on the Controls title bar, away
        from tooltips and crosshairs. Returns that state line."""
        seen = len(read_state_log(log))
        for _ in range(tries):
            self.click(window, rect, dx)
            self.x.xdotool("mousemove", "--window", window, 120, 6)
            try:
                return wait_for_new_state(log, seen, predicate, timeout=5)
            except AssertionError:
                pass
        return wait_for_new_state(log, seen, predicate, timeout=1)

    def choose_item(self, window, log, combo, item, predicate):
        """Opens combo and clicks its item until predicate holds (a popup is placed one frame
        after it opens, and a busy frame can miss either click)."""
        for _ in range(4):
            try:
                self.click_until(window, log, read_state_log(log)[-1]["rects"][combo], lambda s: item in s["rects"])
            except AssertionError:  # the popup never showed the item: close whatever opened, again
                self.press(window, "Escape")
                continue
            time.sleep(0.4)
            states = read_state_log(log)
            seen = len(states)
            # The popup may have closed since it was seen (a busy frame): then open it again.
            if item not in states[-1].get("rects", {}):
                self.press(window, "Escape")
                continue
            self.click(window, states[-1]["rects"][item])
            self.x.xdotool("mousemove", "--window", window, 120, 6)
            try:
                return wait_for_new_state(log, seen, predicate, timeout=5)
            except AssertionError:
                self.press(window, "Escape")  # a popup left open
        return wait_for_state(log, predicate, timeout=1)

    def move_to_cell(self, window, rect, win, i, j):
        """Pointer to the centre of map cell (i, j) of a heatmap in rect showing window win
        [row0, rows, col0, cols]; returns the pixel."""
        row0, rows, col0, cols = win
        x, y = cell_pixel(rect, rows, cols, i - row0, j - col0)
        self.x.xdotool("mousemove", "--window", window, x, y)
        return x, y

    def press(self, window, keys):
        self.x.xdotool("key", "--window", window, keys)
        # xdotool gives up between key-down and key-up when the window closes on the key-down
        # (Ctrl+Q): the server then holds the keys and auto-repeats them into the next app.
        self.x.xdotool("keyup", keys)

    def type_at_text_end(self, window, state, text, delay=60):
        """Types `text` at the end of the text box (a click below its last line puts the
        cursor there), then parks the pointer on the title bar (no hover)."""
        x, y, w, h = state["rects"]["text_box"]
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h - 6))
        self.x.xdotool("click", 1)
        self.x.xdotool("type", "--delay", str(delay), text)
        self.x.xdotool("mousemove", "--window", window, 120, 6)

    def type_into_slider(self, window, rect, text):
        """Ctrl+click a slider (ImGui's text entry), type text and Return (each keystroke applies)."""
        x, y, w, h = rect
        self.x.xdotool("mousemove", "--window", window, int(x + w / 2), int(y + h / 2))
        time.sleep(0.2)
        self.x.xdotool("keydown", "ctrl")
        self.x.xdotool("mousedown", 1)
        time.sleep(0.15)
        self.x.xdotool("mouseup", 1)
        self.x.xdotool("keyup", "ctrl")
        time.sleep(0.3)
        self.press(window, "ctrl+a")
        self.x.xdotool("type", "--delay", 120, "--window", window, text)
        time.sleep(0.2)
        self.x.xdotool("keydown", "Return")  # held over frames: ImGui 1.86 loses a press and release in one
        time.sleep(0.2)
        self.x.xdotool("keyup", "Return")

    def settled_zoom(self, log):
        """A tiled source zoomed by the wheel: the newest state once the zoom has stopped and its
        window's tile is shown."""
        deadline = time.time() + 30
        last = None
        while time.time() < deadline:
            state = read_state_log(log)[-1]
            tile = state["zoom_tile"]
            done = state["zoomed"] and tile is not None and not tile["pending"] and tile["window"] == state["zoom_window"]
            if done and last is not None and last["zoom_window"] == state["zoom_window"]:
                return state
            last = state if done else None
            time.sleep(0.5)
        self.fail("the zoom never settled")

    def zoom_to_exact_tile(self, log):
        """Nine wheel steps up at the pointer over a tiled source's focus map: the window
        shrinks to at most 48 cells a side and its exact tile comes; returns that state."""
        for _ in range(9):
            self.x.xdotool("click", 4)
            time.sleep(0.15)
        state = self.settled_zoom(log)
        self.assertLessEqual(state["zoom_window"][1], 48)
        self.assertTrue(state["zoom_tile"]["exact"])
        self.assertEqual(state["zoom_tile"]["error"], "")
        return state

    def export_zoomed_window(self, window, log, head, size, win):
        """Ctrl+S on a zoomed focus view of map (layer 0, head, batch item 0) of a causal
        size x size map showing window win [row0, rows, col0, cols]: checks that the export
        is named after the window (png, npy, json) and returns its paths."""
        self.x.xdotool("mousemove", "--window", window, 120, 6)
        self.press(window, "ctrl+s")
        state = wait_for_state(log, lambda s: s["export_count"] >= 1, timeout=60)
        self.assertEqual(state["last_export"]["error"], "")
        r0, nr, c0, nc = win
        name = "probs_L0_H%d_b0_causal_L%dxS%d_rows%d-%d_keys%d-%d" % (head, size, size, r0, r0 + nr - 1, c0,
                                                                      c0 + nc - 1)
        paths = state["last_export"]["paths"]
        self.assertEqual([os.path.basename(p) for p in paths], [name + ".png", name + ".npy", name + ".json"])
        return paths


class TiledAppTestCase(AppTestCase):
    """AppTestCase whose X server's apps send every run down the tiled path
    (ATTNSCOPE_FULL_PATH_BYTES=1, docs/app.md, "Long maps")."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.x.env["ATTNSCOPE_FULL_PATH_BYTES"] = "1"


def overview_block(count, n, cells):
    """Real indices [a, b) that overview cell n of cells covers on an axis of count (the block
    rule of core/view/downsample.h)."""
    return n * count // cells, (n + 1) * count // cells


def write_settings(folder, name, **fields):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        json.dump(fields, f)
    return path


def read_state_log(path):
    if not os.path.exists(path):
        return []
    lines = []
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break  # the line being written
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a read torn by a write in progress (seen once under load): the next poll reads it whole
    return lines


def wait_for_state(path, predicate, timeout=20):
    """The first state-log line (newest first) that satisfies predicate; fails after timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for state in reversed(read_state_log(path)):
            if predicate(state):
                return state
        time.sleep(0.1)
    lines = read_state_log(path)
    raise AssertionError("state never matched; last line: %s" % (json.dumps(lines[-1]) if lines else "none"))


def wait_for_new_state(path, seen, predicate, timeout=20):
    """The first state line after the first `seen` lines that matches predicate: lines written
    before an action must not answer for it (wait_for_state also looks at those)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for state in read_state_log(path)[seen:]:
            if predicate(state):
                return state
        time.sleep(0.1)
    raise AssertionError("no state line after line %d matched" % seen)


def read_png(path):
    """Minimal PNG decoder (8-bit RGB/RGBA, non-interlaced): returns (width, height, rows of RGB tuples)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color_type in (2, 6) and interlace == 0, "unsupported PNG format"
            channels = 3 if color_type == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def colour_table(name):
    """The 256 RGB colours of a colour table in core/view/colormap_tables.inc ("kViridisTable", ...)."""
    import re
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core", "view",
                           "colormap_tables.inc")) as f:
        text = f.read()
    body = text[text.index(name):]
    body = body[:body.index("}};")]
    colours = [tuple(int(v) for v in m) for m in re.findall(r"\{(\d+),(\d+),(\d+)\}", body)]
    assert len(colours) == 256, len(colours)
    return colours


def pixels_near(shot, rect, colour, tol=12):
    """Pixels within tol (each channel) of colour inside rect [x, y, w, h] of a capture."""
    part = crop_pixels(shot, rect)
    return int(np.sum(np.all(np.abs(part - np.array(colour, dtype=np.float64)) <= tol, axis=-1))) if part.size else 0


def crop_pixels(shot, rect):
    """The pixels of rect [x, y, w, h] of a capture as a float array [h, w, 3]."""
    _, _, rows = shot
    x, y, w, h = (int(round(v)) for v in rect)
    return np.array([row[x:x + w] for row in rows[y:y + h]], dtype=np.float64)


def cell_pixel(rect, rows, cols, i, j):
    """Pixel at the centre of cell (i, j) of a heatmap drawn in rect [x, y, w, h]."""
    x, y, w, h = rect
    return int(x + (j + 0.5) * w / cols), int(y + (i + 0.5) * h / rows)


def inner_pixels(rows, rect, inset=2):
    """Pixels of rect [x, y, w, h] less an inset-pixel border."""
    x, y, w, h = [int(v) for v in rect]
    return [rows[yy][xx] for yy in range(y + inset, y + h - inset) for xx in range(x + inset, x + w - inset)]


def count_runs(row_pixels, x0, x1, min_width=8):
    """Number of runs of non-background pixels at least min_width wide in [x0, x1)."""
    runs, width = 0, 0
    for x in range(x0, x1):
        if row_pixels[x] != BACKGROUND:
            width += 1
        else:
            runs += width >= min_width
            width = 0
    return runs + (width >= min_width)


def model_settled(state):
    """A trained model's run is drawn and nothing is pending or failing."""
    return settled(state) and state.get("view_source") == "model run" and state["error"] == ""


def wait_after(log, count, predicate, timeout=20):
    """Like guitest.wait_for_state, over the lines after the first `count` only: a state
    from before an action cannot satisfy the wait for its effect."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for state in reversed(read_state_log(log)[count:]):
            if predicate(state):
                return state
        time.sleep(0.1)
    lines = read_state_log(log)
    raise AssertionError("state never matched after line %d; last line: %s" % (count, lines[-1] if lines else "none"))


def line_count(log):
    return len(read_state_log(log))


def save_softmax_maps(folder, shape, seed):
    """FOLDER/attentions.npy: float32 maps of `shape` [..., L, S], the softmax over keys of
    seeded standard normals (an attention bundle's maps for a test)."""
    x = np.random.default_rng(seed).normal(size=shape)
    p = np.exp(x - x.max(-1, keepdims=True))
    np.save(os.path.join(folder, "attentions.npy"), (p / p.sum(-1, keepdims=True)).astype(np.float32))
