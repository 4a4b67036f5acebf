#include "attention/mistakes.h"

#include <algorithm>
#include <stdexcept>

#include "attention/attention.h"
#include "attention/kernel.h"

namespace attnscope {
namespace {

struct MistakeInfo {
  Mistake mistake;
  const char* name;
  const char* effect;  // what goes wrong
  const char* source;  // the reference listing it comes from ("" for None)
  const char* fix;
};

constexpr MistakeInfo kMistakes[] = {
    {Mistake::None, "none", "correct multi-head attention", "", ""},
    {Mistake::FloorDivisionScale, "floor-div-scale",
     "scores // sqrt(d): floor division quantises scores to integers", "seed 000's full listing",
     "scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)"},
    {Mistake::KVReshapedWithQueryLength, "kv-reshape-with-L",
     "K and V viewed as [B, L, H, d] with the query length: breaks cross-attention when S != L", "seed 000's listing",
     "k = self.k_proj(k).view(B, S, H, d).transpose(1, 2)  # likewise v; S = k.size(1)"},
    {Mistake::NoHeadSplit, "no-head-split",
     "no view + transpose(1, 2): attention over the full D gives one map shared by every head", "seed 003, mistake 2",
     "q = self.q_proj(q).view(B, L, H, d).transpose(1, 2)  # likewise k, v with S"},
    {Mistake::SharedProjection, "shared-linear",
     "[nn.Linear(D, D)] * 4 is one layer used for q, k, v and o: self-attention scores turn symmetric", "seed 003, mistake 4",
     "self.linears = nn.ModuleList([nn.Linear(D, D) for _ in range(4)])"},
    {Mistake::NoScaling, "no-scale",
     "scores not divided by sqrt(d): softmax saturates towards one-hot rows", "seed 003, mistake 5",
     "scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)"},
    {Mistake::ReshapeWithoutTranspose, "no-contiguous",
     "heads merged by reshaping [B, H, L, d] without transpose(1, 2): output mixes positions across heads", "seed 003, mistake 6",
     "context = context.transpose(1, 2).contiguous().view(B, L, D)"},
    {Mistake::MaskNotBroadcast, "mask-not-broadcast",
     "[B, S] padding mask used without unsqueeze: it aligns as [1, 1, B, S], wrong rows or a RuntimeError", "seed 003, mistake 3",
     "mask = mask.unsqueeze(1).unsqueeze(2)  # [B, S] -> [B, 1, 1, S]"},
};

const MistakeInfo& mistakeInfo(Mistake mistake) {
  for (const MistakeInfo& info : kMistakes)
    if (info.mistake == mistake) return info;
  return kMistakes[0];
}

bool isPaddingComponent(const MaskComponent& c) { return c.name == "padding" || c.name == "key_padding"; }

Stage& findStage(std::vector<Stage>& stages, const char* name) {
  for (Stage& stage : stages)
    if (stage.name == name) return stage;
  throw std::logic_error(std::string("no stage ") + name);
}

}  // namespace

std::vector<Mistake> allMistakes() { return mistakeNames().values(); }

const char* mistakeName(Mistake mistake) { return mistakeInfo(mistake).name; }
std::string mistakeDescription(Mistake mistake) {
  const MistakeInfo& info = mistakeInfo(mistake);
  return *info.source ? std::string(info.effect) + " (" + info.source + ")" : info.effect;
}
const char* mistakeEffect(Mistake mistake) { return mistakeInfo(mistake).effect; }
const char* mistakeSource(Mistake mistake) { return mistakeInfo(mistake).source; }
const char* mistakeFix(Mistake mistake) { return mistakeInfo(mistake).fix; }

const NameTable<Mistake>& mistakeNames() {
  static const NameTable<Mistake> table("mistake", kMistakes, &MistakeInfo::mistake, &MistakeInfo::name);
  return table;
}

void checkMistakeHeads(const AttentionOptions& options, int64_t H, int64_t G) {
  if (G != H && (options.mistake == Mistake::SharedProjection || options.mistake == Mistake::NoHeadSplit ||
                 options.mistake == Mistake::KVReshapedWithQueryLength)) {
    throw InputError(std::string("mistake '") + mistakeName(options.mistake) +
                     "' needs as many K/V heads as query heads, got G=" + std::to_string(G) + " and H=" +
                     std::to_string(H));
  }
  if (options.mistake == Mistake::NoHeadSplit && (options.rope || options.alibi)) {
    throw InputError("mistake 'no-head-split' has no heads to apply RoPE or ALiBi per head; turn those off");
  }
}

void checkMistakeSizes(const AttentionOptions& options, const RunSizes& z) {
  if (options.mistake == Mistake::KVReshapedWithQueryLength && z.S != z.L) {
    // What k_proj(k).view(B, L, H, d) raises in PyTorch: B*S*D values do not fill B*L*H*d.
    throw InputError("RuntimeError: shape '" + shapeToString({z.B, z.L, z.H, z.d}) + "' is invalid for input of size " +
                     std::to_string(z.B * z.S * z.D) + " (seed 000 reshapes K/V with the query length; use S)");
  }
  if (options.mistake == Mistake::SharedProjection && (z.Dq != z.D || z.Dk != z.D || z.Dv != z.D)) {
    throw InputError("shared-linear: one nn.Linear(D, D) serves q, k, v and o, so query, key and value need D=" +
                     std::to_string(z.D) + " features each, got Dq=" + std::to_string(z.Dq) + ", Dk=" +
                     std::to_string(z.Dk) + ", Dv=" + std::to_string(z.Dv));
  }
}

// Seed 003's mistake 3: `scores + pad_mask` with pad_mask [B, S] not unsqueezed. Torch
// aligns it as [1, 1, B, S] against scores [B, H, L, S], so query row i gets batch item
// i's padding (B == L), the same row everywhere (B == 1, which is right), or an error.
// Rewrites the padding components to what that broadcast applies; returns the trace note.
std::string misbroadcastPadding(MaskSet& set, int64_t B, int64_t L, int64_t S, int64_t H) {
  bool any_padding = false;
  for (const MaskComponent& c : set.components) any_padding = any_padding || isPaddingComponent(c);
  if (!any_padding) return "no padding mask is active, so this mistake has no effect (add the padding mask term)";
  if (B != L && B != 1) {
    if (L == 1) {
      throw InputError("mask-not-broadcast: scores " + shapeToString({B, H, 1, S}) + " + mask " + shapeToString({B, S}) +
                       " silently broadcasts to " + shapeToString({B, H, B, S}) +
                       " (one query row per batch item) instead of raising; unsqueeze the mask to [B, 1, 1, S]");
    }
    throw InputError("RuntimeError: The size of tensor a (" + std::to_string(L) + ") must match the size of tensor b (" +
                     std::to_string(B) + ") at non-singleton dimension 2 (seed 003: a [B, S] padding mask needs "
                     "unsqueeze(1).unsqueeze(2) to [B, 1, 1, S])");
  }
  for (MaskComponent& c : set.components) {
    if (!isPaddingComponent(c)) continue;
    const BoolTensor right = c.allowed;  // [B, L, S], the same [S] row for every i of item b
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < L; ++i) {
        const uint8_t* pad_row = &right.data[((B == 1 ? 0 : i) * L) * S];  // pad_mask[i] (or [0])
        std::copy(pad_row, pad_row + S, &c.allowed.data[(b * L + i) * S]);
      }
    c.name += " (not broadcast)";
  }
  std::fill(set.allowed.data.begin(), set.allowed.data.end(), uint8_t{1});
  for (const MaskComponent& c : set.components)
    for (size_t n = 0; n < set.allowed.data.size(); ++n) set.allowed.data[n] &= c.allowed.data[n];
  return B == 1
             ? "B == 1: the [B, S] padding mask broadcasts as [1, 1, 1, S], which happens to be right"
             : "padding mask [B, S] broadcast as [1, 1, B, S]: query row i uses batch item i's padding";
}

