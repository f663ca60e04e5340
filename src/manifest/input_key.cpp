#include "omnidp/manifest/input_key.hpp"

#include <array>
#include <charconv>
#include <string_view>

#include "omnidp/common/sha256.hpp"

namespace omnidp {
namespace {

void append_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (byte < 0x20) {
          out += "\\u00";
          out += kHex[byte >> 4];
          out += kHex[byte & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

template <typename Int>
void append_integer(std::string& out, Int value) {
  std::array<char, 32> buf{};
  const auto result = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  out.append(buf.data(), result.ptr);
}

void append_double(std::string& out, double value) {
  if (value == 0.0) value = 0.0;  // -0 and 0 encode alike
  std::array<char, 64> buf{};
  const auto result = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  out.append(buf.data(), result.ptr);
}

}  // namespace

std::string canonical_encoding(const Request& request, const std::string& model_name,
                               const std::string& weights_identity) {
  std::string out = "[";
  append_string(out, "omnidp-input-key-v1");
  const auto next_string = [&out](std::string_view text) {
    out += ',';
    append_string(out, text);
  };
  const auto next_integer = [&out](auto value) {
    out += ',';
    append_integer(out, value);
  };
  const auto next_double = [&out](double value) {
    out += ',';
    append_double(out, value);
  };
  next_string(model_name);
  next_string(weights_identity);
  next_string(to_string(request.task));
  next_string(request.prompt);
  next_string(request.negative_prompt);
  next_integer(request.seed);
  next_integer(request.num_frames);
  next_integer(request.height);
  next_integer(request.width);
  next_integer(request.num_inference_steps);
  next_double(request.guidance_scale);
  next_double(request.flow_shift);
  next_string(request.image_sha256);
  next_string(request.prompt_embeds_sha256);
  // Appended only when set, so that the keys of every other request stay as they were.
  if (request.guidance_scale_2) {
    next_string("guidance_scale_2");
    next_double(*request.guidance_scale_2);
  }
  if (!request.last_image_sha256.empty()) {
    next_string("last_image");
    next_string(request.last_image_sha256);
  }
  if (request.cache) {
    next_string("cache");
    next_string(describe_cache(*request.cache));
  }
  // Each adapter's bytes (SHA-256), strength and expert (as the file name or the line states it).
  if (!request.lora.empty()) {
    next_string("lora");
    for (const auto& a : request.lora) {
      next_string(a.sha256);
      next_double(a.scale);
      next_string(to_string(resolve_lora_expert(a, true)));
    }
  }
  out += ']';
  return out;
}

std::string compute_input_key(const Request& request, const std::string& model_name,
                              const std::string& weights_identity) {
  return sha256_hex(canonical_encoding(request, model_name, weights_identity));
}

}  // namespace omnidp
