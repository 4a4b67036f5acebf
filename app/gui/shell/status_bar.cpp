// Bottom line: sizes, the last recompute time, memory in use, and a spinner while busy.
#include <imgui.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "gui/jobs/compute_sync.h"
#include "gui/shell/panels.h"
#include "model/local_models.h"

namespace attnscope {
namespace {

// Resident set size from /proc/self/statm (second field, in pages).
double residentMiB() {
  std::FILE* file = std::fopen("/proc/self/statm", "r");
  if (!file) return 0.0;
  unsigned long long total = 0, resident = 0;
  const int read = std::fscanf(file, "%llu %llu", &total, &resident);
  std::fclose(file);
  if (read != 2) return 0.0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// A tiled overview or a load: progress and Cancel (Escape).
void drawProgress(AppState& state) {
  WidgetRects& rects = state.script.layout;
  const bool loading = state.compute.loading;
  char label[160];
  if (loading) {
    std::snprintf(label, sizeof label, "loading %s: weights %.0f%%",
                  fitText(modelShortName(state.compute.posted_settings.model), 120).c_str(),
                  100.0 * state.compute.progress);
  } else {
    std::snprintf(label, sizeof label, "overview of every head %.0f%%", 100.0 * state.compute.progress);
  }
  ui::progressBar(rects, loading ? "load_progress" : "overview_progress", static_cast<float>(state.compute.progress),
                  ImVec2(loading ? 320 : 260, 0), label);
  ImGui::SameLine();
  if (ui::smallButton(rects, loading ? "load_cancel" : "overview_cancel", "Cancel") && cancelCompute(state.compute))
    markStateChanged(state);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(loading ? "stop loading the model folder (Escape); the model shown stays"
                              : "stop computing the overview (Escape); the maps shown stay");
  ImGui::SameLine();
}

}  // namespace

void drawStatusBar(AppState& state) {
  if (beginPanelWindow("##status", statusBarRect(),
                       ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar)) {
    WidgetRects& rects = state.script.layout;
    if (state.compute.progress >= 0.0) drawProgress(state);
    if (state.compute.busy) {  // a recompute has run for more than ~100 ms
      drawSpinner(rects, "spinner", ImGui::GetTextLineHeight() / 2 + 1);
      ImGui::SameLine();
      ImGui::TextColored(ImVec4(1.0f, 0.8f, 0.3f, 1.0f), "computing... %.1f s",
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - state.compute.posted_at).count());
      ImGui::SameLine();
    }
    const ViewModel* v = state.compute.view.get();
    if (const AttentionTrace* t = state.compute.trace()) {
      ImGui::Text("B=%lld  L=%lld  S=%lld  D=%lld  H=%lld  d=%lld   |   recompute %.1f ms   |   memory %.0f MiB",
                  static_cast<long long>(t->B), static_cast<long long>(t->L), static_cast<long long>(t->S),
                  static_cast<long long>(t->D), static_cast<long long>(t->H), static_cast<long long>(t->d),
                  state.compute.compute_ms, residentMiB());
    } else if (v && v->tiled) {
      ImGui::Text("tiled: B=%lld  L=%lld  S=%lld  H=%lld   |   overview %lldx%lld of every head %.1f s   |   memory %.0f MiB",
                  static_cast<long long>(v->B), static_cast<long long>(v->tiled->L), static_cast<long long>(v->tiled->S),
                  static_cast<long long>(v->H), static_cast<long long>(v->L), static_cast<long long>(v->S),
                  state.compute.compute_ms / 1000.0, residentMiB());
    } else if (v && v->source == ViewSource::ModelRun) {
      ImGui::Text("model %s: layers=%lld  H=%lld  L=%lld (context %lld)   |   run %.1f ms   |   memory %.0f MiB",
                  v->model.c_str(), static_cast<long long>(v->layers), static_cast<long long>(v->H),
                  static_cast<long long>(v->L), static_cast<long long>(v->context), state.compute.compute_ms, residentMiB());
      if (!v->interventions.empty()) {  // the run is of an intervened model: say so beside its sizes
        ImGui::SameLine();
        ImGui::TextColored(kInterventionColor, "  |   %s", v->interventions.c_str());
      }
    } else if (v) {
      ImGui::Text("imported: layers=%lld  B=%lld  H=%lld  L=%lld  S=%lld   |   load %.1f ms   |   memory %.0f MiB",
                  static_cast<long long>(v->layers), static_cast<long long>(v->B), static_cast<long long>(v->H),
                  static_cast<long long>(v->L), static_cast<long long>(v->S), state.compute.compute_ms, residentMiB());
    } else {
      ImGui::Text("no result   |   memory %.0f MiB", residentMiB());
    }
    // A long error or warning is cut short of the hint at the right (the tooltip holds all of it).
    // While a text box has the keyboard, the arrows and the other keys are its own.
    const char* const hint = ImGui::GetIO().WantTextInput ? "text box has the keys (Esc leaves it; F1, Ctrl+S, Ctrl+Q work)"
                                                          : "F1: shortcuts";
    const float hint_x = ImGui::GetWindowWidth() - ImGui::GetStyle().WindowPadding.x - ImGui::CalcTextSize(hint).x;
    const auto drawNote = [&](const ImVec4& color, const std::string& text) {
      ImGui::SameLine(0.0f, 3 * ImGui::CalcTextSize(" ").x);
      const float room = hint_x - ImGui::GetStyle().ItemSpacing.x - ImGui::GetCursorPosX();
      ui::text(rects, "status_note", ui::coloredText(color), "%s", fitText(text, room).c_str());
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", text.c_str());
    };
    if (state.compute.mapsStale() && state.compute.cancelled) {
      ImGui::SameLine();
      ui::text(rects, "cancelled_note", ui::coloredText(ImVec4(1.0f, 0.45f, 0.4f, 1.0f)),
                      "   cancelled: the maps shown are the previous result's");
      ImGui::SameLine();
      if (ui::smallButton(rects, "recompute_button", "Recompute")) recompute(state);
    } else if (state.compute.mapsStale() && !state.compute.textTooLong()) {  // the numbers above are the previous result's
      drawNote(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "out of date: " + state.compute.error());
    } else if (!state.compute.load_cancelled.empty()) {
      drawNote(ImVec4(1.0f, 0.62f, 0.18f, 1.0f), "loading " + state.compute.load_cancelled + " cancelled: the model shown stays");
    } else if (!state.compute.load_failed.empty()) {
      drawNote(ImVec4(1.0f, 0.62f, 0.18f, 1.0f), "not loaded, the model shown stays: " + state.compute.load_error);
    } else if (v && !v->warnings.empty()) {
      drawNote(ImVec4(1.0f, 0.62f, 0.18f, 1.0f), v->warnings.front());
    }
    ImGui::SameLine(hint_x);
    ui::text(rects, "status_hint", ui::disabledText(), "%s", hint);
    state.script.layout.recordText("status_hint", hint);
  }
  ImGui::End();
}

}  // namespace attnscope
