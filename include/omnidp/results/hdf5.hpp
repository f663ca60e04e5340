#pragma once
// Move-only RAII owners of HDF5 C handles (one type per handle kind) and the one place where
// HDF5 results are checked: h5::call() turns a negative result into an omnidp::Hdf5Error that
// carries the HDF5 error stack (walked with H5Ewalk2) and the caller's context. HDF5's
// automatic stack printing is switched off for every thread that goes through h5::call().
//
// Internal to the results area (sources and tests); other areas use the HDF5-free headers.
// Thread-safety: the HDF5 library is a thread-safe build (one global lock); a handle is used
// by one thread at a time.

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace omnidp::results::h5 {

// Switches automatic error printing off for the calling thread (idempotent, cheap).
void silence_errors() noexcept;
// Throws Hdf5Error(call, context, <stack>) and clears the calling thread's error stack.
[[noreturn]] void throw_error(std::string_view call, std::string_view context);
// The calling thread's error stack as one line ("func(): desc [major: minor]; ..."), cleared.
[[nodiscard]] std::string take_error_stack();
// The errno of a full disk that `text` (an error stack, an Error's what()) reports: ENOSPC,
// EFBIG (a file-size limit) or EDQUOT, as HDF5's "errno = N" or as its strerror text; 0 when
// it reports none of them.
[[nodiscard]] int disk_full_errno(std::string_view text) noexcept;
// A full-disk error text in a line worth reading: a text of more than two "; "-separated
// entries (HDF5's stack runs to tens) becomes its first entry (the call that failed), "...",
// the first entry that names the errno (the file driver's write) and the count of entries;
// a shorter text is returned as it is.
[[nodiscard]] std::string disk_full_summary(std::string_view text);

// Runs fn() (an HDF5 call) with printing off; a negative result throws Hdf5Error.
template <class Fn>
auto call(std::string_view name, std::string_view context, Fn&& fn) {
  silence_errors();
  auto result = std::forward<Fn>(fn)();
  if (result < 0) throw_error(name, context);
  return result;
}

enum class Kind { file, group, dataset, dataspace, datatype, plist, attribute };

// Owns one hid_t of kind K. close() is checked (throws); the destructor closes unchecked (it
// may run during unwinding: it only warns). Close a handle whose close writes data (a dataset,
// an attribute, a file) with close() before its result counts.
template <Kind K>
class Handle {
 public:
  Handle() noexcept = default;
  explicit Handle(hid_t id) noexcept : id_(id) {}
  ~Handle() { reset(); }
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  [[nodiscard]] hid_t id() const noexcept { return id_; }
  [[nodiscard]] bool valid() const noexcept { return id_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }

  // Checked (Hdf5Error with `context`); the handle is empty afterwards, even when it throws.
  void close(std::string_view context = "closing a handle");
  void reset() noexcept;  // unchecked close
  // Gives the id up without closing it: it stays open until the process ends. For a file whose
  // write failed (RankWriter): closing would flush metadata for data the disk never got.
  hid_t release() noexcept { return std::exchange(id_, H5I_INVALID_HID); }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

using File = Handle<Kind::file>;
using Group = Handle<Kind::group>;
using Dataset = Handle<Kind::dataset>;
using Dataspace = Handle<Kind::dataspace>;
using Datatype = Handle<Kind::datatype>;
using PropList = Handle<Kind::plist>;
using Attribute = Handle<Kind::attribute>;

extern template class Handle<Kind::file>;
extern template class Handle<Kind::group>;
extern template class Handle<Kind::dataset>;
extern template class Handle<Kind::dataspace>;
extern template class Handle<Kind::datatype>;
extern template class Handle<Kind::plist>;
extern template class Handle<Kind::attribute>;

// ---- files ----------------------------------------------------------------------------------
// File access list: sec2, HDF5 1.8-compatible format (no file-consistency flags, so a file
// left open by a killed process opens without h5clear), file locking on where the file system
// supports it (`locking` false: HDF5's flock is not taken, HDF5 >= 1.10.7 only).
[[nodiscard]] PropList file_access(bool locking = true);
// Whether file_access(false) can really switch locking off in this HDF5 version.
[[nodiscard]] bool can_skip_file_lock() noexcept;
// Creates `path`; fails if it exists (H5F_ACC_EXCL) unless `truncate`.
[[nodiscard]] File create_file(const std::string& path, bool truncate = false);
// Opens `path`, a regular file (its links followed): anything else there (a FIFO, a device, a
// folder, a link loop or a dangling link) is an IoError naming `path` and what it is, never
// opened; nothing there is HDF5's error (Hdf5Error).
[[nodiscard]] File open_file(const std::string& path, bool writable = false, bool locking = true);
// H5Fflush, then fsync of the file descriptor.
void flush_durable(const File& file, std::string_view context);
// Reserves `bytes` of disk past the file's end of allocation (posix_fallocate), so that the
// writes that follow cannot find the disk full halfway. Throws IoError with the OS's text
// (ENOSPC, EFBIG, EDQUOT: a full disk) when it cannot; a file system that cannot reserve at
// all (EOPNOTSUPP) is no error. trim_reserved_space() gives back what lies past the end of
// allocation (after a flush: nothing of the file's is there).
void reserve_space(const File& file, std::uint64_t bytes, std::string_view context);
void trim_reserved_space(const File& file, std::string_view context);

// ---- groups, links, datasets ----------------------------------------------------------------
[[nodiscard]] Group create_group(hid_t loc, const std::string& name);
[[nodiscard]] Group open_group(hid_t loc, const std::string& name);
[[nodiscard]] Dataset open_dataset(hid_t loc, const std::string& name);
[[nodiscard]] bool link_exists(hid_t loc, const std::string& name);
// The file an external link `name` of `loc` points into (as written in the link: results.h5's
// links name their rank files relative to it); nullopt for any other link. Opens nothing.
[[nodiscard]] std::optional<std::string> external_link_file(hid_t loc, const std::string& name);
[[nodiscard]] Dataspace dataset_space(const Dataset& dataset);
[[nodiscard]] std::vector<hsize_t> dataset_dims(const Dataset& dataset);
// Link creation list with UTF-8 names (and intermediate groups when `parents`).
[[nodiscard]] PropList link_create_utf8(bool parents = false);

// ---- types -----------------------------------------------------------------------------------
[[nodiscard]] Datatype vlen_string_type();                   // UTF-8, variable length
[[nodiscard]] Datatype fixed_string_type(std::size_t size);  // ASCII, null-padded
// Frees what HDF5 allocated for variable-length data read into `buffer`.
void reclaim_vlen(hid_t type, hid_t space, void* buffer) noexcept;

// ---- attributes (scalar) ----------------------------------------------------------------------
// Each writer replaces an existing attribute of the same name.
void write_attribute(hid_t obj, const std::string& name, std::string_view value);
void write_attribute(hid_t obj, const std::string& name, std::int64_t value);
void write_attribute(hid_t obj, const std::string& name, std::uint64_t value);
void write_attribute(hid_t obj, const std::string& name, double value);
void write_attribute(hid_t obj, const std::string& name, const std::vector<std::string>& values);
[[nodiscard]] bool has_attribute(hid_t obj, const std::string& name);
// Readers throw Hdf5Error when the attribute is missing or not convertible.
[[nodiscard]] std::string read_string_attribute(hid_t obj, const std::string& name);
[[nodiscard]] std::int64_t read_int_attribute(hid_t obj, const std::string& name);
[[nodiscard]] std::uint64_t read_uint_attribute(hid_t obj, const std::string& name);
[[nodiscard]] double read_double_attribute(hid_t obj, const std::string& name);
[[nodiscard]] std::vector<std::string> read_strings_attribute(hid_t obj, const std::string& name);

// ---- small datasets -------------------------------------------------------------------------
void write_string_dataset(hid_t loc, const std::string& name, std::string_view value);
[[nodiscard]] std::string read_string_dataset(hid_t loc, const std::string& name);
void write_double_dataset(hid_t loc, const std::string& name, std::span<const double> values);
[[nodiscard]] std::vector<double> read_double_dataset(hid_t loc, const std::string& name);

}  // namespace omnidp::results::h5
