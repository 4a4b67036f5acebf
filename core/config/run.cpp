#include "config/run.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "analysis/head_table.h"
#include "attention/tiles.h"
#include "config/attention_bundle.h"
#include "config/bundle.h"
#include "config/inputs.h"
#include "config/model_source.h"
#include "model/folder_runner.h"
#include "tensor/memory.h"

namespace attnscope {
namespace {

// Far above any real model; keeps heads * head_dim (the default D) from overflowing.
constexpr int64_t kMaxHeads = 1 << 20;

std::string maskProblem(const InputError& e) {
  const std::string why = e.what();
  return why.rfind("mask: ", 0) == 0 ? why.substr(6) : why;
}

// The variant keys, spelled as the CLI flags: "kv_heads": G, "rope": true or BASE,
// "rope_style": "half" | "interleaved", "alibi": true, "softcap": C, "sinks": K.
// bad(key, why) throws.
void applyVariantKeys(const nlohmann::json& meta, const std::function<void(const char*, const std::string&)>& bad,
                      Settings& s) {
  auto get = [&](const char* key) -> const nlohmann::json* {
    const auto it = meta.find(key);
    return it == meta.end() || it->is_null() ? nullptr : &*it;
  };
  if (const auto* v = get("kv_heads")) {
    if (!v->is_number_integer() || v->get<int64_t>() < 1 || v->get<int64_t>() > kMaxHeads)
      bad("kv_heads", "must be an integer in 1.." + std::to_string(kMaxHeads));
    s.kv_heads = v->get<int64_t>();
  }
  if (const auto* v = get("rope")) {
    if (v->is_boolean()) {
      s.rope = v->get<bool>();
    } else if (v->is_number() && std::isfinite(v->get<double>()) && v->get<double>() > 1.0) {
      s.rope = true;
      s.rope_base = v->get<float>();
    } else {
      bad("rope", "must be true, false or a base > 1 such as 10000");
    }
  }
  if (const auto* v = get("rope_style")) {
    if (!v->is_string()) bad("rope_style", "must be " + ropeStyleNames().list(" or ", true));
    const std::optional<RopeStyle> style = ropeStyleNames().find(v->get<std::string>());
    if (!style) bad("rope_style", "is invalid: " + ropeStyleNames().unknown(v->get<std::string>()));
    s.rope_style = *style;
  }
  if (const auto* v = get("alibi")) {
    if (!v->is_boolean()) bad("alibi", "must be true or false");
    s.alibi = v->get<bool>();
  }
  if (const auto* v = get("softcap")) {
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() <= 0) bad("softcap", "must be a number > 0");
    s.softcap = v->get<float>();
  }
  if (const auto* v = get("sinks")) {
    if (!v->is_number_integer() || v->get<int64_t>() < 0) bad("sinks", "must be an integer >= 0");
    s.mask.sinks = v->get<int64_t>();
    try {
      s.mask.checkSinks();
    } catch (const InputError& e) {
      bad("sinks", "is invalid: " + maskProblem(e));
    }
  }
}

}  // namespace

void applyBundleRunKeys(const nlohmann::json& meta, const std::string& json_path, Settings& s) {
  auto bad = [&](const std::string& key, const std::string& why) {
    throw InputError(json_path + ": \"" + key + "\" " + why);
  };
  if (meta.contains("heads")) {
    const auto& h = meta["heads"];
    if (!h.is_number_integer() || h.get<int64_t>() < 1 || h.get<int64_t>() > kMaxHeads)
      bad("heads", "must be an integer in 1.." + std::to_string(kMaxHeads));
    s.heads = h.get<int64_t>();
  }
  if (meta.contains("mask")) {
    if (!meta["mask"].is_string()) bad("mask", "must be a string such as \"causal+padding\"");
    try {
      s.mask = MaskSpec::parse(meta["mask"].get<std::string>());
    } catch (const InputError& e) {
      bad("mask", "is invalid: " + maskProblem(e));
    }
  }
  if (meta.contains("scale")) {
    const auto& v = meta["scale"];
    const std::optional<ScaleSetting> scale = v.is_string() ? scaleFromText(v.get<std::string>())
                                              : v.is_number() ? scaleFromFactor(v.get<double>())
                                                              : std::nullopt;
    if (!scale) bad("scale", "must be \"none\", \"default\" or a positive number");
    s.scale = scale->choice;
    s.scale_factor = scale->factor;
  }
  if (meta.contains("fill")) {
    const auto& f = meta["fill"];
    std::optional<MaskFill> fill;
    if (f.is_string()) fill = maskFillNames().find(f.get<std::string>());
    else if (f.is_number() && std::fabs(f.get<double>()) == 1e9) fill = MaskFill::NegBillion;
    if (!fill) bad("fill", "must be " + maskFillNames().list(" or ", true));
    s.fill = *fill;
  }
  if (meta.contains("dropout")) {
    const auto& p = meta["dropout"];
    if (!p.is_number() || !(p.get<double>() >= 0 && p.get<double>() < 1)) bad("dropout", "must be a number in [0, 1)");
    s.dropout = p.get<float>();
    s.train = s.dropout > 0;
  }
  if (meta.contains("seed")) {
    if (!meta["seed"].is_number_unsigned()) bad("seed", "must be a non-negative integer");
    s.seed = meta["seed"].get<uint64_t>();
  }
  applyVariantKeys(meta, bad, s);
}

