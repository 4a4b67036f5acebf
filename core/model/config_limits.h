// Guards shared by both model-folder readers (attnscope-model/1 and Hugging Face): sizes a
// config.json may ask for, checked before any table is allocated or any tensor is read.
#pragma once

#include <cstdint>

namespace attnscope {

inline constexpr int64_t kMaxDim = 1 << 16;
inline constexpr int64_t kMaxLayers = 1024;
inline constexpr int64_t kMaxVocab = 1 << 24;

}  // namespace attnscope
