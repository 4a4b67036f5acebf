// Each feature's own state, owned once by AppState and found by its type, so that the shell
// names no feature: a feature reads its struct through state.feature<ItsState>() (made,
// value-initialised, on first use; destroyed with the app, newest first). Shared state (the
// focus, the pin, the zoom) is the shell's own members instead (app_state.h, view_state.h).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace attnscope {

class FeatureStates {
 public:
  FeatureStates() = default;
  FeatureStates(const FeatureStates&) = delete;
  FeatureStates& operator=(const FeatureStates&) = delete;
  ~FeatureStates() {
    while (!slots_.empty()) slots_.pop_back();  // newest first, like members in reverse order
  }

  // The one T of this app (made on first use, also through a const AppState: the state log
  // may ask before the feature first ran).
  template <typename T>
  T& get() {
    return find<T>();
  }
  template <typename T>
  const T& get() const {
    return find<T>();
  }

 private:
  template <typename T>
  T& find() const {
    const size_t slot = slotOf<T>();
    if (slot >= slots_.size()) slots_.resize(slot + 1);
    if (!slots_[slot]) slots_[slot] = std::make_shared<T>();
    return *static_cast<T*>(slots_[slot].get());
  }
  static size_t nextSlot() {
    static size_t count = 0;
    return count++;
  }
  template <typename T>
  static size_t slotOf() {
    static const size_t slot = nextSlot();
    return slot;
  }
  // By slot; a state lives on the heap, so a reference to it outlives a resize.
  mutable std::vector<std::shared_ptr<void>> slots_;
};

}  // namespace attnscope
