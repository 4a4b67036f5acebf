// Attention masks: composable terms, each an allowed/blocked pattern over [L, S].
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "registry/name_table.h"
#include "tensor/tensor.h"

namespace attnscope {

// A mask specification: every active term must allow (i, j) for query i to attend key j.
// Text form (CLI --mask, settings): "none" or terms joined by '+':
//   causal           j <= i                 (torch.triu(full(-inf), diagonal=1), top-left aligned)
//   causal-br        j <= i + S - L         (bottom-right aligned, decoding with a KV cache)
//   window:W         |i - j| <= W
//   causal-window:W  i - W <= j <= i
//   sinks:K          with a window term: keys j < K stay visible through it (StreamingLLM
//                    attention sinks): window:W | j < K, causal-window:W -> j <= i and
//                    (i - j <= W or j < K)
//   prefix:P         j < P or j <= i        (prefix-LM: bidirectional prefix, causal after)
//   segments:n1,n2,.. query and key in the same document segment (block diagonal);
//                    positions past n1+n2+... form one trailing segment
//   padding          key j < valid_len[b]   (valid lengths or key_padding from the inputs)
struct MaskSpec {
  bool causal = false;
  bool causal_bottom_right = false;
  int64_t window = -1;         // -1 = off
  int64_t causal_window = -1;  // -1 = off
  int64_t prefix = -1;         // -1 = off
  std::vector<int64_t> segments;  // empty = off
  bool padding = false;
  int64_t sinks = -1;          // -1 = off; needs window or causal_window

  // Throws InputError naming the bad term, e.g. "mask: unknown term 'casual'".
  static MaskSpec parse(const std::string& text);
  std::string toString() const;  // canonical text form, "none" when empty
  std::string shortName() const;  // for file names: "causal", "causal+window3", "nomask"
  bool any() const;
  void checkSinks() const;  // InputError when sinks are set without a window term
  bool operator==(const MaskSpec& other) const;
};

// One kind of mask term: a row of the one table that parse, toString, shortName, any, ==,
// maskTerms, the app's mask panel and the tests' references read. A new term is a MaskSpec
// field, a row here (mask.cpp kTermRows) and its predicate there.
struct MaskTermKind {
  const char* name;        // text form: "causal", "window" (then ":W")
  const char* arg;         // what the argument is: "" (none), "W", "K", "P", "n1,n2,..."
  const char* short_name;  // file names: "causalbr", "window" (then the value)
  const char* label;       // the app's mask panel: "causal bottom-right", "window W"
  // The MaskSpec field, exactly one of: a flag, a count (-1 = off) or lengths (empty = off).
  bool MaskSpec::*flag;
  int64_t MaskSpec::*count;
  std::vector<int64_t> MaskSpec::*lengths;
  const char* values;  // lengths only: what they are in messages, "segment lengths"
  bool masks;          // false: it only widens other terms (sinks), so any() does not count it

  bool active(const MaskSpec& spec) const;
  // "" for a flag, "3" for a count, "4,6" for lengths joined by `separator`.
  std::string valueText(const MaskSpec& spec, const char* separator) const;
};
// Every kind, in the canonical order of toString().
const std::vector<MaskTermKind>& maskTermKinds();

enum class MaskFill { NegInf, NegBillion };  // -inf (seed 002, additive) or -1e9 (seeds 000/003)
// The fill's name in settings, flags and bundle.json: "inf" / "1e9"; the table also takes
// "-inf" / "-1e9" (the sign is implied: masked scores go down).
const NameTable<MaskFill>& maskFillNames();
const char* maskFillName(MaskFill fill);  // maskFillNames().name(fill)

// One named mask term evaluated for every batch item.
struct MaskComponent {
  std::string name;     // "causal", "window:3", "padding", "attn_mask", ...
  BoolTensor allowed;   // [B, L, S], 1 = may attend
};

// Combined mask and its parts.
struct MaskSet {
  BoolTensor allowed;                     // [B, L, S], AND of all components (all 1 if none)
  std::vector<MaskComponent> components;  // in spec order, then explicit attn_mask / key_padding
};

// One mask term as a row predicate, so long maps never hold [B, L, S]: row(b, i, out)
// writes out[j] = 1 where query i of batch item b may attend key j, for j in [0, S).
struct MaskTerm {
  std::string name;  // as in MaskComponent
  std::function<void(int64_t b, int64_t i, uint8_t* out)> row;
};

// The active terms, in the order buildMasks lists its components (same arguments and
// InputErrors as buildMasks). Tensors from files are shared by the terms, not copied.
std::vector<MaskTerm> maskTerms(const MaskSpec& spec, int64_t B, int64_t L, int64_t S,
                                const std::vector<int64_t>& valid_lens, const BoolTensor& key_padding,
                                const BoolTensor& attn_mask);
// row [S] = AND of every term for query i of item b (all 1 without terms). scratch: reused.
void maskRow(const std::vector<MaskTerm>& terms, int64_t b, int64_t i, int64_t S, uint8_t* row,
             std::vector<uint8_t>& scratch);

// Builds the mask set. valid_lens: [B] or empty; key_padding: [B, S] or empty;
// attn_mask: [L, S] or [B, L, S] or empty. "padding" in the spec needs valid_lens or
// key_padding (InputError otherwise); an explicit key_padding/attn_mask is always applied.
MaskSet buildMasks(const MaskSpec& spec, int64_t B, int64_t L, int64_t S,
                   const std::vector<int64_t>& valid_lens, const BoolTensor& key_padding,
                   const BoolTensor& attn_mask);

}  // namespace attnscope
