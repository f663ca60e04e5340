#include "omnidp/models/layers/fused_switch.hpp"

#include <atomic>

namespace omnidp::models {
namespace {
std::atomic<bool> g_fused{true};
}  // namespace

void set_fused_elementwise(bool on) noexcept { g_fused.store(on, std::memory_order_relaxed); }
bool fused_elementwise() noexcept { return g_fused.load(std::memory_order_relaxed); }

}  // namespace omnidp::models
