#include "omnidp/config/lora.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include "omnidp/common/error.hpp"
#include "omnidp/common/format.hpp"

namespace omnidp {
namespace {

constexpr std::array<std::pair<LoraExpert, const char*>, 3> kExperts{
    {{LoraExpert::all, "all"},
     {LoraExpert::high_noise, "high_noise"},
     {LoraExpert::low_noise, "low_noise"}}};

std::string scalar_text(const YAML::Node& node) {
  return node.IsScalar() ? "'" + node.Scalar() + "'" : std::string(node.IsMap() ? "a map" : "a list");
}

LoraExpert read_expert(const YAML::Node& node, const std::string& path) {
  if (node.IsScalar()) {
    for (const auto& [value, name] : kExperts) {
      if (node.Scalar() == name) return value;
    }
  }
  throw ConfigError(
      path, scalar_text(node) + " is not an expert (expected all | high_noise | low_noise)");
}

double read_scale(const YAML::Node& node, const std::string& path) {
  double value = 0.0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !std::isfinite(value) ||
      node.Scalar().empty()) {
    throw ConfigError(path, scalar_text(node) + " is not a finite number");
  }
  if (value < -100.0 || value > 100.0) {
    throw ConfigError(path,
                      shortest(value) + " is out of range (expected a number in [-100, 100])");
  }
  return value;
}

std::string read_path(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar() || node.Scalar().empty()) {
    throw ConfigError(path,
                      "expected the path of a .safetensors file, got " +
                          (node.IsScalar() ? std::string("an empty string") : scalar_text(node)));
  }
  return node.Scalar();
}

LoraAdapter read_adapter(const YAML::Node& node, const std::string& path) {
  LoraAdapter a;
  if (node.IsScalar()) {
    a.path = read_path(node, path);
    return a;
  }
  if (!node.IsMap()) throw ConfigError(path, "expected a path or a map {path, scale, expert}");
  std::set<std::string> seen;
  for (const auto& item : node) {
    const std::string key = item.first.as<std::string>();
    const std::string at = path + "." + key;
    if (!seen.insert(key).second) throw ConfigError(at, "given twice");
    if (key == "path") {
      a.path = read_path(item.second, at);
    } else if (key == "scale") {
      a.scale = read_scale(item.second, at);
    } else if (key == "expert") {
      a.expert = read_expert(item.second, at);
    } else {
      throw ConfigError(at, "not a key of a LoRA adapter (its keys: path, scale, expert)");
    }
  }
  if (a.path.empty()) throw ConfigError(path + ".path", "missing: every adapter names its file");
  return a;
}

}  // namespace

const char* to_string(LoraExpert expert) noexcept {
  for (const auto& [value, name] : kExperts) {
    if (value == expert) return name;
  }
  return "?";
}

std::vector<LoraAdapter> parse_lora_list(const std::string& text, const std::string& path) {
  YAML::Node node;
  try {
    node = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path, std::string("invalid YAML: ") + e.what());
  }
  std::vector<LoraAdapter> out;
  if (node.IsNull()) return out;
  if (!node.IsSequence()) {
    throw ConfigError(path, "expected a list of adapters (each a path or {path, scale, expert})");
  }
  for (std::size_t i = 0; i < node.size(); ++i) {
    out.push_back(read_adapter(node[i], fmt::format("{}[{}]", path, i)));
  }
  return out;
}

std::string lora_list_yaml(const std::vector<LoraAdapter>& adapters) {
  YAML::Emitter out;
  out << YAML::Flow << YAML::BeginSeq;
  for (const auto& a : adapters) {
    out << YAML::BeginMap << YAML::Key << "path" << YAML::Value << a.path;
    out << YAML::Key << "scale" << YAML::Value << YAML::Node(shortest(a.scale));
    if (a.expert) out << YAML::Key << "expert" << YAML::Value << to_string(*a.expert);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  return out.c_str();
}

std::optional<LoraExpert> lora_expert_from_file_name(const std::string& path) {
  const std::string stem = std::filesystem::path(path).stem().string();
  bool high = false;
  bool low = false;
  std::string word;
  const auto take = [&] {
    std::transform(word.begin(), word.end(), word.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    high = high || word == "high" || word == "highnoise";
    low = low || word == "low" || word == "lownoise";
    word.clear();
  };
  for (const char c : stem) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      word += c;
    } else {
      take();
    }
  }
  take();
  if (high == low) return std::nullopt;
  return high ? LoraExpert::high_noise : LoraExpert::low_noise;
}

LoraExpert resolve_lora_expert(const LoraAdapter& adapter, bool two_experts) {
  if (adapter.expert) return *adapter.expert;
  if (two_experts) return lora_expert_from_file_name(adapter.path).value_or(LoraExpert::all);
  return LoraExpert::all;
}

void check_lora_experts(const std::vector<LoraAdapter>& adapters, bool two_experts,
                        const std::string& path) {
  for (std::size_t i = 0; i < adapters.size(); ++i) {
    const auto& a = adapters[i];
    const std::string at = fmt::format("{}[{}].expert", path, i);
    if (!a.expert) continue;
    if (!two_experts && *a.expert != LoraExpert::all) {
      throw ConfigError(at, fmt::format("{}: this model has one transformer (an expert is chosen "
                                        "only on a two-expert model such as Wan2.2-A14B)",
                                        to_string(*a.expert)));
    }
    const auto named = lora_expert_from_file_name(a.path);
    if (two_experts && named && *a.expert != LoraExpert::all && *a.expert != *named) {
      throw ConfigError(
          at, fmt::format("{}: the file {} is named for the {} expert (write expert: {}, or "
                          "rename the file if the name is wrong)",
                          to_string(*a.expert), std::filesystem::path(a.path).filename().string(),
                          *named == LoraExpert::high_noise ? "high-noise" : "low-noise",
                          to_string(*named)));
    }
  }
}

std::string describe_lora(const std::vector<LoraAdapter>& adapters) {
  std::string out;
  for (const auto& a : adapters) {
    if (!out.empty()) out += '+';
    out += a.sha256.empty() ? std::string("unhashed") : a.sha256.substr(0, 12);
    out += '*';
    out += shortest(a.scale);
    if (a.expert && *a.expert != LoraExpert::all) {
      out += '@';
      out += to_string(*a.expert);
    }
  }
  return out;
}

}  // namespace omnidp
