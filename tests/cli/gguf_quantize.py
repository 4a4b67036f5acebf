"""Test-only: requantizes a GGUF file with llama.cpp's own llama_model_quantize (the prebuilt
libllama of npm's @node-llama-cpp/linux-x64 3.22.1, through ctypes): K-quants, Q4_0, Q5_0 and
the rest, with llama.cpp's choice of type per tensor (rows shorter than 256 fall back).
Usage: /usr/bin/python3 gguf_quantize.py LIB_DIR IN.gguf OUT.gguf FTYPE   (FTYPE: a llama_ftype name)
"""
import ctypes
import glob
import os
import sys

# llama.h's enum llama_ftype (release v0.5.0).
FTYPES = {"Q4_0": 2, "Q4_1": 3, "Q5_0": 8, "Q5_1": 9, "Q8_0": 7, "Q2_K": 10, "Q3_K_M": 12, "Q4_K_M": 15,
          "Q5_K_M": 17, "Q6_K": 18, "IQ4_NL": 25, "IQ4_XS": 30}


class QuantizeParams(ctypes.Structure):  # llama_model_quantize_params, include/llama.h of v0.5.0
    _fields_ = [("nthread", ctypes.c_int32), ("ftype", ctypes.c_int), ("output_tensor_type", ctypes.c_int),
                ("token_embedding_type", ctypes.c_int), ("allow_requantize", ctypes.c_bool),
                ("quantize_output_tensor", ctypes.c_bool), ("only_copy", ctypes.c_bool), ("pure", ctypes.c_bool),
                ("keep_split", ctypes.c_bool), ("dry_run", ctypes.c_bool), ("imatrix", ctypes.c_void_p),
                ("kv_overrides", ctypes.c_void_p), ("tt_overrides", ctypes.c_void_p),
                ("prune_layers", ctypes.c_void_p), ("max_buf_size", ctypes.c_size_t)]


def main():
    lib_dir, src, dst, ftype = sys.argv[1:5]
    mode = ctypes.RTLD_GLOBAL
    ctypes.CDLL(os.path.join(lib_dir, "libggml-base.so"), mode=mode)
    ctypes.CDLL(glob.glob(os.path.join(lib_dir, "libggml.v*.so"))[0], mode=mode)
    llama = ctypes.CDLL(glob.glob(os.path.join(lib_dir, "libllama.v*.so"))[0], mode=mode)
    llama.llama_backend_init()
    llama.llama_model_quantize_default_params.restype = QuantizeParams
    params = llama.llama_model_quantize_default_params()
    params.ftype = FTYPES[ftype]
    params.nthread = 2
    llama.llama_model_quantize.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(QuantizeParams)]
    llama.llama_model_quantize.restype = ctypes.c_uint32
    code = llama.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(params))
    if code != 0:
        sys.exit(f"llama_model_quantize failed ({code})")


if __name__ == "__main__":
    main()
