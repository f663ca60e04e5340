#pragma once
// One manifest line (docs/manifest.md): its JSON decoded (syntax, UTF-8, one flat object of
// known fields, each at most once), then checked field by field into a Request (types, ranges,
// the task and image rules, the model's size multiple) with the defaults filled in. No file
// access and no duplicate check (ManifestReader adds both). Every fault is a ManifestError
// "file:line:field: reason". Plain values, no shared state.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "omnidp/config/config.hpp"
#include "omnidp/manifest/request.hpp"

namespace omnidp {

enum class ManifestField : std::size_t {
  id,
  prompt,
  negative_prompt,
  seed,
  task,
  image,
  prompt_embeds,
  num_frames,
  height,
  width,
  num_inference_steps,
  guidance_scale,
  flow_shift,
  fps,
  guidance_scale_2,
  last_image,
  cache,
  lora,
  count
};

// The field's name in the JSON ("num_frames").
[[nodiscard]] const std::string& field_name(ManifestField field);

class ManifestLine {
 public:
  // Decodes `text`: one line without its end, not blank, not a comment (is_blank_or_comment).
  ManifestLine(std::string_view text, std::string file, std::size_t line);
  ~ManifestLine();
  ManifestLine(ManifestLine&&) noexcept;
  ManifestLine& operator=(ManifestLine&&) noexcept;
  ManifestLine(const ManifestLine&) = delete;
  ManifestLine& operator=(const ManifestLine&) = delete;

  // The id: given, not empty, at most 256 bytes, no control characters.
  [[nodiscard]] std::string id() const;
  // The request with `id` (from id()): defaults fill what the line leaves out, heights and
  // widths must be multiples of `size_multiple` (the model's VAE x patch size). Request::line
  // is this line; paths keep the line's text.
  [[nodiscard]] Request request(std::string id, const GenerationConfig& defaults,
                                int size_multiple) const;
  // Throws the ManifestError of this line and `field`.
  [[noreturn]] void fail(ManifestField field, const std::string& reason) const;

 private:
  struct Fields;
  std::unique_ptr<Fields> fields_;
  std::string file_;
  std::size_t line_;
};

// ManifestLine's request with the id checked and a size multiple of 16: the unit the manifest
// fuzzer drives. ManifestReader::next() adds the files, the duplicate check and the model's
// size multiple.
[[nodiscard]] Request parse_manifest_line(std::string_view text, const GenerationConfig& defaults,
                                          const std::string& file, std::size_t line);

}  // namespace omnidp
