#include "omnidp/results/hdf5.hpp"

#include "omnidp/results/file_locking.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/common/log.hpp"

namespace omnidp::results::h5 {
namespace {

// HDF5 1.10 frees a file whose close fails (a full disk: its last flush cannot be written) but
// keeps its id, and the library's exit handler (H5_term_library) closes that id again and
// crashes the process at exit. Every HDF5 object here is an RAII handle closed before exit, so
// the exit handler has nothing left to do: turn it off, at static initialization, before the
// first HDF5 call initializes the library (H5dont_atexit has no effect after that).
[[maybe_unused]] const bool kNoExitHandler = [] { return H5dont_atexit() >= 0; }();

herr_t collect_entry(unsigned n, const H5E_error2_t* err, void* client) {
  auto* out = static_cast<std::string*>(client);
  if (n > 0) *out += "; ";
  *out += err->func_name != nullptr ? err->func_name : "?";
  *out += "(): ";
  *out += err->desc != nullptr ? err->desc : "";
  char major[128] = {};
  char minor[128] = {};
  H5Eget_msg(err->maj_num, nullptr, major, sizeof(major));
  H5Eget_msg(err->min_num, nullptr, minor, sizeof(minor));
  if (major[0] != '\0' || minor[0] != '\0') {
    *out += " [";
    *out += major;
    *out += ": ";
    *out += minor;
    *out += "]";
  }
  return 0;
}

herr_t close_id(Kind kind, hid_t id) {
  switch (kind) {
    case Kind::file: return H5Fclose(id);
    case Kind::group: return H5Gclose(id);
    case Kind::dataset: return H5Dclose(id);
    case Kind::dataspace: return H5Sclose(id);
    case Kind::datatype: return H5Tclose(id);
    case Kind::plist: return H5Pclose(id);
    case Kind::attribute: return H5Aclose(id);
  }
  return -1;
}

const char* close_name(Kind kind) {
  switch (kind) {
    case Kind::file: return "H5Fclose";
    case Kind::group: return "H5Gclose";
    case Kind::dataset: return "H5Dclose";
    case Kind::dataspace: return "H5Sclose";
    case Kind::datatype: return "H5Tclose";
    case Kind::plist: return "H5Pclose";
    case Kind::attribute: return "H5Aclose";
  }
  return "H5?close";
}

Dataspace scalar_space() {
  return Dataspace(call("H5Screate", "scalar", [] { return H5Screate(H5S_SCALAR); }));
}

void remove_attribute_if_present(hid_t obj, const std::string& name) {
  if (has_attribute(obj, name)) {
    call("H5Adelete", name, [&] { return H5Adelete(obj, name.c_str()); });
  }
}

void write_scalar_attribute(hid_t obj, const std::string& name, hid_t file_type, hid_t mem_type,
                            const void* value) {
  remove_attribute_if_present(obj, name);
  const Dataspace space = scalar_space();
  Attribute attr(call("H5Acreate2", name, [&] {
    return H5Acreate2(obj, name.c_str(), file_type, space.id(), H5P_DEFAULT, H5P_DEFAULT);
  }));
  call("H5Awrite", name, [&] { return H5Awrite(attr.id(), mem_type, value); });
  attr.close(name);
}

Attribute open_attribute(hid_t obj, const std::string& name) {
  return Attribute(call("H5Aopen", name, [&] { return H5Aopen(obj, name.c_str(), H5P_DEFAULT); }));
}

template <class T>
T read_scalar_attribute(hid_t obj, const std::string& name, hid_t mem_type) {
  const Attribute attr = open_attribute(obj, name);
  T value{};
  call("H5Aread", name, [&] { return H5Aread(attr.id(), mem_type, &value); });
  return value;
}

}  // namespace

void silence_errors() noexcept {
  thread_local bool silenced = false;
  if (!silenced) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    silenced = true;
  }
}

std::string take_error_stack() {
  std::string stack;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_entry, &stack);
  H5Eclear2(H5E_DEFAULT);
  if (stack.empty()) stack = "(no HDF5 error stack)";
  // One line: the sec2 driver's messages embed ctime()'s newline ("time = Thu Dec  3 ...\n").
  std::replace(stack.begin(), stack.end(), '\n', ' ');
  return stack;
}

