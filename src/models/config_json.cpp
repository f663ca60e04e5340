#include "omnidp/models/config_json.hpp"

#include <fstream>
#include <sstream>

#include "omnidp/common/error.hpp"

namespace omnidp::models {
namespace {

nlohmann::json parse(std::string_view text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw WeightsError(origin, std::string("invalid JSON: ") + e.what());
  }
}

nlohmann::json require_object(nlohmann::json j, const std::string& origin) {
  if (!j.is_object()) throw WeightsError(origin, "not a JSON object");
  return j;
}

}  // namespace

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw WeightsError(path.string(), "cannot open JSON file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw WeightsError(path.string(), "cannot read JSON file");
  return parse(buffer.str(), path.string());
}

nlohmann::json read_json_object(const std::filesystem::path& path) {
  return require_object(read_json(path), path.string());
}

nlohmann::json parse_json_object(std::string_view text, const std::string& origin) {
  return require_object(parse(text, origin), origin);
}

}  // namespace omnidp::models
