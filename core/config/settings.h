// The one settings struct: everything a user can set in the app, saved as JSON and
// read back by `attnscope --settings FILE` and `attnscope export --settings FILE`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "attention/attention.h"
#include "view/colormap.h"

namespace attnscope {

enum class InputSource {
  Text,       // tokens from text (lines = batch items), seeded embeddings + positional encoding
  Synthetic,  // seeded random inputs of any L, S, B (large sizes)
  Bundle,     // a tensor bundle directory of .npy files
};

enum class ScaleChoice { InvSqrtD, None, Temperature };

struct Settings {
  // input
  InputSource source = InputSource::Text;
  std::string text = "The cat sat on the mat because it was tired";  // one line per batch item
  bool cross_attention = false;                   // text mode: K/V from key_text (L != S)
  std::string key_text = "Le chat est assis sur le tapis";
  int64_t synthetic_L = 12;                       // synthetic mode sizes
  int64_t synthetic_S = 12;
  int64_t batch = 1;                              // synthetic mode batch size
  std::vector<int64_t> valid_lens;                // per batch item; empty = full length
  std::string bundle_path;

  // model
  int64_t heads = 4;
  int64_t head_dim = 16;                          // D = heads * head_dim (text / synthetic)
  bool positional_encoding = true;
  bool bias = true;
  uint64_t seed = 0;

  // attention
  MaskSpec mask;
  MaskFill fill = MaskFill::NegInf;
  ScaleChoice scale = ScaleChoice::InvSqrtD;
  float temperature = 1.0f;                       // ScaleChoice::Temperature: scores / (T sqrt(d))
  float dropout = 0.0f;
  bool train = false;
  Mistake mistake = Mistake::None;                // mistakes lab (JSON "mistake": mistakeName)

  // view
  int64_t batch_item = 0;
  int64_t focused_head = 0;
  Colormap prob_colormap = Colormap::Viridis;
  bool log_scale = false;
  bool folded_layout = false;

  // export
  std::string export_dir;                         // empty = ~/Pictures/attnscope
  int64_t cell_px = 0;                            // 0 = auto (matrix >= 512 px)
  std::vector<std::string> export_formats = {"png"};  // subset of exportFormatNames()

  int64_t modelDim() const { return heads * head_dim; }
};

// Every figure format the exporter writes, in the order the app lists them.
std::vector<std::string> exportFormatNames();  // {"png", "svg", "pdf", "npy", "csv"}

nlohmann::json settingsToJson(const Settings& settings);
// Unknown keys are ignored; wrong types or values throw InputError naming the key.
Settings settingsFromJson(const nlohmann::json& json);
Settings loadSettingsFile(const std::string& path);      // InputError on a bad file
void saveSettingsFile(const Settings& settings, const std::string& path);  // atomic

// Temperature scale = 1 / (T sqrt(d)) with d = model_dim / heads. The one-argument form
// uses settings.modelDim(); pass the real D for bundles (D comes from their weights).
// Throws InputError when temperature <= 0 or heads < 1.
AttentionOptions attentionOptions(const Settings& settings);
AttentionOptions attentionOptions(const Settings& settings, int64_t model_dim);

// Builds the attention inputs the settings describe (text, synthetic or bundle).
// Throws InputError for bad settings (no tokens, too large, bad bundle, ...).
AttentionInputs buildInputs(const Settings& settings);

}  // namespace attnscope