// What the mistake did to these inputs, one line; `mask_note` comes from the mask step.
std::string mistakeNote(const AttentionTrace& t, const AttentionInputs& in, const std::string& mask_note) {
  switch (t.mistake) {
    case Mistake::None: return "";
    case Mistake::FloorDivisionScale:
      return "scores // sqrt(d) is floor division: every score is a whole number, so probabilities come in steps";
    case Mistake::KVReshapedWithQueryLength:
      return "S == L, so viewing K and V with the query length happens to give the right result; cross-attention "
             "with S != L raises";
    case Mistake::NoHeadSplit:
      return "heads never split: one [L, S] map over the full D, shown in every head slot";
    case Mistake::SharedProjection: {
      const bool self = in.key.data == in.query.data;
      return std::string("q, k, v and o all use w_q and b_q") +
             (self ? "; self-attention makes Q == K, so the scores are symmetric" : "");
    }
    case Mistake::NoScaling: return "scores not scaled (factor 1): softmax rows sharpen towards one-hot";
    case Mistake::ReshapeWithoutTranspose:
      return "attention maps are unchanged; context [B, H, L, d] reshaped to [B, L, D] without transpose mixes "
             "positions across heads, so the output is wrong";
    case Mistake::MaskNotBroadcast: return mask_note;
  }
  return "";
}

