#pragma once
// The text of an error as a user reads it: a library's message without the backtrace some
// libraries append to it (c10::Error, with TORCH_SHOW_CPP_STACKTRACES or in debug builds: the
// message, then "Exception raised from ..." and one "frame #N: ..." line per frame). A failed
// row stores the message; the log keeps the whole text. Pure functions, thread-safe.

#include <string>
#include <string_view>

namespace omnidp {

// `what` up to the first line that starts a backtrace ("Exception raised from ", "frame #0: ")
// with the line ends before it trimmed; `what` itself when it holds none.
[[nodiscard]] std::string without_backtrace(std::string_view what);

// True when `what` holds a backtrace that without_backtrace() removes.
[[nodiscard]] bool has_backtrace(std::string_view what);

// `text` as one line of a terminal: each control character (U+0000-U+001F, U+007F) written as
// an escape, \n \r \t or \xHH; everything else (UTF-8 included) kept. A value the user gave
// (an id, a key path, a YAML string) echoed in an error cannot break its line or move the
// cursor: "unknown key 'a\nb'" stays one line (issue 52, class 15).
[[nodiscard]] std::string one_line(std::string_view text);

}  // namespace omnidp
