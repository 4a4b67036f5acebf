// The KV-cache stepper (F5): the sequence decoded one token at a time through a KV cache
// (the worker's decodeWithKvCache). Shows the step, the cache's size in bytes per head
// group and per layer, the new row of the map for the focused head and batch item, the
// keys evicted under sinks + window (grey) and how far the row is from the full map's.
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "analysis/cache_footprint.h"
#include "gui/features/stepper/stepper.h"
#include "gui/shell/panels.h"
#include "view/colormap.h"

namespace attnscope {
namespace {

// Evicted keys: darker than masked cells (kMaskedColor), so the two read apart.
constexpr Rgb kEvictedColor = {64, 64, 70};
constexpr ImU32 kSinkOutline = IM_COL32(255, 204, 77, 255);
constexpr float kRowHeight = 30.0f;

ImU32 toU32(const Rgb& c) { return IM_COL32(c[0], c[1], c[2], 255); }

void disabledWrapped(const std::string& text) {
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("%s", text.c_str());
  ImGui::PopTextWrapPos();
}

// "1536 B (1.5 KiB)"
std::string bytesText(uint64_t bytes) {
  char text[64];
  if (bytes < 1024) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    const bool mib = bytes >= 1024ull * 1024;
    std::snprintf(text, sizeof text, "%llu B (%.1f %s)", static_cast<unsigned long long>(bytes),
                  bytes / (mib ? 1048576.0 : 1024.0), mib ? "MiB" : "KiB");
  }
  return text;
}

// "0 1 2 ... 40 41" for a list of positions (first and last few when long).
std::string positionsText(const std::vector<int64_t>& positions) {
  std::string text;
  const size_t n = positions.size();
  for (size_t i = 0; i < n; ++i) {
    if (n > 12 && i == 5) {
      text += "... ";
      i = n - 5;
    }
    text += std::to_string(positions[i]) + " ";
  }
  return text.empty() ? "none" : text;
}

void stepButtons(AppState& state, int64_t steps) {
  StepperState& s = state.feature<StepperState>();
  const ImVec2 size(ImGui::GetFrameHeight() * 1.6f, 0);
  WidgetRects& rects = state.script.layout;
  if (ui::button(rects, "stepper_first", "|<", size)) setStep(state, 0);
  ImGui::SameLine();
  if (ui::button(rects, "stepper_back", "<", size)) setStep(state, s.step - 1);
  ImGui::SameLine();
  if (ui::button(rects, "stepper_play", s.playing ? "pause" : "play", ImVec2(size.x * 2.0f, 0))) {
    s.playing = !s.playing;
    if (s.playing && s.step + 1 >= steps) setStep(state, 0);
    s.next_step_at = std::chrono::steady_clock::now() + kStepperPlayInterval;
    markStateChanged(state);
  }
  ImGui::SameLine();
  if (ui::button(rects, "stepper_forward", ">", size)) setStep(state, s.step + 1);
  ImGui::SameLine();
  if (ui::button(rects, "stepper_last", ">|", size)) setStep(state, steps - 1);
  disabledWrapped("keys: , and . step, P plays, Home / End, F5 closes");
}

// Row `step` of the focused map, one cell per key 0..L-1: probabilities in the colour map
// (0 .. the row's largest), masked keys grey, evicted keys dark grey, keys not fed yet
// empty; the sinks outlined.
void drawRow(AppState& state, const KvCacheRun& run, const DecodeStep& step, int64_t b, int64_t h,
             const AttentionTrace* trace) {
  const int64_t L = run.L;
  const float* probs = &step.row_probs.data[(b * run.H + h) * L];
  const float row_max = std::max(*std::max_element(probs, probs + L), 1e-12f);
  const ImVec2 pos = ImGui::GetCursorScreenPos();
  const float width = ImGui::GetContentRegionAvail().x, cell = width / static_cast<float>(L);
  ImDrawList* list = ImGui::GetWindowDrawList();
  std::vector<uint8_t> evicted(L, 0);
  for (int64_t j : step.evicted) evicted[j] = 1;
  const bool same_run = trace && trace->mask.allowed.shape == Shape{run.B, L, L};
  const uint8_t* allowed = same_run ? &trace->mask.allowed.data[(b * L + step.position) * L] : nullptr;
  for (int64_t j = 0; j < L; ++j) {
    const ImVec2 a(pos.x + j * cell, pos.y), z(pos.x + (j + 1) * cell, pos.y + kRowHeight);
    if (j > step.position) {  // not fed yet
      list->AddRect(a, z, IM_COL32(70, 70, 78, 255));
      continue;
    }
    Rgb colour;
    if (evicted[j]) colour = kEvictedColor;
    else if (allowed && !allowed[j]) colour = kMaskedColor;
    else colour = colormapColor(state.settings.prob_colormap, probs[j], 0.0f, row_max);
    list->AddRectFilled(a, z, toU32(colour));
    if (j < run.sinks && cell >= 4.0f) list->AddRect(a, z, kSinkOutline, 0.0f, 0, 2.0f);
  }
  ui::dummy(state.script.layout, "stepper_row", ImVec2(width, kRowHeight));
  if (ImGui::IsItemHovered()) {
    const int64_t j = std::clamp<int64_t>(static_cast<int64_t>((ImGui::GetMousePos().x - pos.x) / cell), 0, L - 1);
    if (j > step.position) ImGui::SetTooltip("key %lld: not fed yet", static_cast<long long>(j));
    else if (evicted[j]) ImGui::SetTooltip("key %lld: evicted from the cache", static_cast<long long>(j));
    else ImGui::SetTooltip("key %lld: p = %.4g", static_cast<long long>(j), probs[j]);
  }
}

}  // namespace

