#include "omnidp/refcheck/refcheck.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <utility>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/models/config_json.hpp"
#include "omnidp/models/layers/tensor_shape.hpp"
#include "omnidp/models/weights/checkpoint.hpp"
#include "omnidp/refcheck/basic_cases.hpp"
// Each family's runners are compiled when the family is built (src/refcheck/CMakeLists.txt,
// OMNIDP_REFCHECK_FAMILIES, defines OMNIDP_REFCHECK_<FAMILY>).
#ifdef OMNIDP_REFCHECK_WAN
#include "omnidp/refcheck/wan_cases.hpp"
#endif
#ifdef OMNIDP_REFCHECK_WAN_VAE
#include "omnidp/refcheck/wan_vae_cases.hpp"
#endif
#ifdef OMNIDP_REFCHECK_HV15
#include "omnidp/refcheck/hv15_cases.hpp"
#endif
#ifdef OMNIDP_REFCHECK_TEXT
#include "omnidp/refcheck/text_cases.hpp"
#endif
#ifdef OMNIDP_REFCHECK_VISION
#include "omnidp/models/vision/siglip_encoder.hpp"
#include "omnidp/refcheck/vision_cases.hpp"
#endif

namespace omnidp::refcheck {
namespace fs = std::filesystem;
namespace {

// How a case folder is recognised. `field` of case.json must exist; when `prefix` is not
// empty, the field must be a string that starts with it as a whole word ("T5EncoderModel"
// does not match "UMT5EncoderModel ..."; "AutoencoderKLWan (...)" matches "AutoencoderKLWan").
// `folder` is the fallback when no entry matches case.json.
struct CaseKind {
  std::string_view kind;
  std::string_view field;
  std::string_view prefix;
  std::string_view folder;
};

constexpr CaseKind kKinds[] = {
    {"rng", "what", "torch.randn", "rng_cpu_randn"},
    {"schedulers", "unipc", "", "schedulers"},
    {"schedulers", "euler", "", "schedulers"},
    {"wan_transformer", "model", "WanTransformer3DModel", "wan_transformer"},
    {"wan_vae", "model", "AutoencoderKLWan", "wan22_vae"},
    {"wan_pipeline_t2v", "pipeline", "WanPipeline", "wan_pipeline_t2v"},
    {"wan_pipeline_i2v", "pipeline", "WanImageToVideoPipeline", "wan_pipeline_i2v"},
    {"hv15_transformer", "model", "HunyuanVideo15Transformer3DModel", "hv15_transformer"},
    {"hv15_vae", "model", "AutoencoderKLHunyuanVideo15", "hv15_vae"},
    {"hv15_pipeline_t2v", "pipeline", "HunyuanVideo15Pipeline", "hv15_pipeline_t2v"},
    {"hv15_pipeline_i2v", "pipeline", "HunyuanVideo15ImageToVideoPipeline", "hv15_pipeline_i2v"},
    {"umt5_encoder", "model", "UMT5EncoderModel", "umt5_encoder"},
    {"byt5_encoder", "model", "T5EncoderModel", "byt5_encoder"},
    {"qwen25vl_text", "model", "Qwen2_5_VLTextModel", "qwen25vl_text"},
    {"siglip_vision", "model", "SiglipVisionModel", "siglip_vision"},
};

// kind -> runner. One line per runner; a family's lines sit in its #ifdef block.
const std::vector<std::pair<std::string_view, Runner>>& runner_table() {
  static const std::vector<std::pair<std::string_view, Runner>> table = {
      {"rng", &run_rng},
      {"schedulers", &run_schedulers},
#ifdef OMNIDP_REFCHECK_WAN
      {"wan_transformer", &run_wan_transformer},
      {"wan_pipeline_t2v", &run_wan_pipeline_t2v},
      {"wan_pipeline_i2v", &run_wan_pipeline_i2v},
#endif
#ifdef OMNIDP_REFCHECK_WAN_VAE
      {"wan_vae", &run_wan_vae},
#endif
#ifdef OMNIDP_REFCHECK_HV15
      {"hv15_transformer", &run_hv15_transformer},
      {"hv15_vae", &run_hv15_vae},
      {"hv15_pipeline_t2v", &run_hv15_pipeline_t2v},
#ifdef OMNIDP_REFCHECK_VISION
      {"hv15_pipeline_i2v",
       [](const fs::path& d, const nlohmann::json& j, const RefcheckOptions& o) {
         return run_hv15_pipeline_i2v(
             d, j, o,
             [](const fs::path& encoder, const fs::path& processor, const RefcheckOptions& opt) {
               return models::vision::load_siglip_image_encoder(encoder, processor, opt.dtype,
                                                                opt.device);
             });
       }},
#else
      {"hv15_pipeline_i2v", [](const fs::path& d, const nlohmann::json& j,
                               const RefcheckOptions& o) { return run_hv15_pipeline_i2v(d, j, o); }},
#endif
#endif
#ifdef OMNIDP_REFCHECK_TEXT
      {"umt5_encoder", &run_umt5_encoder},
      {"byt5_encoder", &run_byt5_encoder},
      {"qwen25vl_text", &run_qwen25vl_text},
#endif
#ifdef OMNIDP_REFCHECK_VISION
      {"siglip_vision", &run_siglip_vision},
#endif
  };
  return table;
}

bool word_prefix(const std::string& value, std::string_view prefix) {
  if (value.compare(0, prefix.size(), prefix) != 0) return false;
  if (value.size() == prefix.size()) return true;
  const auto next = static_cast<unsigned char>(value[prefix.size()]);
  return std::isalnum(next) == 0 && next != '_';
}

}  // namespace

std::string identify_case(const fs::path& case_dir, const nlohmann::json& case_json) {
  if (case_json.is_object()) {
    for (const auto& k : kKinds) {
      const auto it = case_json.find(std::string(k.field));
      if (it == case_json.end()) continue;
      if (k.prefix.empty()) return std::string(k.kind);
      if (it->is_string() && word_prefix(it->get<std::string>(), k.prefix)) {
        return std::string(k.kind);
      }
    }
  }
  const auto folder = case_dir.filename().string();
  for (const auto& k : kKinds) {
    if (folder == k.folder) return std::string(k.kind);
  }
  return {};
}

// The first file a folder's weights need that is not there: a shard the index names, or, for
// such a shard, the file its case.json's transformer_shard_1 names; "" when none is missing.
std::string missing_shard(const fs::path& folder) {
  const MissingShards missing = missing_shards(folder);
  if (missing.names.empty()) return {};
  if (missing.shard_1.empty()) return missing.names.front();
  return fs::exists(folder / missing.shard_1) ? std::string() : missing.shard_1;
}

// A file that a case needs outside its folder and that does not exist: a case.json value
// "../x", or a shard of the case's or such a folder's weights (missing_shard); "" when every
// one does. tests/fixtures' cases name files of the shared set this way.
std::string missing_reference(const fs::path& case_dir, const nlohmann::json& case_json) {
  if (auto shard = missing_shard(case_dir); !shard.empty()) return shard;
  for (const auto& item : case_json.items()) {
    // transformer_shard_1 is needed only where the index's shard is missing (missing_shard).
    if (!item.value().is_string() || item.key() == "transformer_shard_1") continue;
    const auto text = item.value().get<std::string>();
    if (!text.starts_with("../")) continue;
    const fs::path target = (case_dir / text).lexically_normal();
    if (!fs::exists(target)) return text;
    if (auto shard = missing_shard(target); !shard.empty()) return text + "'s " + shard;
  }
  return {};
}

Runner find_runner(std::string_view kind) {
  for (const auto& [k, runner] : runner_table()) {
    if (k == kind) return runner;
  }
  return {};
}

std::vector<fs::path> find_cases(const fs::path& root) {
  std::vector<fs::path> cases;
  if (is_regular_path(root / "case.json")) cases.push_back(root);
  // Never throws on a link loop or a dangling link in the tree (issue 52, class 3).
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  for (const fs::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    if (is_folder_path(it->path()) && is_regular_path(it->path() / "case.json")) {
      cases.push_back(it->path());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::vector<CaseResult> run_case(const fs::path& case_dir, const std::string& case_name,
                                 const RefcheckOptions& options) {
  std::vector<CaseResult> results;
  try {
    const auto case_json = models::read_json(case_dir / "case.json");
    const auto kind = identify_case(case_dir, case_json);
    if (kind.empty()) {
      results.push_back(skip("", "unknown case kind"));
    } else if (const auto runner = find_runner(kind); !runner) {
      results.push_back(skip(kind, "no runner built for this kind"));
    } else if (const auto missing = missing_reference(case_dir, case_json); !missing.empty()) {
      results.push_back(skip(kind, "needs " + missing +
                                       ", which this fixture root lacks (a case of a set split "
                                       "over two roots: run it where both are side by side)"));
    } else {
      results = runner(case_dir, case_json, options);
      if (results.empty()) {
        CaseResult r = skip(kind, "the runner found nothing to check");
        r.status = CaseResult::Status::fail;
        results.push_back(r);
      }
    }
  } catch (const std::exception& e) {
    results.clear();
    CaseResult r;
    r.check = "error";
    r.status = CaseResult::Status::fail;
    r.max_rel_error = std::numeric_limits<double>::infinity();
    r.note = e.what();
    // c10::Error messages carry a multi-line backtrace: keep the first line.
    if (const auto nl = r.note.find('\n'); nl != std::string::npos) r.note.resize(nl);
    results.push_back(r);
  }
  for (auto& r : results) {
    if (r.case_name.empty()) r.case_name = case_name;
  }
  return results;
}

std::string format_result(const CaseResult& r) {
  std::string name = r.case_name;
  if (!r.check.empty()) {
    if (!name.empty()) name += '/';
    name += r.check;
  }
  const bool skipped = r.status == CaseResult::Status::skip;
  std::string line = name;
  line.append(name.size() < 56 ? 56 - name.size() : 1, ' ');
  const std::string err = skipped ? "-" : fmt::format("{:.3e}", r.max_rel_error);
  const std::string tol = skipped ? "-" : fmt::format("{:.3e}", r.tolerance);
  line += err + std::string(err.size() < 11 ? 11 - err.size() : 1, ' ');
  line += tol + std::string(tol.size() < 11 ? 11 - tol.size() : 1, ' ');
  line += std::string(to_string(r.status));
  if (!r.note.empty()) line += "  # " + r.note;
  return line;
}

RefcheckSummary run_refcheck(const fs::path& root, const RefcheckOptions& options, std::ostream& out) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw IoError(root.string(), "not a folder");
  RefcheckSummary summary;
  for (const auto& dir : find_cases(root)) {
    auto name = fs::relative(dir, root, ec).generic_string();
    if (ec || name.empty() || name == ".") name = dir.filename().string();
    if (!options.filter.empty() && name.find(options.filter) == std::string::npos) continue;
    ++summary.cases;
    for (auto& r : run_case(dir, name, options)) {
      out << format_result(r) << '\n' << std::flush;
      switch (r.status) {
        case CaseResult::Status::pass: ++summary.pass; break;
        case CaseResult::Status::fail: ++summary.fail; break;
        case CaseResult::Status::skip: ++summary.skip; break;
      }
      summary.results.push_back(std::move(r));
    }
  }
  return summary;
}

}  // namespace omnidp::refcheck
