#pragma once
// Refcheck runners for the model-free cases (see refcheck.hpp for the runner contract, checks.hpp for what runners share).

#include "omnidp/refcheck/checks.hpp"

namespace omnidp::refcheck {

// rng_cpu_randn: every io tensor named `randn_seed<S>_<anything>` must equal
// randn_cpu(its shape, S) exactly.
[[nodiscard]] CaseRunner run_rng;

// schedulers: io tensors named `<euler|unipc>_shift<S>_n<N>_<what>` (S may be written 5, 5.0
// or 2p5): `sigmas` and `timesteps` of each (scheduler, shift, N) group, and for UniPC, when
// `x0` and `model_out<i>` are present, the whole closed-loop trajectory
// x_{i+1} = step(model_out_i, i, x_i) against every `x<i>` (one line, worst step in the note).
[[nodiscard]] CaseRunner run_schedulers;

}  // namespace omnidp::refcheck
