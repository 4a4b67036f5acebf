// Trained models as an input source (Settings::source == InputSource::Model): where the
// shipped models are, which folder the settings' `model` names, and the view model of a
// model run (every layer's maps, next-token predictions, the caption of training.json).
// The app's worker, `attnscope export MODEL --text` and `attnscope MODEL` all go through here.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/settings.h"

namespace attnscope {

// The assets folder: $ATTNSCOPE_ASSETS when set, else the first of EXE_DIR/assets,
// EXE_DIR/../assets, EXE_DIR/../share/attnscope/assets and the source tree's assets/ that
// has a models/ folder; "" when none has.
std::string assetsDir();

// The models shipped in ASSETS/models (folders with a config.json), sorted by name.
struct ShippedModel {
  std::string name;    // the folder's name, e.g. "python-code"
  std::string folder;  // its path
};
std::vector<ShippedModel> shippedModels();

// A text that shows what a shipped model does (the default text when it is picked);
// "" for models without one.
std::string sampleText(const std::string& model_name);
// The text to show when switching to model_name: its sample when the current text is empty
// or another model's untouched sample, else the user's text (never lost).
std::string textForModel(const std::string& current, const std::string& model_name);

// True when dir holds a config.json (a model folder of either kind, not a tensor or
// attention bundle), is a GGUF file (model/gguf_model.h) or a store name (hf:ORG/NAME,
// ollama:NAME[:TAG], model/local_models.h; resolved where it loads): every place that takes a MODEL.
bool isModelFolder(const std::string& dir);

// The folder settings.model names: a path when it has a '/', a store name (hf:, ollama:) as it
// is, else ASSETS/models/NAME.
// InputError when a shipped model is missing, saying where it was looked for.
std::string modelFolder(const Settings& settings);

// base with source = Model, model = folder (made absolute; a store name, hf:ORG/NAME or
// ollama:NAME[:TAG], kept as it is and resolved again at each load; InputError for an unknown
// one) and model_text = text.
Settings settingsForModel(Settings base, const std::string& folder, const std::string& text);
// The same on base's own text, or the model's sample (textForModel): opening a folder in the app.
Settings settingsForModel(Settings base, const std::string& folder);

}  // namespace attnscope
