"""The peer's memory allocator in its fastest correct configuration, for the bench scripts.

glibc gives every block of 128 KiB or more its own mmap and unmaps it when freed (the threshold
rises with freed blocks, but only up to 32 MiB), so eager PyTorch faults in fresh pages for
every large tensor of every run: a third of a GPT-2-sized forward at L = 1024 here. With
glibc's mmap and trim thresholds raised, freed tensors are reused from the heap and the same
runs take torch 1.13 1.35-1.43 s instead of 2.06-2.15 s (nn.MultiheadAttention: up to 1.5x
faster). glibc reads GLIBC_TUNABLES when a process starts, so `reexec` runs the script again
with them; attnscope, started by the script, inherits the same environment.
"""
import os
import sys

REUSE = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"
CHOICES = ["reuse", "default"]


def add_argument(parser):
    parser.add_argument("--malloc", choices=CHOICES, default="reuse",
                        help="glibc's allocator for both programs: reuse (freed blocks reused, the peer's fastest; "
                             "default) or default (glibc as configured)")


def reexec(choice):
    """Starts this script again with the tunables `choice` asks for, unless it already runs with them."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if choice == "reuse" and REUSE not in tunables:
        env = dict(os.environ, GLIBC_TUNABLES=":".join(t for t in (tunables, REUSE) if t))
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def describe():
    return "GLIBC_TUNABLES=" + (os.environ.get("GLIBC_TUNABLES") or "(unset: glibc's defaults)")