void throw_error(std::string_view call_name, std::string_view context) {
  throw Hdf5Error(std::string(call_name), std::string(context), take_error_stack());
}

std::string disk_full_summary(std::string_view text) {
  std::vector<std::string_view> entries;
  for (std::size_t at = 0;;) {
    const std::size_t end = text.find("; ", at);
    entries.push_back(text.substr(at, end == std::string_view::npos ? end : end - at));
    if (end == std::string_view::npos) break;
    at = end + 2;
  }
  if (entries.size() <= 2) return std::string(text);
  std::string out(entries.front());
  for (const auto entry : entries) {
    if (disk_full_errno(entry) != 0) {
      if (entry != entries.front()) out += fmt::format("; ...; {}", entry);
      break;
    }
  }
  return out + fmt::format(" ({} HDF5 error stack entries in the rank's log)", entries.size());
}

int disk_full_errno(std::string_view text) noexcept {
  for (const int code : {ENOSPC, EFBIG, EDQUOT}) {
    const std::string number = fmt::format("errno = {}", code);
    for (std::size_t at = text.find(number); at != std::string_view::npos;
         at = text.find(number, at + 1)) {
      const std::size_t end = at + number.size();
      if (end == text.size() || text[end] < '0' || text[end] > '9') return code;
    }
    if (text.find(std::strerror(code)) != std::string_view::npos) return code;
  }
  return 0;
}

template <Kind K>
void Handle<K>::close(std::string_view context) {
  if (!valid()) return;
  const hid_t id = std::exchange(id_, H5I_INVALID_HID);
  call(close_name(K), context, [&] { return close_id(K, id); });
}

template <Kind K>
void Handle<K>::reset() noexcept {
  if (!valid()) return;
  const hid_t id = std::exchange(id_, H5I_INVALID_HID);
  silence_errors();
  if (close_id(K, id) < 0) {
    const std::string stack = take_error_stack();
    try {
      log_warn(std::string(close_name(K)) + " failed: " + stack);
    } catch (...) {  // logging must not throw out of a destructor
    }
  }
}

template class Handle<Kind::file>;
template class Handle<Kind::group>;
template class Handle<Kind::dataset>;
template class Handle<Kind::dataspace>;
template class Handle<Kind::datatype>;
template class Handle<Kind::plist>;
template class Handle<Kind::attribute>;

// ---- files ----------------------------------------------------------------------------------

bool can_skip_file_lock() noexcept {
#if H5_VERSION_GE(1, 10, 7)
  return true;
#else
  return false;
#endif
}

PropList file_access(bool locking) {
  PropList fapl(call("H5Pcreate", "file access", [] { return H5Pcreate(H5P_FILE_ACCESS); }));
  call("H5Pset_libver_bounds", "file access",
       [&] { return H5Pset_libver_bounds(fapl.id(), H5F_LIBVER_V18, H5F_LIBVER_V18); });
  // output.file_locking (file_locking.hpp): off process-wide on file systems where HDF5's
  // flock fails or hangs; a rank file has exactly one writer by construction.
  const bool lock = locking && file_locking_enabled();
#if H5_VERSION_GE(1, 10, 7)
  // Lock where the file system can; where flock is unsupported, go on without.
  call("H5Pset_file_locking", "file access",
       [&] { return H5Pset_file_locking(fapl.id(), lock, true); });
#else
  // Before 1.10.7 only the environment variable switches it off (read at each open).
  if (!lock) ::setenv("HDF5_USE_FILE_LOCKING", "FALSE", 1);
#endif
  return fapl;
}

File create_file(const std::string& path, bool truncate) {
  const PropList fapl = file_access();
  return File(call("H5Fcreate", path, [&] {
    return H5Fcreate(path.c_str(), truncate ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5P_DEFAULT, fapl.id());
  }));
}

File open_file(const std::string& path, bool writable, bool locking) {
  // HDF5's open would block on a FIFO, and reads a device or a folder as a broken file: only a
  // regular file is opened (issue 52, classes 5 and 13); a missing one is HDF5's error as ever.
  if (const std::string problem = regular_file_problem(path);
      !problem.empty() && problem != "file not found") {
    throw IoError(path, problem);
  }
  const PropList fapl = file_access(locking);
  return File(call("H5Fopen", path, [&] {
    return H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl.id());
  }));
}

