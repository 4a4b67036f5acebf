#include "cli/run_options.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "attention/mistakes.h"
#include "cli/run_command.h"
#include "config/bundle.h"
#include "config/model_source.h"
#include "config/run.h"
#include "config/settings.h"
#include "tensor/text_file.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// Far above any real model; keeps heads * head_dim (the default D) from overflowing.
constexpr int64_t kMaxHeads = 1 << 20;

std::vector<int64_t> parseValidLens(const std::string& text) {
  std::vector<int64_t> lens;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0)
      throw UsageError("--valid-lens: '" + text + "' is not a comma-separated list of non-negative integers");
    lens.push_back(v);
  }
  if (lens.empty()) throw UsageError("--valid-lens: empty list");
  return lens;
}

// MaskSpec::parse's message without its own "mask: " prefix, for re-labelling.
std::string maskProblem(const InputError& e) {
  std::string why = e.what();
  return why.rfind("mask: ", 0) == 0 ? why.substr(6) : why;
}

MaskSpec parseMaskFlag(const std::string& text) {
  try {
    return MaskSpec::parse(text);
  } catch (const InputError& e) {
    throw UsageError("--mask: " + maskProblem(e));
  }
}

// Flags > bundle.json > defaults (H = 1 for a bundle, the demo's settings for --demo): the
// same settings `attnscope export` and the app build, turned into a run by configureRun().
Settings settingsFromFlags(const RunFlags& flags) {
  if (!flags.demo && isModelFolder(flags.bundle))
    throw InputError(flags.bundle + " is a model folder (config.json), not a bundle: run it with attnscope model run "
                                    "MODEL --text TEXT (or export/analyze MODEL --text TEXT)");
  Settings s = flags.demo ? Settings{} : settingsForBundle(bundleDefaults(), flags.bundle);
  if (flags.heads) s.heads = *flags.heads;
  if (flags.mask) s.mask = parseMaskFlag(*flags.mask);
  if (flags.fill) s.fill = maskFillNames().parse(*flags.fill);
  if (flags.scale) {
    const ScaleSetting scale = *scaleFromText(*flags.scale);
    s.scale = scale.choice;
    s.scale_factor = scale.factor;
  }
  if (flags.dropout) {
    s.dropout = *flags.dropout;
    s.train = s.dropout > 0;
  }
  if (flags.seed) s.seed = *flags.seed;
  if (flags.mistake) s.mistake = mistakeNames().parse(*flags.mistake);
  applyVariantFlags(flags.variants, s);
  return s;
}

bool ropeGiven(const VariantFlags& flags) { return flags.rope_option && flags.rope_option->count() > 0; }

// --rope's BASE, or the default 10000 when the flag has no value.
double ropeBase(const VariantFlags& flags) {
  const std::string text = flags.rope.empty() ? "" : flags.rope[0];
  if (text.empty()) return AttentionOptions{}.rope_base;
  char* end = nullptr;
  const double base = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(base) || base <= 1.0)
    throw UsageError("--rope: BASE '" + text + "' is not a number > 1 (e.g. --rope 10000, or --rope alone)");
  return base;
}

}  // namespace

bool anyVariantFlag(const VariantFlags& flags) {
  return flags.kv_heads || ropeGiven(flags) || flags.rope_style || flags.alibi || flags.softcap || flags.sinks;
}

void addVariantFlags(CLI::App& app, VariantFlags& flags) {
  app.add_option("--kv-heads", flags.kv_heads,
                 "K/V heads G for grouped-query attention (G divides H; 1 = MQA, H = MHA); "
                 "bundle weights w_k/w_v [G*d, Dk] give G themselves");
  flags.rope_option = app.add_option("--rope", flags.rope,
                                     "rotary position embeddings on q and k, inverse frequencies BASE^(-2i/d) "
                                     "(BASE default 10000)")
                          ->expected(0, 1);
  app.add_option("--rope-style", flags.rope_style, "RoPE pairs: half (LLaMA/Hugging Face, default) or interleaved (GPT-J)");
  app.add_flag("--alibi", flags.alibi, "ALiBi: bias -m_h |i - j| on the scaled scores (Press et al. slopes)");
  app.add_option("--softcap", flags.softcap, "logit soft-capping C * tanh(s / C) on the scaled scores (Gemma 2), C > 0");
  app.add_option("--sinks", flags.sinks,
                 "attention sinks: the first K keys stay visible through the window term of --mask (StreamingLLM)");
}

