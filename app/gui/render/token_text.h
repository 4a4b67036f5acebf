// Token labels as the app draws them (axis labels, tooltips, query buttons, predictions):
// whitespace made visible. The labels themselves (state log, exports) keep their text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "view/view_model.h"

namespace attnscope {

// " " -> "␣" (U+2423), a newline (or the model labels' escaped "\n") -> "↵" (U+21B5);
// everything else as it is ("\\\\" stays an escaped backslash). shell/app_window.cpp
// merges both glyphs into the font atlas.
std::string visibleToken(const std::string& label);

// The raw vocabulary piece and id behind position `at` of batch item b, as tooltips write
// them: `piece "Ġcat"  id 3797` (control bytes as \xNN; no id part when unknown; an unknown
// token adds the text it stands for: `piece "[UNK]"  id 100  for "☃"`); "" when
// the view has no pieces (pieces: ViewModel::query_pieces or key_pieces, [B][n]).
std::string pieceNote(const std::vector<std::vector<TokenPiece>>& pieces, int64_t b, int64_t at);

// Characters of `labels` as drawn (visibleToken) that the current ImGui font has no glyph
// for, once each in order of appearance, as "U+0915". (ImGui 1.86 holds 16-bit characters:
// it reads one beyond U+FFFF as U+FFFD, which Symbola's glyph draws.)
std::vector<std::string> missingGlyphs(const std::vector<std::string>& labels);

}  // namespace attnscope