namespace {

// The file descriptor of a file opened with the sec2 driver (file_access()).
int descriptor(const File& file, std::string_view context) {
  void* handle = nullptr;
  call("H5Fget_vfd_handle", context,
       [&] { return H5Fget_vfd_handle(file.id(), H5P_DEFAULT, &handle); });
  return *static_cast<int*>(handle);  // the sec2 driver's handle is its descriptor
}

haddr_t end_of_allocation(const File& file, std::string_view context) {
  haddr_t eoa = 0;
  call("H5Fget_eoa", context, [&] { return H5Fget_eoa(file.id(), &eoa); });
  return eoa;
}

}  // namespace

void flush_durable(const File& file, std::string_view context) {
  call("H5Fflush", context, [&] { return H5Fflush(file.id(), H5F_SCOPE_LOCAL); });
  if (::fsync(descriptor(file, context)) != 0) {
    throw IoError(std::string(context), std::string("fsync failed: ") + std::strerror(errno));
  }
}

void reserve_space(const File& file, std::uint64_t bytes, std::string_view context) {
  const haddr_t eoa = end_of_allocation(file, context);
  const int rc = ::posix_fallocate(descriptor(file, context), static_cast<off_t>(eoa),
                                   static_cast<off_t>(bytes));
  // A file system that cannot reserve: the checked writes still find a full disk.
  if (rc == 0 || rc == EOPNOTSUPP || rc == EINVAL || rc == ENOSYS) return;
  // In the words of HDF5's sec2 driver, like a failed write.
  throw IoError(
      std::string(context),
      fmt::format(
          "reserving {} bytes past the end of the file failed: errno = {}, error message = '{}'",
          bytes, rc, std::strerror(rc)));
}

void trim_reserved_space(const File& file, std::string_view context) {
  const haddr_t eoa = end_of_allocation(file, context);
  const int fd = descriptor(file, context);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw IoError(std::string(context), std::string("fstat failed: ") + std::strerror(errno));
  }
  if (static_cast<haddr_t>(st.st_size) <= eoa) return;
  if (::ftruncate(fd, static_cast<off_t>(eoa)) != 0) {
    throw IoError(std::string(context), std::string("ftruncate failed: ") + std::strerror(errno));
  }
}

// ---- groups, links, datasets ----------------------------------------------------------------

Group create_group(hid_t loc, const std::string& name) {
  const PropList lcpl = link_create_utf8(false);
  return Group(call("H5Gcreate2", name, [&] {
    return H5Gcreate2(loc, name.c_str(), lcpl.id(), H5P_DEFAULT, H5P_DEFAULT);
  }));
}

Group open_group(hid_t loc, const std::string& name) {
  return Group(call("H5Gopen2", name, [&] { return H5Gopen2(loc, name.c_str(), H5P_DEFAULT); }));
}

Dataset open_dataset(hid_t loc, const std::string& name) {
  return Dataset(call("H5Dopen2", name, [&] { return H5Dopen2(loc, name.c_str(), H5P_DEFAULT); }));
}

bool link_exists(hid_t loc, const std::string& name) {
  return call("H5Lexists", name, [&] { return H5Lexists(loc, name.c_str(), H5P_DEFAULT); }) > 0;
}

std::optional<std::string> external_link_file(hid_t loc, const std::string& name) {
  H5L_info_t info{};
  call("H5Lget_info", name, [&] { return H5Lget_info(loc, name.c_str(), &info, H5P_DEFAULT); });
  if (info.type != H5L_TYPE_EXTERNAL) return std::nullopt;
  std::vector<char> value(std::max<std::size_t>(info.u.val_size, 1));
  call("H5Lget_val", name,
       [&] { return H5Lget_val(loc, name.c_str(), value.data(), value.size(), H5P_DEFAULT); });
  unsigned flags = 0;
  const char* file = nullptr;
  const char* object = nullptr;
  call("H5Lunpack_elink_val", name,
       [&] { return H5Lunpack_elink_val(value.data(), value.size(), &flags, &file, &object); });
  return std::string(file != nullptr ? file : "");
}

