// Settings JSON (the app's settings.json, export --settings, the JSON beside each export):
// any bytes give Settings or an InputError naming the file; whatever loads must save and
// load back to the same JSON.
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "config/settings.h"
#include "fuzz_util.h"

namespace {
attnscope::fuzz::Scratch scratch;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = (scratch.fresh() / "settings.json").string();
  attnscope::fuzz::Scratch::write(path, data, size);
  attnscope::Settings settings;
  try {
    settings = attnscope::loadSettingsFile(path);
  } catch (const attnscope::InputError& e) {
    if (std::string(e.what()).find(path) == std::string::npos) std::abort();  // must name the file
    return 0;
  }
  const nlohmann::json saved = attnscope::settingsToJson(settings);
  if (attnscope::settingsToJson(attnscope::settingsFromJson(saved)) != saved) std::abort();
  return 0;
}
