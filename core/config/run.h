// Configure once: the one way a run is made. `attnscope compute`, `attnscope export`, the
// app's compute worker (and analyze) all call configureRun(), so the same settings give the
// same maps everywhere. A bundle's bundle.json enters through settingsForBundle(), once,
// when the bundle is opened: its values become the settings' (the user may change them after).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "attention/attention.h"
#include "config/settings.h"
#include "view/view_model.h"

namespace attnscope {

// Everything runAttention needs, plus what the user should be told about it.
struct Run {
  AttentionInputs inputs;
  AttentionOptions options;        // heads, scale (with the real D), mask, fill, dropout, seed
  std::string source;              // "built-in demo ("The cat ...")", "bundle DIR", "synthetic B=1 L=12 S=12"
  std::vector<std::string> notes;  // e.g. "no w_q/w_k/w_v/w_o.npy: seeded default weights (seed 0, D=16)"
  // The maps are too large for the app's full path (the trace would need more than
  // fullPathBudgetBytes()): the app shows them in tiles (attention/tiles.h). Never set for
  // a mistake or dropout, which need the full map. compute and export ignore it (the core
  // refuses sizes whose trace does not fit in memory, with the estimate).
  bool tiled = false;
  // w_q, w_k, w_v and w_o come from the seed (a text, synthetic inputs, a bundle without
  // them): the seed and the model size D apply.
  bool seeded_weights = true;
};

// What a bundle opened from the command line starts from: the default settings with H = 1
// (any D is divisible by 1), before bundle.json and the flags.
Settings bundleDefaults();

// base with source = Bundle, bundle_path = dir and DIR/bundle.json's run keys on top:
//   heads (integer >= 1), mask (mask text), scale ("none", "default" = 1/sqrt(d), or a
//   positive factor), fill ("inf" / "1e9", or the number -1e9), dropout (p in [0, 1), train
//   when > 0), seed (integer >= 0), and the variants: kv_heads (G >= 1), rope (true, false or
//   a base > 1), rope_style ("half" / "interleaved"), alibi (true / false), softcap (C > 0),
//   sinks (K >= 0, with a window term in the mask). Other keys (d_model, notes, model, layer_names) are read
//   where they apply. InputError naming bundle.json and the key for a wrong value. An
//   attention bundle (config/attention_bundle.h) has nothing to run: its run keys are ignored.
Settings settingsForBundle(Settings base, const std::string& dir);
// The same keys applied to settings from an already parsed bundle.json (json_path names it).
void applyBundleRunKeys(const nlohmann::json& meta, const std::string& json_path, Settings& settings);

// The settings JSON an export writes beside its files: settingsToJson(settings, focus), except
// that a trained model's run drops the sandbox's keys (its heads, mask, seed, text, ...: they
// describe no part of this run) and adds "run": {"model", "layers", "heads", "tokens",
// "mask"} of `view`, the run the files came from (mask: the focused layer's). Reopening it
// (--settings) gives the same model, text and focus.
nlohmann::json exportSettingsJson(const Settings& settings, const ViewFocus& focus, const ViewModel& view);

// Inputs for the settings' source and the options for them (temperature scale with the
// real D of a bundle). Throws InputError for bad settings or inputs, for sizes whose
// trace would not fit in memory (with the estimate), for an attention bundle and for a
// trained model (source Model: it runs whole, see buildView).
Run configureRun(const Settings& settings);

// The view of a tiled run (Run::tiled): Q and K projected once (prepareTiled, or taken over
// from the workspace's last run when given and its inputs are the same), then the overview
// of every head pooled to at most kTextureMaxSide per side (computeOverview; the app's focus
// view computes exact windows from it on demand). run.inputs are released once projected.
// progress as computeOverview's: returning false cancels, and the result is null. Throws
// InputError as prepareTiled does.
std::shared_ptr<const ViewModel> buildTiledView(Run& run, const std::function<bool(double)>& progress = {},
                                                TiledWorkspace* workspace = nullptr);

// How buildView runs the two sources that compute something. The app's compute worker
// passes its own (a model kept loaded from one keystroke to the next, buffers reused, tiles
// for large maps); an empty member takes the default: a fresh ModelRunner on model_text, or
// runAttention on configureRun's run.
struct ViewRunners {
  std::function<std::shared_ptr<const ViewModel>(const Settings&)> model;  // source Model
  std::function<std::shared_ptr<const ViewModel>(Run)> core;               // configureRun(settings)
  // Without a model runner: a long text's maps pooled only (viewOfModelFolder's pooled_maps).
  bool pooled_model_maps = false;
};

// What the settings show: an attention bundle's imported maps, a trained model's run on
// model_text (every layer, predictions; config/model_source.h), else the core trace of
// configureRun(settings) + runAttention (one layer). The one dispatch on the input source,
// for the CLI and the app alike. Throws InputError.
std::shared_ptr<const ViewModel> buildView(const Settings& settings, const ViewRunners& runners = {});

}  // namespace attnscope
