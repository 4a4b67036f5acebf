"""Signals and interrupted runs (issue 12): SIGTERM or SIGINT during `compute` leaves no
staging folder or temp file in --out, and a staging folder left by a run that was killed
(SIGKILL, power loss) is removed by the next run into that folder, while one that belongs
to a run still writing (its flock is held) is left alone.

The signal is sent at a known point, not in a race with the run: ATTNSCOPE_TEST_STAGING_HOLD_MS
holds the run once its first output file is staged, and the signal goes when that file is
seen in the staging folder (the run would go on after HOLD_MS without one)."""
import fcntl
import os
import signal
import subprocess
import time
import unittest

import numpy as np

import reference as ref

STAGING_PREFIX = ".attnscope-compute-"
HOLD_MS = 60000


def big_bundle(root):
    """A bundle whose outputs take a noticeable time to write (about 80 MB)."""
    rng = np.random.default_rng(7)
    path = os.path.join(root, "bundle")
    return ref.write_bundle(path, {"query": rng.standard_normal((1, 1500, 16)).astype(np.float32)})


def staging_folders(out):
    if not os.path.isdir(out):
        return []
    return [name for name in os.listdir(out) if name.startswith(STAGING_PREFIX)]


def staged_files(out):
    return [name for folder in staging_folders(out) for name in os.listdir(os.path.join(out, folder))]


def signal_while_staging(bundle, out, sig):
    """Starts compute held after staging its first file (HOLD_MS), sends sig once that file is in
    the staging folder; returns (exit code, the staged files the signal found)."""
    env = dict(os.environ, ATTNSCOPE_TEST_STAGING_HOLD_MS=str(HOLD_MS))
    proc = subprocess.Popen([ref.BIN, "compute", bundle, "--out", out, "--heads", "4"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    staged = []
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        staged = staged_files(out)
        if staged:
            proc.send_signal(sig)
            break
        time.sleep(0.005)
    proc.communicate(timeout=120)
    return proc.returncode, staged


class Interrupted(unittest.TestCase):
    def test_sigterm_and_sigint_during_compute_leave_nothing(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(signal=sig.name):
                root = ref.case_dir("interrupt", "signal_" + sig.name)
                bundle = big_bundle(root)
                out = os.path.join(root, "out")
                code, staged = signal_while_staging(bundle, out, sig)
                self.assertTrue(staged, "the run ended before its first file was staged")
                self.assertEqual(code, 128 + sig, "exit status after %s" % sig.name)
                left = [n for n in os.listdir(out) if n.startswith(".")]
                self.assertEqual(left, [], "hidden files left in --out after %s" % sig.name)

    def test_next_run_removes_a_killed_runs_staging_folder(self):
        root = ref.case_dir("interrupt", "sigkill")
        bundle = big_bundle(root)
        out = os.path.join(root, "out")
        code, staged = signal_while_staging(bundle, out, signal.SIGKILL)
        self.assertTrue(staged, "the run ended before its first file was staged")
        self.assertEqual(code, -signal.SIGKILL)
        self.assertTrue(staging_folders(out), "SIGKILL cannot clean up: the folder should still be there")
        result = ref.run_compute(["--demo", "--out", out])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(staging_folders(out), [])
        self.assertEqual(sorted(n for n in os.listdir(out) if n.startswith(".")), [])

    def test_abandoned_staging_removed_but_live_one_kept(self):
        root = ref.case_dir("interrupt", "abandoned")
        out = os.path.join(root, "out")
        abandoned = os.path.join(out, STAGING_PREFIX + "abc123")
        live = os.path.join(out, STAGING_PREFIX + "live42")
        for folder in (abandoned, live):
            os.makedirs(folder)
            with open(os.path.join(folder, "probs.npy"), "wb") as f:
                f.write(b"\0" * 4096)
        # A run still writing holds an exclusive flock on its staging folder.
        live_fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(live_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            result = ref.run_compute(["--demo", "--out", out])
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertFalse(os.path.exists(abandoned), "an abandoned staging folder was kept")
            self.assertTrue(os.path.exists(os.path.join(live, "probs.npy")), "a live run's staging folder was removed")
        finally:
            os.close(live_fd)
        for name in ref.OUTPUT_FILES:
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)


class OversizedBundle(unittest.TestCase):
    def test_export_names_the_file_that_is_too_large(self):
        # export goes through buildInputs (as the app does), not compute's own check.
        root = ref.case_dir("interrupt", "oversized_export")
        bundle = os.path.join(root, "bundle")
        os.makedirs(bundle)
        np.save(os.path.join(bundle, "query.npy"), np.zeros((1, 200000, 4), np.float32))
        result = subprocess.run([ref.BIN, "export", bundle, "--out", os.path.join(root, "out")],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
        self.assertIn(os.path.join(bundle, "query.npy") + " (B=1, L=200000, S=200000", result.stderr)
        self.assertIn("GiB", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(root, "out")))


if __name__ == "__main__":
    unittest.main()