Settings bundleDefaults() {
  Settings settings;
  settings.heads = 1;
  return settings;
}

Settings settingsForBundle(Settings settings, const std::string& dir) {
  settings.source = InputSource::Bundle;
  settings.bundle_path = dir;
  if (bundleKind(dir) == BundleKind::Tensors)
    applyBundleRunKeys(readBundleMeta(dir), (std::filesystem::path(dir) / "bundle.json").string(), settings);
  return settings;
}

nlohmann::json exportSettingsJson(const Settings& settings, const ViewFocus& focus, const ViewModel& view) {
  nlohmann::json j = settingsToJson(settings, focus);
  if (settings.source != InputSource::Model) return j;
  // Every key a trained model's run does not read (the model fixes them, another source reads
  // them, or the patching view's own files do).
  static const char* const kSandboxKeys[] = {"patch_corrupt", "patch_answer", "patch_wrong",
      "text",  "cross_attention", "key_text", "synthetic_L", "synthetic_S", "batch",    "valid_lens",
      "bundle_path", "heads", "head_dim", "positional_encoding", "bias",  "seed",     "mask",
      "fill",  "scale",           "scale_factor", "temperature", "dropout", "train",  "mistake",
      "kv_heads", "rope",         "rope_base", "rope_style", "alibi",   "softcap"};
  for (const char* key : kSandboxKeys) j.erase(key);
  const int64_t layer = std::clamp<int64_t>(focus.layer, 0, std::max<int64_t>(view.layers - 1, 0));
  j["run"] = {{"model", view.model},
              {"layers", view.layers},
              {"heads", view.H},
              {"tokens", view.mapL()},
              {"mask", view.maps.empty() ? std::string() : view.maps[static_cast<size_t>(layer)].mask_name}};
  return j;
}

Run configureRun(const Settings& settings) {
  Run run;
  switch (settings.source) {
    case InputSource::Bundle: {
      if (!settings.bundle_path.empty() && bundleKind(settings.bundle_path) == BundleKind::Attentions)
        throw InputError(settings.bundle_path + ": holds attention maps computed elsewhere (attentions.npy/.npz), "
                                                "not inputs to compute; open it with attnscope or attnscope export");
      Bundle bundle = bundleInputs(settings);
      run.inputs = std::move(bundle.inputs);
      groupKeyValueHeads(settings, run.inputs);  // as buildInputs does
      run.source = "bundle " + settings.bundle_path;
      run.seeded_weights = !bundle.has_weights;
      if (!bundle.has_weights)
        run.notes.push_back("no w_q/w_k/w_v/w_o.npy: seeded default weights (seed " + std::to_string(settings.seed) +
                            ", D=" + std::to_string(run.inputs.w_q.dim(0)) + ")");
      if (bundle.meta.contains("notes") && bundle.meta["notes"].is_string())
        run.notes.push_back(bundle.meta["notes"].get<std::string>());
      break;
    }
    case InputSource::Synthetic:
      run.inputs = buildInputs(settings);
      run.source = "synthetic B=" + std::to_string(settings.batch) + " L=" + std::to_string(settings.synthetic_L) +
                   " S=" + std::to_string(settings.synthetic_S);
      break;
    case InputSource::Text:
      run.inputs = buildInputs(settings);
      run.source = "built-in demo (\"" + settings.text + "\")";
      break;
    case InputSource::Model:
      throw InputError(modelFolder(settings) + ": a trained model runs whole (buildView, attnscope model run), "
                                               "not as one attention layer");
  }
  // Bundles bring their own D (rows of w_q); the temperature scale needs the real one.
  run.options = attentionOptions(settings, run.inputs.w_q.dim(0));
  const AttentionInputs& in = run.inputs;
  if (in.query.shape.size() == 3 && in.key.shape.size() == 3 && in.value.shape.size() == 3 &&
      in.w_q.shape.size() == 2 && run.options.mistake == Mistake::None && !(run.options.train && run.options.dropout > 0)) {
    run.tiled = estimateTraceBytes(in.query.dim(0), in.query.dim(1), in.key.dim(1), in.w_q.dim(0), in.query.dim(2),
                                   in.key.dim(2), in.value.dim(2), run.options.heads) > fullPathBudgetBytes();
  }
  return run;
}