Dataspace dataset_space(const Dataset& dataset) {
  return Dataspace(call("H5Dget_space", "dataset", [&] { return H5Dget_space(dataset.id()); }));
}

std::vector<hsize_t> dataset_dims(const Dataset& dataset) {
  const Dataspace space = dataset_space(dataset);
  const int rank = call("H5Sget_simple_extent_ndims", "dataset",
                        [&] { return H5Sget_simple_extent_ndims(space.id()); });
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  call("H5Sget_simple_extent_dims", "dataset",
       [&] { return H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr); });
  return dims;
}

PropList link_create_utf8(bool parents) {
  PropList lcpl(call("H5Pcreate", "link create", [] { return H5Pcreate(H5P_LINK_CREATE); }));
  call("H5Pset_char_encoding", "link create",
       [&] { return H5Pset_char_encoding(lcpl.id(), H5T_CSET_UTF8); });
  if (parents) {
    call("H5Pset_create_intermediate_group", "link create",
         [&] { return H5Pset_create_intermediate_group(lcpl.id(), 1); });
  }
  return lcpl;
}

// ---- types -----------------------------------------------------------------------------------

Datatype vlen_string_type() {
  Datatype type(call("H5Tcopy", "string type", [] { return H5Tcopy(H5T_C_S1); }));
  call("H5Tset_size", "string type", [&] { return H5Tset_size(type.id(), H5T_VARIABLE); });
  call("H5Tset_cset", "string type", [&] { return H5Tset_cset(type.id(), H5T_CSET_UTF8); });
  return type;
}

Datatype fixed_string_type(std::size_t size) {
  Datatype type(call("H5Tcopy", "string type", [] { return H5Tcopy(H5T_C_S1); }));
  call("H5Tset_size", "string type", [&] { return H5Tset_size(type.id(), size); });
  call("H5Tset_strpad", "string type", [&] { return H5Tset_strpad(type.id(), H5T_STR_NULLPAD); });
  call("H5Tset_cset", "string type", [&] { return H5Tset_cset(type.id(), H5T_CSET_ASCII); });
  return type;
}

void reclaim_vlen(hid_t type, hid_t space, void* buffer) noexcept {
  silence_errors();
#if H5_VERSION_GE(1, 12, 0)
  const herr_t status = H5Treclaim(type, space, H5P_DEFAULT, buffer);
#else
  const herr_t status = H5Dvlen_reclaim(type, space, H5P_DEFAULT, buffer);
#endif
  if (status < 0) {
    try {
      log_warn("reclaiming variable-length data failed: " + take_error_stack());
    } catch (...) {
    }
  }
}

// ---- attributes ------------------------------------------------------------------------------

void write_attribute(hid_t obj, const std::string& name, std::string_view value) {
  const Datatype type = vlen_string_type();
  const std::string text(value);
  const char* pointer = text.c_str();
  write_scalar_attribute(obj, name, type.id(), type.id(), &pointer);
}