void checkVariantFlags(const VariantFlags& flags, const std::optional<std::string>& mask_text) {
  if (flags.kv_heads && (*flags.kv_heads < 1 || *flags.kv_heads > kMaxHeads))
    throw UsageError("--kv-heads: G must be in 1.." + std::to_string(kMaxHeads) + ", got " +
                     std::to_string(*flags.kv_heads));
  if (ropeGiven(flags)) ropeBase(flags);
  if (flags.rope_style) {
    if (!ropeStyleNames().find(*flags.rope_style))
      throw UsageError("--rope-style: '" + *flags.rope_style + "' is not one of " + ropeStyleNames().list());
    if (!ropeGiven(flags)) throw UsageError("--rope-style needs --rope");
  }
  if (flags.softcap && !(*flags.softcap > 0.0f && std::isfinite(*flags.softcap)))
    throw UsageError("--softcap: C must be a number > 0, got " + formatNumber(*flags.softcap));
  if (flags.sinks && *flags.sinks < 0) throw UsageError("--sinks: K must be >= 0, got " + std::to_string(*flags.sinks));
  if (flags.sinks && mask_text) {
    MaskSpec spec;
    try {
      spec = MaskSpec::parse(*mask_text);
    } catch (const InputError&) {
      return;  // the --mask check names that problem
    }
    if (spec.window < 0 && spec.causal_window < 0)
      throw UsageError("--sinks needs a window term in --mask (window:W or causal-window:W), got '" + *mask_text + "'");
  }
}

void applyVariantFlags(const VariantFlags& flags, Settings& s) {
  if (flags.kv_heads) s.kv_heads = *flags.kv_heads;
  if (ropeGiven(flags)) {
    s.rope = true;
    s.rope_base = static_cast<float>(ropeBase(flags));
  }
  if (flags.rope_style) s.rope_style = ropeStyleNames().parse(*flags.rope_style);
  if (flags.alibi) s.alibi = true;
  if (flags.softcap) s.softcap = *flags.softcap;
  if (flags.sinks) {
    s.mask.sinks = *flags.sinks;
    try {
      s.mask.checkSinks();
    } catch (const InputError& e) {
      throw InputError(std::string("--sinks: ") + (std::string(e.what()).rfind("mask: ", 0) == 0 ? e.what() + 6 : e.what()) +
                       " (the mask is '" + s.mask.toString() + "')");
    }
  }
}

std::string formatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

void addModelTextOptions(CLI::App& app, ModelTextFlags& flags) {
  auto* text = app.add_option("--text", flags.text, "the input text (one token per character, or per byte)");
  auto* file = app.add_option("--text-file", flags.text_file, "read the input text from a file (taken as is)");
  text->excludes(file);
  addTruncateOption(app, flags.truncate);
}

void addTruncateOption(CLI::App& app, std::optional<std::string>& truncate) {
  app.add_option("--truncate", truncate,
                 "a text longer than the model's context: 'start' drops tokens from its start (keeps the last ones), "
                 "'end' drops them from its end (keeps the first ones); without it such a text is refused");
}

std::string truncatedNote(Truncate truncate, int64_t kept, const char* unit) {
  return std::string("the text has more: --truncate ") + truncateNames().name(truncate) + " kept its " +
         (truncate == Truncate::Start ? "last " : "first ") + std::to_string(kept) + " " + unit;
}

Truncate truncateOf(const std::optional<std::string>& truncate, bool text_given) {
  if (!truncate) return Truncate::None;
  if (!text_given) throw UsageError("--truncate: only with --text or --text-file");
  const std::optional<Truncate> value = truncateNames().find(*truncate);
  if (!value || *value == Truncate::None) throw UsageError("--truncate: '" + *truncate + "' is not start or end");
  return *value;
}

std::string readModelText(const ModelTextFlags& flags) {
  if (flags.text) return *flags.text;
  // A model's context is at most 65536 characters: 16 MiB is far more than any run takes.
  return readSmallFile(*flags.text_file, 16u << 20, "a text for a model");
}

void addRunOptions(CLI::App& app, RunFlags& flags) {
  app.add_option("BUNDLE", flags.bundle, "bundle folder: query.npy [B,L,Dq], optional key/value/weights/masks");
  app.add_flag("--demo", flags.demo, "use the built-in text demo instead of a bundle");
  app.add_option("--heads", flags.heads, "number of heads H (must divide D)");
  app.add_option("--mask", flags.mask,
                 "none, or terms joined by '+': causal, causal-br, window:W, causal-window:W, sinks:K, prefix:P, "
                 "segments:n1,n2,..., padding");
  app.add_option("--mask-fill", flags.fill, "value for masked scores: inf (default, -inf) or 1e9 (-1e9)");
  app.add_option("--scale", flags.scale, "factor for Q K^T: a positive number, none, or default (1/sqrt(d))");
  app.add_option("--dropout", flags.dropout, "dropout p on probabilities in [0, 1) (train mode)");
  app.add_option("--seed", flags.seed, "seed for dropout and default weights");
  app.add_option("--valid-lens", flags.valid_lens, "per-batch valid key lengths, e.g. 3,2 (implies padding)");
  app.add_option("--mistake", flags.mistake, "run attention wrong on purpose (mistakes lab): " + mistakeNames().list());
  addVariantFlags(app, flags.variants);
}