std::shared_ptr<const ViewModel> buildTiledView(Run& run, const std::function<bool(double)>& progress,
                                                TiledWorkspace* workspace) {
  const auto tiled = std::make_shared<const TiledAttention>(workspace ? workspace->prepare(run.inputs, run.options)
                                                                      : prepareTiled(run.inputs, run.options));
  const int64_t B = tiled->B, L = tiled->L, S = tiled->S;
  // [B][L] and [B][S] labels: per item when given, else shared, else the indices.
  std::vector<std::vector<std::string>> q_tokens, k_tokens;
  const AttentionInputs& in = run.inputs;
  for (int64_t b = 0; b < B; ++b) {
    q_tokens.push_back(static_cast<int64_t>(in.batch_query_tokens.size()) > b ? in.batch_query_tokens[b] : in.query_tokens);
    k_tokens.push_back(static_cast<int64_t>(in.batch_key_tokens.size()) > b ? in.batch_key_tokens[b] : in.key_tokens);
    q_tokens[b].resize(static_cast<size_t>(L));
    k_tokens[b].resize(static_cast<size_t>(S));
    for (int64_t i = 0; i < L; ++i) if (q_tokens[b][i].empty()) q_tokens[b][i] = std::to_string(i);
    for (int64_t j = 0; j < S; ++j) if (k_tokens[b][j].empty()) k_tokens[b][j] = std::to_string(j);
  }
  run.inputs = AttentionInputs();  // Q and K are projected: the inputs would only take memory
  // The head table's numbers, measured on the real maps in the same pass.
  const OverviewMeasures measures = headTableMeasures(L, S, q_tokens);
  std::optional<Overview> overview =
      computeOverview(*tiled, std::min(L, kTextureMaxSide), std::min(S, kTextureMaxSide), progress, measures);
  if (!overview) return nullptr;
  return std::make_shared<const ViewModel>(
      viewFromOverview(tiled, std::move(*overview), std::move(q_tokens), std::move(k_tokens)));
}

std::shared_ptr<const ViewModel> buildView(const Settings& settings, const ViewRunners& runners) {
  // Maps computed elsewhere (an attention bundle): nothing to run, only to show.
  if (settings.source == InputSource::Bundle && !settings.bundle_path.empty() &&
      bundleKind(settings.bundle_path) == BundleKind::Attentions)
    return std::make_shared<const ViewModel>(viewFromImported(loadAttentionBundle(settings.bundle_path)));
  if (settings.source == InputSource::Model) {
    if (runners.model) return runners.model(settings);
    return std::make_shared<const ViewModel>(viewOfModelFolder(modelFolder(settings), settings.model_text, settings.model_truncate,
                                                               parseInterventions(settings.model_ablate, settings.model_knockout),
                                                               runners.pooled_model_maps));
  }
  Run run = configureRun(settings);  // the one way settings become a run
  if (runners.core) return runners.core(std::move(run));
  return std::make_shared<const ViewModel>(
      viewFromTrace(std::make_shared<const AttentionTrace>(runAttention(run.inputs, run.options))));
}

}  // namespace attnscope
