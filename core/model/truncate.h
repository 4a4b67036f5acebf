// What a run does with a text longer than the model's context (docs/cli.md, --truncate; the
// app's "use the first / last N tokens"): refuse it, or keep part of its tokens.
#pragma once

#include "registry/name_table.h"

namespace attnscope {

enum class Truncate {
  None,   // refuse: "the text has more than N tokens but ..."
  Start,  // drop tokens from the start: keep the last N
  End,    // drop tokens from the end: keep the first N
};
const NameTable<Truncate>& truncateNames();  // "none", "start", "end"

}  // namespace attnscope
