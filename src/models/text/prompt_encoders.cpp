#include "omnidp/models/text/prompt_encoders.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <string_view>
#include <tuple>

#include "omnidp/common/error.hpp"
#include "omnidp/models/text/byt5_tokenizer.hpp"
#include "omnidp/models/text/flops.hpp"
#include "omnidp/models/text/qwen2_tokenizer.hpp"
#include "omnidp/models/text/sentencepiece_tokenizer.hpp"

namespace omnidp::models::text {
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------------------------
// UTF-8 <-> code points (invalid sequences decode to U+FFFD, as Python's errors="replace").

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    char32_t cp = 0;
    if (c < 0x80) {
      cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    bool ok = true;
    for (std::size_t k = 1; ok && k <= n; ++k) {
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) {
        ok = false;
      } else {
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      }
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += n + 1;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string encode_utf8(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (const char32_t cp : s) append_utf8(out, cp);
  return out;
}

// Python's str.isspace() (what `\s` matches in a str pattern).
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// The parts of ftfy.fix_text that need no mojibake model: control characters removed, curly
// quotes straightened, Latin ligatures and full-width ASCII expanded (docs/models.md).
std::u32string ftfy_subset(const std::u32string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (const char32_t c : s) {
    if ((c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0xFEFF) continue;
    switch (c) {
      case 0x2018:
      case 0x2019:
      case 0x201A:
      case 0x201B: out += U'\''; continue;
      case 0x201C:
      case 0x201D:
      case 0x201E:
      case 0x201F: out += U'"'; continue;
      case 0xFB00: out += U"ff"; continue;
      case 0xFB01: out += U"fi"; continue;
      case 0xFB02: out += U"fl"; continue;
      case 0xFB03: out += U"ffi"; continue;
      case 0xFB04: out += U"ffl"; continue;
      case 0xFB05:
      case 0xFB06: out += U"st"; continue;
      case 0x3000: out += U' '; continue;
      default: break;
    }
    if (c >= 0xFF01 && c <= 0xFF5E) {
      out += static_cast<char32_t>(c - 0xFF01 + 0x21);
      continue;
    }
    out += c;
  }
  return out;
}

// html.unescape: named references of HTML's common set (with ';', or without it for the
// legacy amp/lt/gt/quot), decimal and hex references (';' optional).
std::string html_unescape(const std::string& s) {
  static const std::map<std::string, char32_t, std::less<>> kNamed = {
      {"amp", U'&'},      {"lt", U'<'},       {"gt", U'>'},      {"quot", U'"'},
      {"apos", U'\''},    {"nbsp", 0xA0},     {"copy", 0xA9},    {"reg", 0xAE},
      {"trade", 0x2122},  {"hellip", 0x2026}, {"mdash", 0x2014}, {"ndash", 0x2013},
      {"lsquo", 0x2018},  {"rsquo", 0x2019},  {"ldquo", 0x201C}, {"rdquo", 0x201D},
      {"laquo", 0xAB},    {"raquo", 0xBB},    {"middot", 0xB7},  {"times", 0xD7},
      {"divide", 0xF7},   {"deg", 0xB0},      {"plusmn", 0xB1},  {"para", 0xB6},
      {"sect", 0xA7},     {"cent", 0xA2},     {"pound", 0xA3},   {"yen", 0xA5},
      {"euro", 0x20AC},   {"bull", 0x2022},   {"eacute", 0xE9},  {"egrave", 0xE8},
      {"aacute", 0xE1},   {"agrave", 0xE0},   {"uuml", 0xFC},    {"ouml", 0xF6},
      {"auml", 0xE4},     {"szlig", 0xDF},    {"ccedil", 0xE7},  {"ntilde", 0xF1},
      {"iexcl", 0xA1},    {"iquest", 0xBF},   {"shy", 0xAD},     {"ensp", 0x2002},
      {"emsp", 0x2003},   {"thinsp", 0x2009}, {"zwnj", 0x200C},  {"zwj", 0x200D},
      {"larr", 0x2190},   {"rarr", 0x2192},   {"uarr", 0x2191},  {"darr", 0x2193},
      {"hearts", 0x2665}, {"star", 0x2606},   {"micro", 0xB5}};
  // Python maps these C1 references through Windows-1252 (html._invalid_charrefs).
  static const std::map<char32_t, char32_t> kCp1252 = {
      {0x80, 0x20AC}, {0x82, 0x201A}, {0x83, 0x0192}, {0x84, 0x201E}, {0x85, 0x2026},
      {0x86, 0x2020}, {0x87, 0x2021}, {0x88, 0x02C6}, {0x89, 0x2030}, {0x8A, 0x0160},
      {0x8B, 0x2039}, {0x8C, 0x0152}, {0x8E, 0x017D}, {0x91, 0x2018}, {0x92, 0x2019},
      {0x93, 0x201C}, {0x94, 0x201D}, {0x95, 0x2022}, {0x96, 0x2013}, {0x97, 0x2014},
      {0x98, 0x02DC}, {0x99, 0x2122}, {0x9A, 0x0161}, {0x9B, 0x203A}, {0x9C, 0x0153},
      {0x9E, 0x017E}, {0x9F, 0x0178}};
  if (s.find('&') == std::string::npos) return s;
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '&') {
      out += s[i++];
      continue;
    }
    std::size_t j = i + 1;
    if (j < s.size() && s[j] == '#') {
      const bool hex = j + 1 < s.size() && (s[j + 1] == 'x' || s[j + 1] == 'X');
      std::size_t k = j + (hex ? 2 : 1);
      const std::size_t digits_begin = k;
      while (k < s.size() && (hex ? std::isxdigit(static_cast<unsigned char>(s[k])) != 0
                                  : std::isdigit(static_cast<unsigned char>(s[k])) != 0)) {
        ++k;
      }
      if (k > digits_begin && k - digits_begin <= 8) {
        auto value = static_cast<char32_t>(
            std::stoul(s.substr(digits_begin, k - digits_begin), nullptr, hex ? 16 : 10));
        if (const auto it = kCp1252.find(value); it != kCp1252.end()) {
          value = it->second;
        } else if (value == 0 || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
          value = 0xFFFD;
        }
        append_utf8(out, value);
        i = (k < s.size() && s[k] == ';') ? k + 1 : k;
        continue;
      }
    } else {
      std::size_t k = j;
      while (k < s.size() && k - j < 32 && std::isalnum(static_cast<unsigned char>(s[k])) != 0) ++k;
      const std::string_view name(s.data() + j, k - j);
      const bool semicolon = k < s.size() && s[k] == ';';
      const auto it = kNamed.find(name);
      const bool legacy = name == "amp" || name == "lt" || name == "gt" || name == "quot";
      if (it != kNamed.end() && (semicolon || legacy)) {
        append_utf8(out, it->second);
        i = semicolon ? k + 1 : k;
        continue;
      }
    }
    out += s[i++];
  }
  return out;
}

std::string strip_python_space(const std::string& s) {
  const auto cps = decode_utf8(s);
  std::size_t b = 0;
  std::size_t e = cps.size();
  while (b < e && is_python_space(cps[b])) ++b;
  while (e > b && is_python_space(cps[e - 1])) --e;
  return encode_utf8(cps.substr(b, e - b));
}

// Moves a module to the compute device for the duration of a scope when offloading, and back
// to the CPU afterwards (also on exceptions). Moves happen outside inference mode so that the
// parameters stay ordinary tensors.
class DeviceScope {
 public:
  DeviceScope(torch::nn::Module& module, const EncoderPlacement& placement)
      : module_(module),
        active_(placement.offload && placement.device != torch::Device(torch::kCPU)) {
    if (active_) move(placement.device);
  }
  ~DeviceScope() {
    if (!active_) return;
    try {
      move(torch::kCPU);
    } catch (...) {  // a failed move back leaves the weights where they are
    }
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  void move(torch::Device device) {
    c10::InferenceMode off(false);
    module_.to(device);
  }
  torch::nn::Module& module_;
  bool active_;
};

torch::Device home_device(const EncoderPlacement& placement) {
  return placement.offload ? torch::Device(torch::kCPU) : placement.device;
}

torch::Tensor ids_tensor(const std::vector<std::int64_t>& ids) {
  return torch::tensor(ids, torch::TensorOptions().dtype(torch::kLong))
      .view({1, static_cast<std::int64_t>(ids.size())});
}

// [1, n, D] -> float32 [1, length, D] with zeros after n, and its int64 mask.
std::pair<torch::Tensor, torch::Tensor> pad_embeddings(const torch::Tensor& valid,
                                                       std::int64_t length, std::int64_t dim,
                                                       torch::Device device) {
  auto embeds =
      torch::zeros({1, length, dim}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  auto mask = torch::zeros({1, length}, torch::TensorOptions().dtype(torch::kLong).device(device));
  const auto n = valid.defined() ? std::min(valid.size(1), length) : 0;
  if (n > 0) {
    embeds.narrow(1, 0, n).copy_(valid.narrow(1, 0, n));
    mask.narrow(1, 0, n).fill_(1);
  }
  return {embeds, mask};
}

}  // namespace

std::string wan_prompt_clean(const std::string& text) {
  // basic_clean: ftfy.fix_text, html.unescape twice, strip; whitespace_clean: \s+ -> " ", strip.
  std::string s =
      encode_utf8(ftfy_subset(decode_utf8(nfc_normalize(encode_utf8(decode_utf8(text))))));
  s = strip_python_space(html_unescape(html_unescape(s)));
  const auto cps = decode_utf8(s);
  std::u32string out;
  out.reserve(cps.size());
  bool in_space = false;
  for (const char32_t c : cps) {
    if (is_python_space(c)) {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out += U' ';
    in_space = false;
    out += c;
  }
  return encode_utf8(out);
}

std::optional<std::string> hv15_glyph_text(const std::string& prompt) {
  static constexpr std::string_view kOpen = "\xE2\x80\x9C";   // “
  static constexpr std::string_view kClose = "\xE2\x80\x9D";  // ”
  std::vector<std::string> found;
  std::size_t pos = 0;
  while (pos < prompt.size()) {
    const std::size_t ascii = prompt.find('"', pos);
    const std::size_t curly = prompt.find(kOpen, pos);
    const std::size_t start = std::min(ascii, curly);
    if (start == std::string::npos) break;
    const bool is_ascii = start == ascii;
    const std::size_t body = start + (is_ascii ? 1 : kOpen.size());
    const std::size_t end = is_ascii ? prompt.find('"', body) : prompt.find(kClose, body);
    // `.` does not cross a newline: without a closing quote on the same line, try the next start.
    if (end == std::string::npos || prompt.find('\n', body) < end) {
      pos = start + 1;
      continue;
    }
    found.push_back(prompt.substr(body, end - body));
    pos = end + (is_ascii ? 1 : kClose.size());
  }
  if (found.empty()) return std::nullopt;
  if (found.size() > 1) {
    std::vector<std::string> unique;
    for (auto& t : found) {
      if (std::find(unique.begin(), unique.end(), t) == unique.end())
        unique.push_back(std::move(t));
    }
    found = std::move(unique);
  }
  std::string out;
  for (std::size_t i = 0; i < found.size(); ++i)
    out += (i > 0 ? ". " : "") + ("Text \"" + found[i] + "\"");
  return out + ". ";
}

const std::string& hv15_system_message() {
  static const std::string message =
      "You are a helpful assistant. Describe the video by detailing the following aspects: "
      "        1. The main content and theme of the video. "
      "        2. The color, shape, size, texture, quantity, text, and spatial relationships of "
      "the objects. "
      "        3. Actions, events, behaviors temporal relationships, physical movement changes of "
      "the objects. "
      "        4. background environment, light, style and atmosphere. "
      "        5. camera angles, movements, and transitions used in the video.";
  return message;
}

std::string hv15_chat_text(const std::string& user, const std::string& system_message) {
  return "<|im_start|>system\n" + system_message + "<|im_end|>\n<|im_start|>user\n" +
         (user.empty() ? " " : user) + "<|im_end|>\n<|im_start|>assistant\n";
}

// ---------------------------------------------------------------------------------------------

T5PromptEncoder::T5PromptEncoder(std::unique_ptr<Tokenizer> tokenizer, T5EncoderModel model,
                                 Options options)
    : tokenizer_(std::move(tokenizer)), model_(std::move(model)), options_(options) {
  if (!tokenizer_ || !model_) throw ModelError("T5PromptEncoder needs a tokenizer and a model");
  if (options_.max_length == 0) throw ModelError("T5PromptEncoder: max_length must be positive");
  model_->to(home_device(options_.placement));
}

PromptEmbedding T5PromptEncoder::encode(const std::string& prompt) {
  const auto text = options_.clean_prompt ? wan_prompt_clean(prompt) : prompt;
  const auto ids = tokenizer_->encode(text, options_.max_length);
  const auto& place = options_.placement;
  torch::Tensor hidden;
  {
    DeviceScope scope(*model_, place);
    c10::InferenceMode inference;
    hidden = model_->forward(ids_tensor(ids).to(place.device)).to(torch::kFloat32);
  }
  const auto length =
      options_.pad_to_max_length ? static_cast<std::int64_t>(options_.max_length) : hidden.size(1);
  auto [embeds, mask] = pad_embeddings(hidden, length, model_->options().d_model, place.device);
  PromptEmbedding out;
  out.embeds = embeds;
  out.mask = mask;
  return out;
}

EncodeCost T5PromptEncoder::encode_cost(const std::string& prompt) const {
  const auto text = options_.clean_prompt ? wan_prompt_clean(prompt) : prompt;
  const auto tokens = static_cast<std::int64_t>(tokenizer_->encode(text, options_.max_length).size());
  return EncodeCost{t5_encoder_flops(model_->options(), tokens), tokens, 0};
}

Hv15PromptEncoder::Hv15PromptEncoder(std::unique_ptr<Tokenizer> tokenizer,
                                     Qwen25VLTextModel text_model,
                                     std::unique_ptr<Tokenizer> glyph_tokenizer,
                                     T5EncoderModel glyph_model, Options options)
    : tokenizer_(std::move(tokenizer)),
      text_model_(std::move(text_model)),
      glyph_tokenizer_(std::move(glyph_tokenizer)),
      glyph_model_(std::move(glyph_model)),
      options_(std::move(options)) {
  if (!tokenizer_ || !text_model_ || !glyph_tokenizer_ || !glyph_model_) {
    throw ModelError("Hv15PromptEncoder needs both tokenizers and both models");
  }
  text_model_->to(home_device(options_.placement));
  glyph_model_->to(home_device(options_.placement));
}

PromptEmbedding Hv15PromptEncoder::encode(const std::string& prompt) {
  const auto& place = options_.placement;
  PromptEmbedding out;

  const auto ids = tokenizer_->encode(hv15_chat_text(prompt, options_.system_message),
                                      options_.max_length + options_.crop_start);
  torch::Tensor kept;
  {
    DeviceScope scope(*text_model_, place);
    c10::InferenceMode inference;
    const auto hidden =
        text_model_->hidden_state(ids_tensor(ids).to(place.device), {}, options_.hidden_state_index);
    const auto crop = static_cast<std::int64_t>(options_.crop_start);
    if (hidden.size(1) > crop)
      kept = hidden.narrow(1, crop, hidden.size(1) - crop).to(torch::kFloat32);
  }
  std::tie(out.embeds, out.mask) =
      pad_embeddings(kept, static_cast<std::int64_t>(options_.max_length),
                     text_model_->options().hidden_size, place.device);

  torch::Tensor glyph;
  if (const auto glyph_text = hv15_glyph_text(prompt)) {
    const auto gids = glyph_tokenizer_->encode(*glyph_text, options_.glyph_max_length);
    DeviceScope scope(*glyph_model_, place);
    c10::InferenceMode inference;
    glyph = glyph_model_->forward(ids_tensor(gids).to(place.device)).to(torch::kFloat32);
  }
  std::tie(out.embeds_2, out.mask_2) =
      pad_embeddings(glyph, static_cast<std::int64_t>(options_.glyph_max_length),
                     glyph_model_->options().d_model, place.device);
  return out;
}

EncodeCost Hv15PromptEncoder::encode_cost(const std::string& prompt) const {
  const auto ids = tokenizer_->encode(hv15_chat_text(prompt, options_.system_message),
                                      options_.max_length + options_.crop_start);
  const auto& to = text_model_->options();
  // hidden_states has num_hidden_layers + 1 entries; entry i is the output of layer i.
  const std::int64_t entries = to.num_hidden_layers + 1;
  const std::int64_t entry = options_.hidden_state_index < 0 ? entries + options_.hidden_state_index
                                                             : options_.hidden_state_index;
  const auto tokens = static_cast<std::int64_t>(ids.size());
  const auto crop = static_cast<std::int64_t>(options_.crop_start);
  EncodeCost cost{qwen25vl_text_flops(to, tokens, entry), std::max<std::int64_t>(tokens - crop, 0),
                  0};
  if (const auto glyph_text = hv15_glyph_text(prompt)) {
    const auto gids = glyph_tokenizer_->encode(*glyph_text, options_.glyph_max_length);
    cost.valid_tokens_2 = static_cast<std::int64_t>(gids.size());
    cost.flops += t5_encoder_flops(glyph_model_->options(), cost.valid_tokens_2);
  }
  return cost;
}

// ---------------------------------------------------------------------------------------------

T5Options tiny_byte_t5_options(std::int64_t d_model) {
  if (d_model <= 0) throw ModelError("tiny byte T5: d_model must be positive");
  T5Options o;
  o.vocab_size = ByT5Tokenizer().vocab_size();
  o.d_model = d_model;
  o.num_heads = d_model % 4 == 0 ? 4 : 1;
  o.d_kv = d_model / o.num_heads;
  o.d_ff = 2 * d_model;
  o.num_layers = 2;
  o.relative_attention_num_buckets = 32;
  o.relative_attention_max_distance = 128;
  o.layer_norm_epsilon = 1e-6;
  o.dense_act_fn = "gelu_new";
  o.is_gated_act = true;
  o.bias_in_every_layer = false;
  return o;
}

std::unique_ptr<T5PromptEncoder> make_tiny_byte_t5(std::uint64_t seed, std::int64_t d_model,
                                                   torch::ScalarType dtype,
                                                   EncoderPlacement placement) {
  auto model = random_t5_encoder(tiny_byte_t5_options(d_model), seed, dtype, home_device(placement));
  T5PromptEncoder::Options options;
  options.placement = placement;
  return std::make_unique<T5PromptEncoder>(std::make_unique<ByT5Tokenizer>(), std::move(model),
                                           options);
}

std::unique_ptr<T5PromptEncoder> load_wan_text_encoder(const fs::path& snapshot,
                                                       torch::ScalarType dtype,
                                                       EncoderPlacement placement) {
  auto tokenizer = SentencePieceTokenizer::from_folder(snapshot / "tokenizer");
  auto model = load_t5_encoder(snapshot / "text_encoder", dtype, home_device(placement));
  T5PromptEncoder::Options options;
  options.placement = placement;
  return std::make_unique<T5PromptEncoder>(std::move(tokenizer), std::move(model), options);
}

std::unique_ptr<Hv15PromptEncoder> load_hv15_text_encoder(const fs::path& snapshot,
                                                          torch::ScalarType dtype,
                                                          EncoderPlacement placement) {
  auto tokenizer = Qwen2Tokenizer::from_folder(snapshot / "tokenizer");
  auto glyph_tokenizer = std::make_unique<ByT5Tokenizer>(snapshot / "tokenizer_2");
  auto text_model = load_qwen25vl_text(snapshot / "text_encoder", dtype, home_device(placement));
  auto glyph_model = load_t5_encoder(snapshot / "text_encoder_2", dtype, home_device(placement));
  Hv15PromptEncoder::Options options;
  options.placement = placement;
  return std::make_unique<Hv15PromptEncoder>(std::move(tokenizer), std::move(text_model),
                                             std::move(glyph_tokenizer), std::move(glyph_model),
                                             options);
}

}  // namespace omnidp::models::text
