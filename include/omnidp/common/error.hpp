#pragma once
// Typed errors of omni-dp. Every failure that reaches a user is one of these: it carries a
// kind (which decides the process exit code), a message, and the context it happened in
// (YAML path, manifest file:line:field, rank, request id, library error stack).
// Thread-safe: plain value types.

#include <stdexcept>
#include <string>
#include <vector>

namespace omnidp {

// Process exit codes (docs/cli.md, "Exit codes").
enum class ExitCode : int {
  ok = 0,           // every request done
  some_failed = 1,  // the job ran, some requests failed
  usage = 2,        // usage, configuration, manifest or input error: nothing ran
  interrupted = 75  // drained by a signal: resume me (EX_TEMPFAIL)
};

enum class ErrorKind {
  usage,     // command line
  config,    // YAML configuration
  manifest,  // JSONL manifest
  input,     // an input file (image, embeddings) of one request
  io,        // file system
  mpi,       // an MPI call failed
  hdf5,      // an HDF5 call failed
  weights,   // safetensors / checkpoint loading
  model,     // model execution
  runtime,   // protocol or scheduling invariant broken
  interrupted
};

[[nodiscard]] const char* to_string(ErrorKind kind) noexcept;

// Base of every omni-dp error. what() is "<context>: <message>" with the context items
// joined by ": ".
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, std::vector<std::string> context = {});

  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  [[nodiscard]] const std::vector<std::string>& context() const noexcept { return context_; }
  // The exit code a process should end with when this error stops it.
  [[nodiscard]] ExitCode exit_code() const noexcept;

 private:
  ErrorKind kind_;
  std::string message_;
  std::vector<std::string> context_;
};

// Convenience subclasses so call sites and tests can catch by type.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(ErrorKind::usage, message) {}
};

// `path` is the YAML path ("scheduler.policy"), shown first; with a `location` ("c.yaml:3",
// "--set"), that comes before it: "c.yaml:3: generation.num_frames: ...".
class ConfigError : public Error {
 public:
  ConfigError(const std::string& path, const std::string& message)
      : Error(ErrorKind::config, message, {path}), path_(path) {}
  ConfigError(const std::string& location, const std::string& path, const std::string& message)
      : Error(ErrorKind::config, message, {location, path}), path_(path), location_(location) {}
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] const std::string& location() const noexcept { return location_; }

 private:
  std::string path_;
  std::string location_;
};

// file:line:field context of a manifest line.
class ManifestError : public Error {
 public:
  ManifestError(const std::string& file, std::size_t line, const std::string& field,
                const std::string& message);
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] std::size_t line() const noexcept { return line_; }
  [[nodiscard]] const std::string& field() const noexcept { return field_; }

 private:
  std::string file_;
  std::size_t line_;
  std::string field_;
};

class InputError : public Error {
 public:
  InputError(const std::string& file, const std::string& message)
      : Error(ErrorKind::input, message, {file}) {}
};

class IoError : public Error {
 public:
  IoError(const std::string& path, const std::string& message)
      : Error(ErrorKind::io, message, {path}) {}
};

class MpiError : public Error {
 public:
  MpiError(const std::string& call, int rank, const std::string& library_message)
      : Error(ErrorKind::mpi, library_message, {"rank " + std::to_string(rank), call}) {}
};

class Hdf5Error : public Error {
 public:
  Hdf5Error(const std::string& what_call, const std::string& context, const std::string& stack)
      : Error(ErrorKind::hdf5, stack, {context, what_call}) {}
};

class WeightsError : public Error {
 public:
  WeightsError(const std::string& file, const std::string& message)
      : Error(ErrorKind::weights, message, {file}) {}
};

class ModelError : public Error {
 public:
  explicit ModelError(const std::string& message, std::vector<std::string> context = {})
      : Error(ErrorKind::model, message, std::move(context)) {}
};

// A model failure that may succeed on another attempt (out of memory, a device fault): the
// runtime retries the request on another replica, up to scheduler.max_retries times.
class TransientModelError : public ModelError {
 public:
  using ModelError::ModelError;
};

class RuntimeError : public Error {
 public:
  explicit RuntimeError(const std::string& message, std::vector<std::string> context = {})
      : Error(ErrorKind::runtime, message, std::move(context)) {}
};

}  // namespace omnidp
