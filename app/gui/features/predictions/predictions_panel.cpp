// A trained model's next-token predictions at one query position: the top 5 with their
// probabilities as bars, and whether the character that actually follows was the top
// guess. The numbers come from the view model (core/config/model_source); nothing is
// computed here.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "gui/features/predictions/predictions.h"
#include "gui/shell/panels.h"
#include "view/number_text.h"

namespace attnscope {
namespace {

constexpr ImU32 kBarColor = IM_COL32(76, 139, 230, 255);     // a guess's probability
constexpr ImU32 kActualColor = IM_COL32(70, 200, 100, 255);  // the guess that is the actual next character
const ImVec4 kHit(0.45f, 0.9f, 0.5f, 1.0f);
const ImVec4 kMiss(1.0f, 0.62f, 0.18f, 1.0f);
const ImVec4 kPinColor(1.0f, 0.8f, 0.2f, 1.0f);  // as the focused tile's outline
const ImVec4 kUp(0.45f, 0.9f, 0.5f, 1.0f), kDown(1.0f, 0.45f, 0.4f, 1.0f);  // a probability's change under interventions

// One guess: the token, a bar as long as its probability, the percentage; with `before` >= 0
// (interventions), "before% -> after%" and the change, coloured by its sign.
void drawGuessRow(AppState& state, int rank, const TokenGuess& guess, bool actual, float label_w, double before) {
  ImGui::AlignTextToFramePadding();
  ImGui::Text("%d.", rank + 1);
  ImGui::SameLine();
  const std::string quoted = "'" + visibleToken(guess.label) + "'";
  ImGui::TextUnformatted(quoted.c_str());
  ImGui::SameLine(label_w);
  const float percent_w = ImGui::CalcTextSize(before < 0 ? "0.00123%" : "0.00123% -> 0.00123% +100.0").x + 8.0f;
  const float bar_w = std::max(20.0f, ImGui::GetContentRegionAvail().x - percent_w);
  const float bar_h = ImGui::GetFrameHeight() - 6.0f;
  const ImVec2 pos = ImGui::GetCursorScreenPos();
  ImDrawList* list = ImGui::GetWindowDrawList();
  list->AddRectFilled(ImVec2(pos.x, pos.y + 3), ImVec2(pos.x + bar_w, pos.y + 3 + bar_h), IM_COL32(45, 47, 54, 255));
  const float filled = std::max(2.0f, bar_w * static_cast<float>(guess.prob));
  list->AddRectFilled(ImVec2(pos.x, pos.y + 3), ImVec2(pos.x + filled, pos.y + 3 + bar_h),
                      actual ? kActualColor : kBarColor);
  ui::dummy(state.script.layout, "prediction_row_" + std::to_string(rank), ImVec2(bar_w, ImGui::GetFrameHeight()));
  ImGui::SameLine();
  if (before < 0) {
    ImGui::TextUnformatted(percentText(guess.prob).c_str());
    return;
  }
  const double change = 100.0 * (guess.prob - before);
  ui::text(state.script.layout, "prediction_change_" + std::to_string(rank), ui::coloredText(change >= 0 ? kUp : kDown),
           "%s -> %s %+.1f", percentText(before).c_str(), percentText(guess.prob).c_str(), change);
}

// The pin (a clicked query row): where it is, and a button that clears it.
void drawPin(AppState& state) {
  if (state.view.selected_query < 0) return;
  ImGui::AlignTextToFramePadding();
  ImGui::TextColored(kPinColor, "pinned at position %lld", static_cast<long long>(state.view.selected_query));
  ImGui::SameLine();
  if (ui::smallButton(state.script.layout, "predictions_unpin", "unpin")) unpinQueryRow(state);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("follow the end of the text again (typing also unpins)");
}

// A generated position: the token the Generate control chose, and its rank when sampling
// picked one that was not the top guess.
void drawChosen(AppState& state, const NextTokenPredictions& p) {
  const std::string token = visibleToken(p.actual);
  if (p.actual_is_top)
    ui::text(state.script.layout, "predictions_actual", ui::TextLook{kHit, true}, "chosen '%s' (%.1f%%): the top guess",
             token.c_str(), 100.0 * p.actual_prob);
  else
    ui::text(state.script.layout, "predictions_actual", ui::TextLook{kMiss, true},
             "chosen '%s' (%.1f%%): sampled at rank %lld", token.c_str(), 100.0 * p.actual_prob,
             static_cast<long long>(p.actual_rank));
}

// The next-token tab: the top 5 at one query position.
void drawNextToken(AppState& state) {
  const ViewModel& v = *state.compute.view;
  const PredictionPosition at = predictionPosition(state);
  if (at.position < 0) {
    ImGui::TextWrapped("no predictions: fix the text (see the message in the control panel)");
    return;
  }
  const std::string& token = v.mapQueryTokens()[at.position];
  // An encoder's masked-LM head guesses the token at the position itself, not the next one.
  const std::string where = (v.encoder ? "at '" : "after '") + visibleToken(token) +
                            (v.encoder ? "' (position " : "' at position ") + std::to_string(at.position) +
                            (v.encoder ? ")" : "");
  ui::text(state.script.layout, "predictions_position", ui::plainText(), "%s", where.c_str());
  state.script.layout.recordText("predictions_position", where);
  const std::string why = std::string("(") + at.why + ")";
  sameLineIfFits(ImGui::CalcTextSize(why.c_str()).x);  // else on the next line
  ui::text(state.script.layout, "predictions_heading", ui::disabledText(), "%s", why.c_str());
  drawPin(state);
  const NextTokenPredictions* known = knownPredictions(state, at.position);
  if (!known && !v.more_predictions) {  // a generation bundle: steps.json holds the generated steps' only
    ui::textUnformatted(state.script.layout, "predictions_pending",
                        "not stored: the bundle holds the predictions before each generated token");
    return;
  }
  if (!known) {  // the run did not unembed this position: its block is computing (updatePredictions)
    const std::string& error = state.feature<PredictionsState>().later_error;
    const ImVec4 colour = error.empty() ? ImGui::GetStyle().Colors[ImGuiCol_TextDisabled] : kMiss;
    ui::text(state.script.layout, "predictions_pending", ui::TextLook{colour, true}, "%s",
             error.empty() ? "computing the predictions at this position..." : error.c_str());
    return;
  }
  const NextTokenPredictions& p = *known;
  float label_w = 0.0f;
  for (const TokenGuess& guess : p.top)
    label_w = std::max(label_w, ImGui::CalcTextSize(("5. '" + visibleToken(guess.label) + "'").c_str()).x);
  label_w += 2 * ImGui::GetStyle().ItemSpacing.x;
  for (size_t rank = 0; rank < p.top.size(); ++rank)
    drawGuessRow(state, static_cast<int>(rank), p.top[rank], !p.actual.empty() && p.top[rank].label == p.actual, label_w,
                 probabilityBefore(v, at.position, p.top[rank]));
  if (p.actual.empty()) {
    ui::text(state.script.layout, "predictions_actual", ui::TextLook{ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], true},
             "what the model expects next");  // the heading says "(last position)"
  } else if (chosenByGeneration(v, at.position)) {
    drawChosen(state, p);
  } else {  // wrapped: a long token must not run out of the panel
    ui::text(state.script.layout, "predictions_actual", ui::TextLook{p.actual_is_top ? kHit : kMiss, true},
             v.encoder ? "actual token '%s' (%.1f%%): %s" : "actual next '%s' (%.1f%%): %s", visibleToken(p.actual).c_str(), 100.0 * p.actual_prob,
             p.actual_is_top ? "the top guess" : "not the top guess");
  }
  ui::text(state.script.layout, "predictions_hint", ui::TextLook{ImGui::GetStyle().Colors[ImGuiCol_TextDisabled], true},
           "hover a map's row for its predictions; a click pins it until you type");
}

}  // namespace

