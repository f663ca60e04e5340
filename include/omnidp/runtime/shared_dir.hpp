#pragma once
// The startup check that every rank sees the same output folder (docs/runtime.md, "Shared
// output folder"). A node-local `output.dir` (/tmp, a local scratch disk) would scatter the
// rank files over the nodes: rank 0 could neither resume nor merge the other nodes' results.
//
// Collective over the world transport: every rank calls it, before the job's first message.
//  1. rank 0 writes a token file `.omnidp-shared-<nonce>` holding a random nonce into the
//     probed folder: output.dir, or its nearest existing ancestor when output.dir does not
//     exist yet (nothing is created before the manifest has been checked);
//  2. rank 0 sends the nonce and the probed folder to every rank; each rank checks that its
//     own probed folder is the same path and that it reads the nonce from the token there;
//  3. the verdicts are gathered on rank 0, which removes the token and sends the outcome back.
// Every rank then returns, or throws the same ConfigError("output.dir", ...) naming each rank
// that does not see the token, its host and the folder (exit 2). A world of one rank returns
// at once.

#include <filesystem>
#include <string>

#include "omnidp/runtime/transport.hpp"

namespace omnidp::runtime {

// The folder the check writes its token into: `dir` made absolute, or its nearest existing
// ancestor when `dir` does not exist.
[[nodiscard]] std::filesystem::path shared_dir_probe(const std::filesystem::path& dir);

// `dir` is this rank's output.dir (the same string on every rank); `host` names this rank in
// the error message. Throws ConfigError (exit 2) when some rank does not see rank 0's token.
void check_shared_output_dir(Transport& world, const std::filesystem::path& dir,
                             const std::string& host);

}  // namespace omnidp::runtime