// The affected stages show the buggy line (marked "BUG") and the shape it really has.
void markMistakeStages(std::vector<Stage>& stages, const AttentionTrace& t) {
  const int64_t B = t.B, L = t.L, S = t.S, D = t.D, H = t.H, d = t.d;
  auto set = [&](const char* name, const char* op, const std::string& code, Shape shape) {
    Stage& stage = findStage(stages, name);
    stage.op = op;
    stage.code = code;
    stage.shape = std::move(shape);
  };
  switch (t.mistake) {
    case Mistake::None: break;
    case Mistake::FloorDivisionScale:
      set("scores", "matmul // sqrt(d)",
          "scores = torch.matmul(q, k.transpose(-2, -1)) // math.sqrt(d)  # BUG: // is floor division", {B, H, L, S});
      break;
    case Mistake::KVReshapedWithQueryLength:  // only reached when S == L
      set("k_view", "view", "k = k.view(B, L, H, d)  # BUG: L is the query length; works only because S == L",
          {B, L, H, d});
      set("v_view", "view", "v = v.view(B, L, H, d)  # BUG: L is the query length; works only because S == L",
          {B, L, H, d});
      break;
    case Mistake::NoHeadSplit:
      for (const char* x : {"q", "k", "v"}) {
        const std::string p(x);
        const Shape shape{B, p == "q" ? L : S, D};
        set((p + "_view").c_str(), "skipped", "# BUG: no " + p + ".view(B, T, H, d): heads never split", shape);
        set((p + "_transpose").c_str(), "skipped", "# BUG: no " + p + ".transpose(1, 2)", shape);
      }
      set("scores", "matmul * scale",
          findStage(stages, "scores").code + "  # BUG: q, k are [B, T, D]: one map for all heads", {B, L, S});
      findStage(stages, "masked_scores").shape = {B, L, S};
      findStage(stages, "probs").shape = {B, L, S};
      findStage(stages, "dropout").shape = {B, L, S};
      set("context_heads", "matmul", "context = torch.matmul(probs, v)  # BUG: [B, L, S] x [B, S, D]", {B, L, D});
      set("context_transpose", "skipped", "# no transpose: context is already [B, L, D]", {B, L, D});
      set("context_view", "skipped", "# no view: context is already [B, L, D]", {B, L, D});
      break;
    case Mistake::SharedProjection:
      set("q_proj", "linear", "q = self.linears[0](q)  # BUG: self.linears = [nn.Linear(D, D)] * 4 is one layer", {B, L, D});
      set("k_proj", "linear", "k = self.linears[1](k)  # BUG: the same layer (w_q, b_q) as linears[0]", {B, S, D});
      set("v_proj", "linear", "v = self.linears[2](v)  # BUG: the same layer (w_q, b_q) as linears[0]", {B, S, D});
      set("output", "linear", "output = self.linears[3](context)  # BUG: the same layer (w_q, b_q) again", {B, L, D});
      break;
    case Mistake::NoScaling:
      set("scores", "matmul", "scores = torch.matmul(q, k.transpose(-2, -1))  # BUG: no / math.sqrt(d)", {B, H, L, S});
      break;
    case Mistake::ReshapeWithoutTranspose:
      set("context_transpose", "skipped", "# BUG: no context.transpose(1, 2)", {B, H, L, d});
      set("context_view", "reshape",
          "context = context.reshape(B, L, D)  # BUG: [B, H, L, d] reshaped as is mixes heads and positions", {B, L, D});
      break;
    case Mistake::MaskNotBroadcast:
      for (const MaskComponent& c : t.mask.components) {
        if (c.name.find("(not broadcast)") == std::string::npos) continue;
        set("masked_scores", "+ pad_mask",
            "scores = scores + pad_mask  # BUG: pad_mask [B, S] broadcasts as [1, 1, B, S]; needs pad_mask[:, None, None, :]",
            {B, H, L, S});
        break;
      }
      break;
  }
}

}  // namespace attnscope
