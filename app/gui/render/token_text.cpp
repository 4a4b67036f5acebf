#include "gui/render/token_text.h"

#include <imgui.h>
#include <imgui_internal.h>  // ImTextCharFromUtf8

#include <algorithm>
#include <cstdio>

namespace attnscope {

std::string visibleToken(const std::string& label) {
  constexpr const char* kSpace = "\u2423";
  constexpr const char* kNewline = "\u21b5";
  std::string out;
  out.reserve(label.size());
  for (size_t i = 0; i < label.size(); ++i) {
    const char c = label[i];
    if (c == ' ') {
      out += kSpace;
    } else if (c == '\n') {
      out += kNewline;
    } else if (c == '\\' && i + 1 < label.size()) {  // an escape of the model labels: "\n", "\\", "\t", "\xNN"
      if (label[i + 1] == 'n') out += kNewline;
      else out += label.substr(i, 2);
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

// "text" with control bytes as \xNN.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\x%02X", static_cast<unsigned char>(c));
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7F ? std::string(escaped) : std::string(1, c);
  }
  return out + "\"";
}

}  // namespace

std::string pieceNote(const std::vector<std::vector<TokenPiece>>& pieces, int64_t b, int64_t at) {
  if (b < 0 || b >= static_cast<int64_t>(pieces.size())) return "";
  const std::vector<TokenPiece>& row = pieces[static_cast<size_t>(b)];
  if (at < 0 || at >= static_cast<int64_t>(row.size())) return "";
  const TokenPiece& piece = row[static_cast<size_t>(at)];
  std::string note = "piece " + quoted(piece.raw);
  if (piece.id >= 0) note += "  id " + std::to_string(piece.id);
  if (!piece.source.empty()) note += "  for " + quoted(piece.source);
  return note;
}

std::vector<std::string> missingGlyphs(const std::vector<std::string>& labels) {
  std::vector<std::string> missing;
  const ImFont* font = ImGui::GetFont();
  for (const std::string& label : labels) {
    const std::string shown = visibleToken(label);
    const char* text = shown.c_str();
    const char* end = text + shown.size();
    while (text < end) {
      unsigned int c = 0;
      text += std::max(1, ImTextCharFromUtf8(&c, text, end));
      if (font->FindGlyphNoFallback(static_cast<ImWchar>(c))) continue;
      char name[16];
      std::snprintf(name, sizeof name, "U+%04X", c);
      if (std::find(missing.begin(), missing.end(), name) == missing.end()) missing.push_back(name);
    }
  }
  return missing;
}

}  // namespace attnscope
