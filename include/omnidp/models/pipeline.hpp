#pragma once
// The one narrow interface the worker sees of a model (what the job knows of a model without
// loading it: model_facts.hpp). Torch-free.
//
// Ownership: a worker owns its Pipeline (std::unique_ptr) for the whole job, creates it once
// on its own thread and calls generate() from that thread only, one request at a time.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "omnidp/common/video.hpp"
#include "omnidp/config/config.hpp"
#include "omnidp/manifest/request.hpp"
#include "omnidp/models/guidance.hpp"
#include "omnidp/models/model_info.hpp"

namespace omnidp {

class Collective;  // collective/collective.hpp: torch-free, MPI-free

// The transformer forwards of one request (GenerateContext::on_forwards).
struct ForwardCounts {
  int forwards = 0;  // forwards the denoising loop asked for
  int computed = 0;  // of them, those whose whole block stack ran (the others: cache hits)
  friend bool operator==(const ForwardCounts&, const ForwardCounts&) = default;
};

// Passed to generate(): lets a long generation stop early when the job abandons work.
struct GenerateContext {
  std::function<bool()> abandoned;                   // polled between denoising steps; may be empty
  std::function<void(int step, int total)> on_step;  // progress callback; may be empty
  int attempt = 1;  // 1-based attempt of this request (retries after transient failures)
  // CFG-parallel (parallel.cfg_parallel_size 2): the replica group's collectives, rank 0 the
  // conditional branch and the group's leader, rank 1 the unconditional one; null otherwise.
  // Every rank of the group calls generate() with the same request; each runs its branch of
  // every step and exchanges the noise predictions, so all take the same scheduler steps.
  // Only the leader's video is kept: a pipeline may return an empty Video on rank 1.
  // With sequence or tensor parallelism too, `cfg` is over the group's ranks that share this
  // rank's sequence and tensor shard (size cfg_parallel_size; null when that is 1).
  Collective* cfg = nullptr;
  // Ulysses sequence parallel: the group's ranks that share this rank's cfg branch and tensor
  // shard, in sequence-shard order; null when parallel.sequence_parallel_size is 1.
  Collective* sequence = nullptr;
  // Tensor parallel: the group's ranks that share this rank's cfg branch and sequence shard, in
  // tensor-shard order; null when parallel.tensor_parallel_size is 1.
  Collective* tensor = nullptr;
  // Called once per successful generate(), before it returns, on every rank of the group, with
  // the whole request's transformer forwards (every CFG branch of the group counted: a guided
  // step asks for 2, an unguided one 1) and how many of them ran their whole block stack; they
  // differ only under a step cache (generation.cache, docs/models.md "Step caching"). May be
  // empty.
  std::function<void(const ForwardCounts&)> on_forwards;
};

// The model FLOPs of one request (docs/performance.md, "MFU"): analytic counts of the matrix
// multiplications and convolutions (2 FLOPs per multiply-add), not of the elementwise work.
struct RequestFlops {
  double transformer = 0.0;  // every denoising forward (x 2 branches with CFG)
  double vae = 0.0;          // the VAE decode, plus the encode of an i2v image
  double text = 0.0;         // the text encoder(s): the prompt, and the negative one with CFG
  double image = 0.0;        // image encoders (HunyuanVideo-1.5 i2v SigLIP)
  [[nodiscard]] double total() const noexcept { return transformer + vae + text + image; }
  friend bool operator==(const RequestFlops&, const RequestFlops&) = default;
};

class Pipeline {
 public:
  virtual ~Pipeline() = default;
  Pipeline() = default;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Generates one request. Throws omnidp::Error (ModelError, InputError, ...) on failure; the
  // worker records the failure and goes on. Must be deterministic given request.input_key.
  [[nodiscard]] virtual Video generate(const Request& request, const GenerateContext& ctx) = 0;
  // The model FLOPs of generating `request` (the whole group's work: every CFG branch and
  // sequence shard); nullopt for a model without a count (the worker then records 0 = not
  // counted). Cheap: no tensor work (a prompt may be tokenized).
  [[nodiscard]] virtual std::optional<RequestFlops> flops(const Request& request) const {
    (void)request;
    return std::nullopt;
  }
  [[nodiscard]] virtual std::string model_name() const = 0;
  [[nodiscard]] virtual std::string device_name() const = 0;
};

using PipelineFactory = std::function<std::unique_ptr<Pipeline>(const DeviceBinding&)>;

}  // namespace omnidp
