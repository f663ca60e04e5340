#include "omnidp/results/live_table.hpp"

#include <span>
#include <string>
#include <system_error>

#include "omnidp/common/error.hpp"
#include "omnidp/common/file_kind.hpp"
#include "omnidp/results/hdf5.hpp"
#include "omnidp/results/table.hpp"

namespace omnidp::results {

std::filesystem::path live_table_path(const std::filesystem::path& rank_file) {
  std::filesystem::path live = rank_file;
  live += ".live";
  return live;
}

struct LiveTable::Impl {
  std::filesystem::path path;
  // The file is declared before its table, so it is destroyed after it.
  h5::File file;
  h5::Dataset table;
};

LiveTable::LiveTable(const std::filesystem::path& rank_file,
                     const std::function<void(hid_t root)>& write_attributes)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = live_table_path(rank_file);
  const std::string name = impl_->path.string();
  // A left-over table is truncated; anything else under its name (a link, a FIFO, a folder) is
  // left alone: the truncation would go through a link to its target (issue 52, class 3).
  std::error_code ec;
  const auto own = std::filesystem::symlink_status(impl_->path, ec).type();
  if (own != std::filesystem::file_type::not_found && own != std::filesystem::file_type::regular &&
      own != std::filesystem::file_type::none) {
    throw IoError(name, std::string("is ") + file_kind(own) +
                            ", not a regular file: no live table is written over it");
  }
  // SWMR needs the latest file format (rank files keep the 1.8 one); locking as for rank files
  // (output.file_locking). SWMR writing releases the lock once it has started.
  const h5::PropList fapl = h5::file_access();
  h5::call("H5Pset_libver_bounds", name,
           [&] { return H5Pset_libver_bounds(fapl.id(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST); });
  impl_->file = h5::File(h5::call("H5Fcreate", name, [&] {
    return H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id());
  }));
  write_attributes(impl_->file.id());
  impl_->table = create_requests_table(impl_->file.id(), kRequestsPath);
  // From here no object can be created; the table grows, and readers open the file.
  h5::call("H5Fstart_swmr_write", name, [&] { return H5Fstart_swmr_write(impl_->file.id()); });
}

LiveTable::~LiveTable() = default;

void LiveTable::append(const ResultRecord& record) {
  append_requests(impl_->table, std::span<const ResultRecord>(&record, 1));
  h5::call("H5Fflush", impl_->path.string(),
           [&] { return H5Fflush(impl_->file.id(), H5F_SCOPE_LOCAL); });
}

void LiveTable::remove() {
  impl_->table.close(kRequestsPath);
  impl_->file.close(impl_->path.string());
  std::error_code ec;
  std::filesystem::remove(impl_->path, ec);
  if (ec) throw IoError(impl_->path.string(), "cannot remove the live table: " + ec.message());
}

const std::filesystem::path& LiveTable::path() const noexcept { return impl_->path; }

h5::File open_live_table(const std::filesystem::path& live_file) {
  const std::string name = live_file.string();
  if (const std::string problem = regular_file_problem(live_file); !problem.empty()) {
    throw IoError(name, problem);  // HDF5's open would block on a FIFO (issue 52, class 5)
  }
  const h5::PropList fapl = h5::file_access();
  h5::call("H5Pset_libver_bounds", name,
           [&] { return H5Pset_libver_bounds(fapl.id(), H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST); });
  return h5::File(h5::call("H5Fopen", name, [&] {
    return H5Fopen(name.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl.id());
  }));
}

std::vector<ResultRecord> read_live_table(const std::filesystem::path& live_file) {
  const h5::File file = open_live_table(live_file);
  return read_requests(h5::open_dataset(file.id(), kRequestsPath));
}

}  // namespace omnidp::results
