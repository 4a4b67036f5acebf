// NumPy .npz archives (np.savez and np.savez_compressed: a zip of NAME.npy members, stored
// or deflated), read through libzip. Messages name the archive and the member.
#pragma once

#include <string>
#include <vector>

#include "tensor/npy.h"
#include "tensor/tensor.h"

namespace attnscope {

// The array names in the archive: members "NAME.npy" as "NAME", in archive order.
// InputError naming the file when it is not a readable zip archive.
std::vector<std::string> npzArrayNames(const std::string& path);

// Array `name` (member NAME.npy) as float32, as readNpyFloat reads a file: float16/32/64,
// NaN/Inf refused naming the index, `check` called before the data is read. A corrupt
// member (CRC or inflate error, truncated) is an InputError naming the archive and member.
Tensor readNpzFloat(const std::string& path, const std::string& name, const NpyShapeCheck& check = {});

}  // namespace attnscope
