#include "omnidp/runtime/shared_dir.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/log.hpp"
#include "omnidp/runtime/protocol.hpp"

namespace omnidp::runtime {
namespace {

namespace fs = std::filesystem;

constexpr const char* kTokenPrefix = ".omnidp-shared-";
// A rank that does not find the token looks again for a while before it gives up, for
// network file systems whose clients see a new file a little late. Only a failing check waits.
constexpr int kReadAttempts = 20;
constexpr auto kReadRetry = std::chrono::milliseconds(100);
constexpr std::size_t kMaxListed = 8;

std::string make_nonce() {
  std::random_device device;
  std::ostringstream out;
  out << std::hex << std::setfill('0');
  for (int i = 0; i < 4; ++i) out << std::setw(8) << static_cast<std::uint32_t>(device());
  return out.str();
}

// Blocks until the next startup message; anything else is a protocol error.
Packet wait_packet(Transport& world) {
  for (;;) {
    if (auto packet = world.poll()) {
      if (packet->tag != kStartupTag) {
        throw RuntimeError(
            fmt::format("startup check of output.dir: unexpected message with tag {} from rank {}",
                        packet->tag, packet->source),
            {fmt::format("rank {}", world.rank())});
      }
      return std::move(*packet);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// Removes rank 0's token however the check ends.
class TokenFile {
 public:
  TokenFile() = default;
  ~TokenFile() { remove(); }
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  // Writes `nonce` into `path`; returns the error text, empty on success.
  [[nodiscard]] std::string write(const fs::path& path, const std::string& nonce) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return std::strerror(errno);
    path_ = path;
    out << nonce;
    out.close();
    if (!out) return std::strerror(errno);
    return {};
  }
  void remove() noexcept {
    if (path_.empty()) return;
    std::error_code ec;
    fs::remove(path_, ec);
    if (ec) log_warn("cannot remove the token file '" + path_.string() + "': " + ec.message());
    path_.clear();
  }

 private:
  fs::path path_;
};

// Empty when `token` holds `nonce`, else why not.
std::string read_token(const fs::path& token, const std::string& nonce) {
  std::string why;
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(kReadRetry);
    std::ifstream in(token, std::ios::binary);
    if (!in) {
      why = std::strerror(errno);
      continue;
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str() == nonce) return {};
    why = "the file holds another nonce";
  }
  return why;
}

struct Verdict {
  int rank = 0;
  std::string host;
  std::string reason;  // empty: the rank sees the token
};

std::vector<std::uint8_t> encode_outcome(bool ok, const std::string& message) {
  Encoder e;
  e.boolean(ok);
  e.str(message);
  return e.take();
}

}  // namespace

fs::path shared_dir_probe(const fs::path& dir) {
  fs::path p = fs::absolute(dir).lexically_normal();
  if (!p.has_filename() && p.has_relative_path()) p = p.parent_path();  // "a/b/"
  for (;;) {
    std::error_code ec;
    if (fs::exists(fs::status(p, ec))) return p;
    if (!p.has_relative_path()) return p;
    p = p.parent_path();
  }
}

void check_shared_output_dir(Transport& world, const fs::path& dir, const std::string& host) {
  const int rank = world.rank();
  const int size = world.size();
  if (size <= 1) return;
  const fs::path probe = shared_dir_probe(dir);

  if (rank == 0) {
    const std::string nonce = make_nonce();
    const fs::path token = probe / (kTokenPrefix + nonce);
    TokenFile file;
    const std::string write_error = file.write(token, nonce);
    Encoder start;
    start.boolean(write_error.empty());
    start.str(probe.string());
    start.str(write_error.empty() ? nonce : write_error);
    const auto start_bytes = start.take();
    for (int r = 1; r < size; ++r) world.send(r, kStartupTag, start_bytes);
    if (!write_error.empty()) {
      throw ConfigError("output.dir", "cannot write the shared-folder token '" + token.string() +
                                          "': " + write_error);
    }
    std::vector<Verdict> failed;
    for (int n = 1; n < size; ++n) {
      const Packet packet = wait_packet(world);
      Decoder d(packet.bytes);
      Verdict v;
      v.rank = packet.source;
      const bool ok = d.boolean();
      v.host = d.str();
      v.reason = d.str();
      d.finish();
      if (!ok) failed.push_back(std::move(v));
    }
    file.remove();
    std::string message;
    if (!failed.empty()) {
      std::sort(failed.begin(), failed.end(),
                [](const Verdict& a, const Verdict& b) { return a.rank < b.rank; });
      std::ostringstream m;
      m << "the output folder '" << dir.string() << "' is not shared by every rank: ";
      for (std::size_t i = 0; i < failed.size() && i < kMaxListed; ++i) {
        const Verdict& v = failed[i];
        m << (i > 0 ? "; " : "") << "rank " << v.rank << " on host " << v.host
          << " does not see the token file '" << token.string() << "' that rank 0 on host " << host
          << " wrote (" << v.reason << ")";
      }
      if (failed.size() > kMaxListed)
        m << "; and " << failed.size() - kMaxListed << " more rank(s)";
      m << ". output.dir must be on a file system shared by all nodes (not a node-local folder "
           "such as /tmp or a local scratch disk)";
      message = m.str();
    }
    const auto outcome = encode_outcome(message.empty(), message);
    for (int r = 1; r < size; ++r) world.send(r, kStartupTag, outcome);
    world.flush();
    if (!message.empty()) throw ConfigError("output.dir", message);
    return;
  }

  // Every other rank: check rank 0's token, report, and wait for the outcome.
  const Packet start_packet = wait_packet(world);
  Decoder start(start_packet.bytes);
  const bool written = start.boolean();
  const fs::path rank0_probe = start.str();
  const std::string nonce_or_error = start.str();
  start.finish();
  if (!written) {
    throw ConfigError("output.dir", "cannot write the shared-folder token in '" +
                                        rank0_probe.string() + "': " + nonce_or_error);
  }
  std::string reason;
  if (probe != rank0_probe) {
    reason = "its nearest existing folder of '" + dir.string() + "' is '" + probe.string() +
             "', rank 0's is '" + rank0_probe.string() + "'";
  } else {
    reason = read_token(rank0_probe / (kTokenPrefix + nonce_or_error), nonce_or_error);
  }
  Encoder verdict;
  verdict.boolean(reason.empty());
  verdict.str(host);
  verdict.str(reason);
  world.send(0, kStartupTag, verdict.take());
  const Packet outcome_packet = wait_packet(world);
  Decoder outcome(outcome_packet.bytes);
  const bool ok = outcome.boolean();
  const std::string message = outcome.str();
  outcome.finish();
  world.flush();
  if (!ok) throw ConfigError("output.dir", message);
}

}  // namespace omnidp::runtime
