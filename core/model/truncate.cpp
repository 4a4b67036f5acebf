#include "model/truncate.h"

namespace attnscope {
namespace {

const struct TruncateRow {
  Truncate value;
  const char* name;
} kTruncateRows[] = {{Truncate::None, "none"}, {Truncate::Start, "start"}, {Truncate::End, "end"}};

}  // namespace

const NameTable<Truncate>& truncateNames() {
  static const NameTable<Truncate> table("truncation", kTruncateRows, &TruncateRow::value, &TruncateRow::name);
  return table;
}

}  // namespace attnscope