// A model run: the KV cache while step `step` computes its row, per layer and in all: the
// keys that row may attend (sinks + window evict the rest); the numbers come from core
// (analysis/cache_footprint.h).
void drawModelCache(AppState& state, const ViewModel& v) {
  const int64_t t = std::clamp<int64_t>(state.feature<StepperState>().step, 0, v.L - 1);
  stepButtons(state, v.L);
  const std::string token = v.query_tokens.empty() ? "" : v.query_tokens[0][t];
  const CacheFootprint cache = cacheFootprint(v, t);
  char line[256];
  std::snprintf(line, sizeof line, "step %lld of %lld: token \"%s\" fed; %s", static_cast<long long>(t),
                static_cast<long long>(v.L), visibleToken(token).c_str(),
                cache.evicted == 0 ? ("the cache holds positions 0.." + std::to_string(t)).c_str()
                                   : "older keys outside the window evicted (per layer below)");
  ImGui::TextWrapped("%s", line);
  state.script.layout.recordText("stepper_step", line);
  sectionHeader("Cache per layer");
  if (ImGui::BeginTable("model_cache", 6, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    for (const char* name : {"layer", "entries", "evicted", "K/V heads", "head dim", "K+V"}) ImGui::TableSetupColumn(name);
    ImGui::TableHeadersRow();
    for (size_t l = 0; l < cache.layers.size(); ++l) {
      const CacheLayer& c = cache.layers[l];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%zu", l);
      for (int64_t n : {c.entries, c.evicted, c.kv_heads, c.head_dim}) {
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(n));
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(bytesText(c.bytes).c_str());
    }
    ui::endTable(state.script.layout, "stepper_model_cache");
  }
  ui::text(state.script.layout, "stepper_bytes", ui::plainText(), "all layers: %lld entries, %lld evicted, %s",
           static_cast<long long>(cache.entries), static_cast<long long>(cache.evicted), bytesText(cache.bytes).c_str());
  disabledWrapped("K+V per layer = 2 (K, V) x entries x K/V heads x head dim x 4 bytes (float32). Entries: the keys "
                  "this step's row may attend; under sinks K + window W (Generate's cache window, a model's "
                  "sliding window) the cache keeps K + W between steps and the older keys are evicted");
}

void advanceStepperPlay(AppState& state) {
  StepperState& s = state.feature<StepperState>();
  if (!s.open || !s.playing) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < s.next_step_at) return;
  s.next_step_at = now + kStepperPlayInterval;
  setStep(state, s.step + 1);  // stops playing at the last step
  markStateChanged(state);
}

