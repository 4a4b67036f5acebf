#!/usr/bin/python3
"""How long the real app takes to show results at large sizes, as a user sees it (issue 9).

For each L:S:D:H size it starts attnscope under Xvfb (1280x800, llvmpipe) on synthetic
inputs with the causal mask, then clicks the causal checkbox off and on again, each time
waiting for the new result to be drawn (the state log's generation grows, nothing pending).
It prints, per size: the path (full or tiled), the first result's time from launch, each
change's time from the click, the worker's own compute_ms, and the app's peak memory
(VmHWM from /proc). Timings are wall-clock, so run it on a quiet machine (`uptime`).

Usage: scripts/app_timings.py [--bin build/attnscope] [--sizes L:S:D:H,...] [--changes N]
Default sizes: 2048:2048:1024:16, 4096:4096:1024:16, 32768:32768:1024:16.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gui"))
os.environ.setdefault("ATTNSCOPE_BIN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                                                    "attnscope"))
import guitest as g  # noqa: E402  (needs ATTNSCOPE_BIN before import)


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def wait_settled_after(log, seen, generation, timeout):
    return g.wait_for_new_state(log, seen, lambda s: s["generation"] > generation and not s["pending"]
                                and "focus_probs" in s["rects"], timeout=timeout)


def measure(x, folder, size, changes):
    L, S, D, H = size
    name = f"timings-{L}x{S}x{D}x{H}"
    log = os.path.join(folder, name + ".log")
    path = g.write_settings(folder, name + ".json", source="synthetic", synthetic_L=L, synthetic_S=S, heads=H,
                            head_dim=D // H, mask="causal")
    start = time.monotonic()
    app = x.start("--settings", path, "--state-log", log, "--size", "1280x800")
    try:
        state = g.wait_for_state(log, g.settled, timeout=600)
        first_s = time.monotonic() - start
        window = x.xdotool("search", "--name", "attnscope").split()[0]
        rows = [("first result", first_s, state.get("compute_ms"))]
        for n in range(changes):
            seen = len(g.read_state_log(log))
            rx, ry, rw, rh = state["rects"]["mask_causal"]
            x.xdotool("mousemove", "--window", window, int(rx + rh / 2), int(ry + rh / 2))
            clicked = time.monotonic()
            x.xdotool("click", 1)
            state = wait_settled_after(log, seen, state["generation"], timeout=600)
            rows.append((f"change {n + 1} (mask {state['mask']})", time.monotonic() - clicked, state.get("compute_ms")))
            x.xdotool("mousemove", "--window", window, 120, 6)
        mode = "tiled" if state.get("tiled") else "full"
        return mode, rows, peak_rss_mib(app.pid)
    finally:
        app.terminate()
        app.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", help="attnscope binary (default: build/attnscope)")
    parser.add_argument("--sizes", default="2048:2048:1024:16,4096:4096:1024:16,32768:32768:1024:16")
    parser.add_argument("--changes", type=int, default=2, help="mask changes per size")
    args = parser.parse_args()
    if args.bin:
        g.BIN = os.path.abspath(args.bin)
    sizes = []
    for item in args.sizes.split(","):
        parts = item.split(":")
        if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts) or int(parts[2]) % int(parts[3]):
            raise SystemExit(f"app_timings.py: --sizes: '{item}' is not L:S:D:H with H dividing D")
        sizes.append(tuple(int(p) for p in parts))
    load = os.getloadavg()[0]
    print(f"attnscope app under Xvfb 1280x800, synthetic, causal; load average {load:.2f} at start")
    x = g.XServer()
    try:
        folder = g.scratch_dir("app-timings-")
        for size in sizes:
            mode, rows, rss = measure(x, folder, size, args.changes)
            print(f"L=S={size[0]} D={size[2]} H={size[3]}: {mode} path, peak RSS {rss:.0f} MiB")
            for what, seconds, compute_ms in rows:
                print(f"  {what:<28} {seconds:7.2f} s shown   (worker {compute_ms} ms)")
    finally:
        x.close()
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
