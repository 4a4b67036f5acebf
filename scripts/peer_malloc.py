"""PyTorch's memory allocator in its fastest correct configuration, for the bench scripts.

glibc gives every block of 128 KiB or more its own mmap and unmaps it when freed (the threshold
rises with freed blocks, but only up to 32 MiB), so eager PyTorch faults in fresh pages for
every large tensor of every run: a third of a GPT-2-sized forward at L = 1024 here. With
glibc's mmap and trim thresholds raised, freed tensors are reused from the heap and the same
runs take torch 1.13 1.35-1.45 s instead of 2.06-2.18 s (nn.MultiheadAttention: up to 1.5x
faster). glibc reads GLIBC_TUNABLES when a process starts, so `reexec` runs the script (which
runs torch) again with them. attnscope runs with the environment the script was given
(`attnscope_env`): the same tunables made its Llama-1B-sized first forward 7.6 s instead of 6 s.
"""
import os
import sys

REUSE = "glibc.malloc.mmap_threshold=4294967296:glibc.malloc.trim_threshold=4294967296"
CHOICES = ["reuse", "default"]
_GIVEN = "ATTNSCOPE_BENCH_GIVEN_TUNABLES"  # GLIBC_TUNABLES as the script was started ("-": unset)


def add_argument(parser):
    parser.add_argument("--malloc", choices=CHOICES, default="reuse",
                        help="glibc's allocator for PyTorch: reuse (freed blocks reused, its fastest; the default) "
                             "or default (as the environment configures it); attnscope runs as given")


def reexec(choice):
    """Starts this script again with the tunables `choice` asks for, unless it runs with them."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if choice == "reuse" and REUSE not in tunables:
        env = dict(os.environ, GLIBC_TUNABLES=":".join(t for t in (tunables, REUSE) if t))
        env[_GIVEN] = os.environ.get("GLIBC_TUNABLES", "-")
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def attnscope_env():
    """The environment the script was started with, for attnscope."""
    env = dict(os.environ)
    given = env.pop(_GIVEN, None)
    if given == "-":
        env.pop("GLIBC_TUNABLES", None)
    elif given is not None:
        env["GLIBC_TUNABLES"] = given
    return env


def torch_tunables():
    return os.environ.get("GLIBC_TUNABLES", "")


def describe():
    theirs = torch_tunables() or "(unset: glibc's defaults)"
    ours = attnscope_env().get("GLIBC_TUNABLES") or "(unset: glibc's defaults)"
    return "torch with GLIBC_TUNABLES=%s, attnscope with %s" % (theirs, ours)
