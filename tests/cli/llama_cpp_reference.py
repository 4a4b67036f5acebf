"""Shared by tests/cli/test_gguf_*.py: llama.cpp's own code as the reference for GGUF files,
installed into the build folder by scripts/llama-cpp-reference.sh (npm's node-llama-cpp 3.22.1
and its prebuilt libllama; llama.cpp's source of the same release, cloned from the package's
git bundle: gguf-py's writer, reader and NumPy (de)quantizers). When it cannot be installed
the test fails, it does not skip.
"""
import os
import subprocess
import sys

TMP = os.environ.get("ATTNSCOPE_TEST_TMP", "/tmp/attnscope-test-tmp")
BUILD = os.path.dirname(os.path.abspath(TMP))
GGUF_BIN = os.environ.get("ATTNSCOPE_GGUF_BIN", "")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SOURCE = os.path.join(BUILD, "npm", "llama.cpp-v0.5.0")


def install():
    """The node-llama-cpp prefix (installed on first use)."""
    done = subprocess.run([os.path.join(ROOT, "scripts", "llama-cpp-reference.sh"), BUILD], capture_output=True,
                          text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError("scripts/llama-cpp-reference.sh could not install llama.cpp's reference: "
                             + (done.stderr.strip().splitlines() or ["no output"])[-1])
    return done.stdout.strip()


def gguf():
    """gguf-py (llama.cpp's Python package for GGUF), imported from the cloned source."""
    install()
    path = os.path.join(SOURCE, "gguf-py")
    if path not in sys.path:
        sys.path.insert(0, path)
    import gguf as module  # pylint: disable=import-outside-toplevel
    return module


def attnscope_gguf(path, out_dir=None):
    """(returncode, stdout, stderr) of the test-only attnscope_gguf tool."""
    command = [GGUF_BIN, path] + ([out_dir] if out_dir else [])
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout, done.stderr
