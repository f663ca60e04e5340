#pragma once
// What a test expects an error to say: the what() of the E that fn throws, "" when fn returns
// normally (an exception of another type propagates and fails the test).

#include <functional>
#include <string>

namespace omnidp::test {

template <typename E>
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

}  // namespace omnidp::test