// 30% of the column, and at least its tabs, 5 rows and the lines around them (a 1280 x 800
// window's 30% cut its hint).
float predictionsHeight(const AppState& state, const ColumnSpace& space) {
  const float fit = std::floor(2 * ImGui::GetFrameHeightWithSpacing() + 11 * ImGui::GetTextLineHeightWithSpacing());
  return chosenSize(state.view.panel_sizes.predictions, space.height, std::max(std::floor(space.height * 0.30f), fit),
                    kMinBand, space.height - 2 * kMinBand);
}

// Tabs: the next token at one position, then those other features add (the logit lens).
void drawPredictionsPanel(AppState& state) {
  if (!showsPredictions(state)) return;
  const char* title = state.compute.view->encoder ? "Masked-LM predictions###predictions" : "Next-token predictions###predictions";
  if (beginPanelWindow(state, title, "predictions") && ImGui::BeginTabBar("##predictions_tabs")) {
    state.script.layout.recordWindow("predictions_panel");
    const bool next_open = ui::beginTabItem(state.script.layout, "predictions_tab",
                                            state.compute.view->encoder ? "Masked LM###next" : "Next token###next");
    if (next_open) {
      drawNextToken(state);
      ImGui::EndTabItem();
    }
    drawPanelParts(state, "predictions");
    ImGui::EndTabBar();
  }
  ImGui::End();
}

}  // namespace attnscope