void checkRunFlags(const RunFlags& flags) {
  if (flags.demo == !flags.bundle.empty())
    throw UsageError(flags.demo ? "give either BUNDLE or --demo, not both" : "give a BUNDLE folder or --demo");
  if (flags.fill && !maskFillNames().find(*flags.fill))
    throw UsageError("--mask-fill: '" + *flags.fill + "' is not one of " + maskFillNames().list());
  if (flags.scale && !scaleFromText(*flags.scale))
    throw UsageError("--scale: '" + *flags.scale + "' is not a positive number, none or default");
  if (flags.dropout && !(*flags.dropout >= 0.0f && *flags.dropout < 1.0f))
    throw UsageError("--dropout: p must be in [0, 1), got " + formatNumber(*flags.dropout));
  if (flags.heads && (*flags.heads < 1 || *flags.heads > kMaxHeads))
    throw UsageError("--heads: H must be in 1.." + std::to_string(kMaxHeads) + ", got " + std::to_string(*flags.heads));
  if (flags.mask) parseMaskFlag(*flags.mask);
  if (flags.valid_lens) parseValidLens(*flags.valid_lens);
  if (flags.mistake && !mistakeNames().find(*flags.mistake))
    throw UsageError("--mistake: " + mistakeNames().unknown(*flags.mistake));
  checkVariantFlags(flags.variants, flags.mask);
}

ConfiguredRun configureRunFromFlags(const RunFlags& flags) {
  const Settings settings = settingsFromFlags(flags);
  Run configured = configureRun(settings);
  ConfiguredRun run{std::move(configured.inputs), configured.options,
                    flags.demo ? "built-in demo (\"" + settings.text + "\")" : configured.source,
                    std::move(configured.notes), configured.tiled};
  std::vector<std::string>& notes = run.notes;
  AttentionInputs& inputs = run.inputs;
  AttentionOptions& options = run.options;
  std::string heads_origin = "--heads";
  if (!flags.heads && !flags.demo && readBundleMeta(flags.bundle).contains("heads"))
    heads_origin = (fs::path(flags.bundle) / "bundle.json").string() + ": \"heads\"";

  const int64_t B = inputs.query.dim(0), S = inputs.key.dim(1);
  const int64_t D = inputs.w_q.dim(0);
  if (D % options.heads != 0)
    throw InputError(heads_origin + " " + std::to_string(options.heads) + " does not divide the model size D=" +
                     std::to_string(D) + " (D % H must be 0)");
  const int64_t d = D / options.heads, kv_rows = inputs.w_k.dim(0);
  if (!flags.demo && kv_rows % d != 0)
    throw InputError((fs::path(flags.bundle) / "w_k.npy").string() + ": " + std::to_string(kv_rows) +
                     " rows, not a multiple of the head size d=" + std::to_string(d) + " (D=" + std::to_string(D) +
                     " / H=" + std::to_string(options.heads) + "; grouped-query weights are [G*d, Dk])");

  if (flags.valid_lens) {
    inputs.valid_lens = parseValidLens(*flags.valid_lens);
    if (static_cast<int64_t>(inputs.valid_lens.size()) != B)
      throw InputError("--valid-lens: " + std::to_string(inputs.valid_lens.size()) + " values but the batch has B=" +
                       std::to_string(B));
    for (int64_t len : inputs.valid_lens)
      if (len > S)
        throw InputError("--valid-lens: length " + std::to_string(len) + " exceeds the key length S=" +
                         std::to_string(S));
    if (!options.mask.padding) {
      options.mask.padding = true;
      notes.push_back("--valid-lens given: added 'padding' to the mask");
    }
  } else if (!inputs.valid_lens.empty() && !options.mask.padding) {
    notes.push_back("valid_lens.npy is not applied: add 'padding' to --mask to use it");
  }
  if (options.mask.padding && inputs.valid_lens.empty() && inputs.key_padding.empty())
    throw InputError("--mask padding: no valid lengths (give valid_lens.npy or key_padding.npy in the bundle, or --valid-lens)");

  return run;
}

void addInterventionOptions(CLI::App& app, InterventionFlags& flags) {
  app.add_option("--ablate", flags.ablate,
                 "ablate heads: L1H2 (its z set to 0 at every position), L0H1:mean (to its mean over the text), "
                 "L3H* (every head of layer 3), separated by commas");
  app.add_option("--knockout", flags.knockout,
                 "knock out attention: L1H0:9-2 (layer 1, head 0: query 9 may not attend to key 2; the score is -inf "
                 "before the softmax), L2H*:5-0 (every head of layer 2), separated by commas; positions from 0");
}

}  // namespace attnscope