void write_attribute(hid_t obj, const std::string& name, std::int64_t value) {
  write_scalar_attribute(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
}

void write_attribute(hid_t obj, const std::string& name, std::uint64_t value) {
  write_scalar_attribute(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
}

void write_attribute(hid_t obj, const std::string& name, double value) {
  write_scalar_attribute(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

void write_attribute(hid_t obj, const std::string& name, const std::vector<std::string>& values) {
  remove_attribute_if_present(obj, name);
  const Datatype type = vlen_string_type();
  const hsize_t count = values.size();
  const Dataspace space(
      call("H5Screate_simple", name, [&] { return H5Screate_simple(1, &count, nullptr); }));
  std::vector<const char*> pointers;
  pointers.reserve(values.size());
  for (const auto& v : values) pointers.push_back(v.c_str());
  Attribute attr(call("H5Acreate2", name, [&] {
    return H5Acreate2(obj, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT);
  }));
  if (!values.empty()) {  // H5Awrite refuses a null buffer
    call("H5Awrite", name, [&] { return H5Awrite(attr.id(), type.id(), pointers.data()); });
  }
  attr.close(name);
}

bool has_attribute(hid_t obj, const std::string& name) {
  return call("H5Aexists", name, [&] { return H5Aexists(obj, name.c_str()); }) > 0;
}

std::string read_string_attribute(hid_t obj, const std::string& name) {
  const Attribute attr = open_attribute(obj, name);
  const Datatype type = vlen_string_type();
  const Dataspace space = scalar_space();
  char* value = nullptr;
  call("H5Aread", name, [&] { return H5Aread(attr.id(), type.id(), &value); });
  std::string out = value != nullptr ? value : "";
  reclaim_vlen(type.id(), space.id(), &value);
  return out;
}

std::int64_t read_int_attribute(hid_t obj, const std::string& name) {
  return read_scalar_attribute<std::int64_t>(obj, name, H5T_NATIVE_INT64);
}

std::uint64_t read_uint_attribute(hid_t obj, const std::string& name) {
  return read_scalar_attribute<std::uint64_t>(obj, name, H5T_NATIVE_UINT64);
}

double read_double_attribute(hid_t obj, const std::string& name) {
  return read_scalar_attribute<double>(obj, name, H5T_NATIVE_DOUBLE);
}

std::vector<std::string> read_strings_attribute(hid_t obj, const std::string& name) {
  const Attribute attr = open_attribute(obj, name);
  const Dataspace space(call("H5Aget_space", name, [&] { return H5Aget_space(attr.id()); }));
  const hssize_t count = call("H5Sget_simple_extent_npoints", name,
                              [&] { return H5Sget_simple_extent_npoints(space.id()); });
  const Datatype type = vlen_string_type();
  std::vector<char*> pointers(static_cast<std::size_t>(count), nullptr);
  if (count == 0) return {};
  call("H5Aread", name, [&] { return H5Aread(attr.id(), type.id(), pointers.data()); });
  std::vector<std::string> out;
  out.reserve(pointers.size());
  for (const char* p : pointers) out.emplace_back(p != nullptr ? p : "");
  reclaim_vlen(type.id(), space.id(), pointers.data());
  return out;
}

// ---- small datasets -------------------------------------------------------------------------

void write_string_dataset(hid_t loc, const std::string& name, std::string_view value) {
  const Datatype type = vlen_string_type();
  const Dataspace space = scalar_space();
  const PropList lcpl = link_create_utf8(false);
  Dataset dataset(call("H5Dcreate2", name, [&] {
    return H5Dcreate2(loc, name.c_str(), type.id(), space.id(), lcpl.id(), H5P_DEFAULT, H5P_DEFAULT);
  }));
  const std::string text(value);
  const char* pointer = text.c_str();
  call("H5Dwrite", name,
       [&] { return H5Dwrite(dataset.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &pointer); });
  dataset.close(name);
}

std::string read_string_dataset(hid_t loc, const std::string& name) {
  const Dataset dataset = open_dataset(loc, name);
  const Datatype type = vlen_string_type();
  const Dataspace space = scalar_space();
  char* value = nullptr;
  call("H5Dread", name,
       [&] { return H5Dread(dataset.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &value); });
  std::string out = value != nullptr ? value : "";
  reclaim_vlen(type.id(), space.id(), &value);
  return out;
}

void write_double_dataset(hid_t loc, const std::string& name, std::span<const double> values) {
  const hsize_t count = values.size();
  const Dataspace space(
      call("H5Screate_simple", name, [&] { return H5Screate_simple(1, &count, nullptr); }));
  Dataset dataset(call("H5Dcreate2", name, [&] {
    return H5Dcreate2(loc, name.c_str(), H5T_IEEE_F64LE, space.id(), H5P_DEFAULT, H5P_DEFAULT,
                      H5P_DEFAULT);
  }));
  if (count > 0) {
    call("H5Dwrite", name, [&] {
      return H5Dwrite(dataset.id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    });
  }
  dataset.close(name);
}

std::vector<double> read_double_dataset(hid_t loc, const std::string& name) {
  const Dataset dataset = open_dataset(loc, name);
  const auto dims = dataset_dims(dataset);
  std::vector<double> values(dims.empty() ? 1 : static_cast<std::size_t>(dims[0]));
  if (values.empty()) return values;
  call("H5Dread", name, [&] {
    return H5Dread(dataset.id(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  });
  return values;
}

}  // namespace omnidp::results::h5