void drawStepperPanel(AppState& state) {
  if (!state.feature<StepperState>().open) return;
  if (beginPanelWindow(state, "KV-cache stepper", "stepper")) {
    const ComputeState& c = state.compute;
    const KvCacheRun* run = c.decode().get();
    if (const ViewModel* model_run = modelRunShown(state)) {
      drawModelCache(state, *model_run);
    } else if (!run) {
      if (!c.decodeError().empty()) errorText(c.decodeError());
      else if (c.pending()) ImGui::TextDisabled("decoding...");
      else if (c.imported()) ImGui::TextWrapped("imported maps have no inputs to decode.");
      else if (!c.error().empty()) ImGui::TextDisabled("nothing to decode: the run failed.");
      else ImGui::TextDisabled("decoding...");
    } else {
      const int64_t t = std::clamp<int64_t>(state.feature<StepperState>().step, 0, run->L - 1);
      const DecodeStep& step = run->steps[t];
      const int64_t b = std::min(state.view.focus.batch_item, run->B - 1), h = std::min(state.view.focus.head, run->H - 1);
      const AttentionTrace* trace = c.trace();
      std::string token;
      if (trace && t < static_cast<int64_t>(trace->query_tokens.size())) token = trace->query_tokens[t];
      if (trace && b < static_cast<int64_t>(trace->batch_query_tokens.size())) token = trace->batch_query_tokens[b][t];
      stepButtons(state, run->L);
      // 0-based like every label, with the count: step 9 of 10 is the last.
      char line[256];
      std::snprintf(line, sizeof line, "step %lld of %lld: token \"%s\" fed; new row %lld (head %lld, item %lld)",
                    static_cast<long long>(t), static_cast<long long>(run->L), visibleToken(token).c_str(),
                    static_cast<long long>(t), static_cast<long long>(h), static_cast<long long>(b));
      ImGui::TextWrapped("%s", line);
      state.script.layout.recordText("stepper_step", line);
      drawRow(state, *run, step, b, h, trace);
      const int64_t entries = static_cast<int64_t>(step.cached.size());
      sectionHeader("Cache");
      if (run->capacity >= 0) {
        ImGui::TextWrapped("sinks k=%lld + window W=%lld: %lld entries kept between steps; this step used %lld",
                           static_cast<long long>(run->sinks), static_cast<long long>(run->window),
                           static_cast<long long>(run->capacity), static_cast<long long>(entries));
      } else {
        ImGui::TextWrapped("no window: nothing is evicted; this step used %lld entries", static_cast<long long>(entries));
      }
      ui::text(state.script.layout, "stepper_bytes", ui::plainText(), "K+V per head group: %s",
               bytesText(run->bytesPerGroup(entries)).c_str());
      ImGui::Text("K+V per layer (G=%lld): %s", static_cast<long long>(run->G),
                  bytesText(run->bytesPerLayer(entries)).c_str());
      disabledWrapped("= 2 (K, V) x B=" + std::to_string(run->B) + " x " + std::to_string(entries) + " entries x d=" +
                      std::to_string(run->d) + " x 4 bytes (x G per layer)");
      ImGui::TextWrapped("cached keys: %s", positionsText(step.cached).c_str());
      ImGui::TextWrapped("evicted so far (%zu): %s", step.evicted.size(), positionsText(step.evicted).c_str());
      if (t < static_cast<int64_t>(c.decodeRowDiff().size())) {
        ImGui::Text("row %lld vs the full causal map: max |dp| = %.2g", static_cast<long long>(t),
                    c.decodeRowDiff()[t]);
      }
    }
  }
  ImGui::End();
}

}  // namespace attnscope
