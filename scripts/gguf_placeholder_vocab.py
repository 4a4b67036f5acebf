#!/usr/bin/python3
"""A copy of a GGUF file with a placeholder `gpt2` vocabulary (one piece per embedding row, one
merge), for the bench beside llama.cpp: llama.cpp refuses to run a file without a tokenizer,
and tests/cli/gguf_convert.py writes `tokenizer.ggml.model` "none" for folders without a
SentencePiece model. The bench runs on token ids, so the pieces' text does not matter; the
weights and every other key are copied unchanged (attnscope's maps and logits are the same).
Usage: /usr/bin/python3 scripts/gguf_placeholder_vocab.py IN.gguf OUT.gguf [BUILD]
"""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    src, dst = sys.argv[1:3]
    build = sys.argv[3] if len(sys.argv) > 3 else os.path.join(ROOT, "build")
    sys.path.insert(0, os.path.join(build, "npm", "llama.cpp-v0.5.0", "gguf-py"))
    import gguf  # pylint: disable=import-outside-toplevel
    reader = gguf.GGUFReader(src)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    writer = gguf.GGUFWriter(dst, arch)
    for key, field in reader.fields.items():
        kind = field.types[0] if field.types else None
        if key.startswith(("GGUF.", "tokenizer.")) or key == "general.architecture" or kind == gguf.GGUFValueType.ARRAY:
            continue
        value = field.parts[field.data[0]]
        if kind == gguf.GGUFValueType.STRING:
            writer.add_string(key, bytes(value).decode())
        else:
            writer.add_key_value(key, value[0].item(), kind)
    rows = next(t for t in reader.tensors if t.name == "token_embd.weight").shape[1]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(["a", "b", "ab"] + ["t%d" % i for i in range(3, rows)])
    writer.add_token_types([1] * rows)
    writer.add_token_merges(["a b"])
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(1)
    for tensor in reader.tensors:
        writer.add_tensor(tensor.name, np.asarray(tensor.data), raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
