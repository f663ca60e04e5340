#include "omnidp/manifest/input_files.hpp"

#include <fmt/format.h>
#include <cstdint>
#include <optional>
#include <tuple>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/image.hpp"
#include "omnidp/common/sha256.hpp"
#include "omnidp/manifest/input_key.hpp"
#include "omnidp/manifest/manifest_line.hpp"
#include "omnidp/manifest/manifest_options.hpp"

namespace omnidp {
void read_input_files(Request& r, bool size_given, const ManifestOptions& options,
                      const std::string& file) {
  const auto input_error = [&](ManifestField field, const std::string& reason) {
    return std::string(ManifestError(file, r.line, field_name(field), reason).what());
  };
  // SHA-256 of an input file: from the cache when it has the file unchanged.
  const auto hash_input = [&](const std::string& path, const std::optional<FileStamp>& stamp) {
    if (options.hash_cache && stamp) return options.hash_cache->hash(path, *stamp);
    return sha256_file_hex(path);
  };

  // With a hash cache, an unchanged file is not opened at all.
  FileHashCache* cache = options.hash_cache.get();
  // An image's header (its size) and SHA-256; false (input_error set) when it is refused.
  const auto read_image = [&](const std::string& path, ManifestField field, ImageInfo& info,
                              std::string& sha256) {
    try {
      const std::optional<FileStamp> stamp = cache != nullptr ? file_stamp(path) : std::nullopt;
      const FileHashCache::Entry* cached = stamp ? cache->find(path, *stamp) : nullptr;
      const bool probed = cached == nullptr || cached->width == 0;
      if (probed) {
        info = probe_image(path);
      } else {
        info.width = cached->width;
        info.height = cached->height;
      }
      const auto pixels =
          static_cast<std::uint64_t>(info.width) * static_cast<std::uint64_t>(info.height);
      if (pixels > options.max_image_pixels) {
        r.input_error = input_error(
            field,
            fmt::format(
                "{}: image is {}x{} = {} pixels, over the limit of {} (input.max_image_pixels)",
                path, info.width, info.height, pixels, options.max_image_pixels));
        return false;
      }
      if (const std::string problem = image_aspect_problem(info, options.max_image_aspect);
          !problem.empty()) {
        r.input_error = input_error(field, path + ": " + problem);
        return false;
      }
      sha256 = hash_input(path, stamp);
      if (stamp && probed) {
        cache->put(path, *stamp, FileHashCache::Entry{sha256, info.width, info.height});
      }
    } catch (const Error& e) {  // InputError from probing, IoError from hashing
      r.input_error = input_error(field, e.what());
      return false;
    }
    return true;
  };
  if (!r.image.empty()) {
    ImageInfo info;
    if (!read_image(r.image, ManifestField::image, info, r.image_sha256)) return;
    r.image_height = info.height;
    r.image_width = info.width;
    if (r.task == Task::i2v && !size_given && options.size_from_image) {
      try {
        std::tie(r.height, r.width) = options.size_from_image(info.height, info.width);
      } catch (const std::exception& e) {
        r.input_error = input_error(ManifestField::image,
                                    std::string("no output size for this image: ") + e.what());
        return;
      }
    }
  }
  if (!r.last_image.empty()) {
    ImageInfo info;
    if (!read_image(r.last_image, ManifestField::last_image, info, r.last_image_sha256)) return;
  }
  if (!r.prompt_embeds.empty()) {
    if (const auto problem = regular_file_problem(r.prompt_embeds); !problem.empty()) {
      r.input_error = input_error(ManifestField::prompt_embeds, r.prompt_embeds + ": " + problem);
      return;
    }
    try {
      r.prompt_embeds_sha256 =
          hash_input(r.prompt_embeds, cache != nullptr ? file_stamp(r.prompt_embeds) : std::nullopt);
    } catch (const Error& e) {
      r.input_error = input_error(ManifestField::prompt_embeds, e.what());
      return;
    }
  }
  r.input_key = compute_input_key(r, options.model_name, options.weights_identity);
}

}  // namespace omnidp
